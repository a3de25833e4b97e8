"""InteractionTrack end to end: metrics declared in track.yaml, per-case errors, judge rubric, CLIP."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tracks.interaction import InteractionTrack
from tracks.interaction.track import track_spec
from worldolympiad.judges import Judge, JudgeAnswer
from worldolympiad.track import EvalContext
from worldolympiad.types import Case, Video, even_chunks


def _case(actions, n=36, captions=()) -> Case:
    return Case(id="cam", scenario="realworld", fps=12.0, num_frames=n, resolution=(48, 48), prompt="a pan over a photo",
                chunks=even_chunks(n, len(actions), captions=list(captions), actions=list(actions)), tracks=("interaction",))


class FakeJudge(Judge):
    """Answers transition questions with 1 and everything else with 4 (records the prompts)."""

    name = "fake"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def ask_json(self, prompt, images, *, keys, samples=1, schema=None):
        self.prompts.append(prompt)
        assert all(im.dtype == np.uint8 and im.ndim == 3 for im in images)
        return JudgeAnswer([{"score": 1 if "transition" in prompt else 4, "reason": "ok"}] * samples)


def test_every_metric_is_declared_and_missing_inputs_are_not_applicable(synth, tmp_path):
    case = _case(["turn_left", "forward", "turn_right"])
    frames = synth.camera_video([(1.5, 0, 0), (0, 0, 0.02), (-1.5, 0, 0)])
    out = InteractionTrack().evaluate(Video(frames, 12.0), case, EvalContext(work_dir=tmp_path))
    by = {m.name: m for m in out.metrics}
    assert set(by) == set(track_spec().metrics)
    assert by["direction_accuracy"].raw == 1.0
    assert by["magnitude_error"].status == "not_applicable"  # no reference, no vocabulary speeds
    assert by["text_alignment"].status == "not_applicable" and "clip_path" in by["text_alignment"].reason
    assert by["vlm_rubric"].status == "not_applicable"
    assert by["transition_smoothness"].status == "ok"
    assert 0.0 <= out.score <= 1.0
    assert json.loads((tmp_path / "interaction.json").read_text())["following"]["chunks"][0]["action"] == "turn_left"


def test_unknown_action_is_a_clear_per_case_error(synth, tmp_path):
    case = _case(["turn_left", "moonwalk"], n=24)
    out = InteractionTrack().evaluate(Video(synth.camera_video([(1, 0, 0), (1, 0, 0)]), 12.0), case, EvalContext(work_dir=tmp_path))
    following = [m for m in out.metrics if m.name in ("direction_accuracy", "magnitude_error", "response_delay")]
    assert all(m.status == "failed" and "unknown action 'moonwalk'" in m.reason for m in following)
    assert any("moonwalk" in e and "known actions" in e for e in out.errors)
    # the rest of the track still ran, but scores nothing alone: without action following it would score a
    # video that ignores every command (a frozen video rose 0.352 -> 0.667 this way; issue 59)
    assert next(m for m in out.metrics if m.name == "transition_smoothness").status == "ok"
    assert out.score is None and "moonwalk" in out.coverage["unscored"]["reason"]


def test_vlm_rubric_goes_through_the_judge(synth, tmp_path):
    case = _case(["turn_left", "turn_right"], n=24, captions=["pan left", "pan right"])
    ctx = EvalContext(work_dir=tmp_path, judge_spec="fake")
    ctx._judge = FakeJudge()
    out = InteractionTrack().evaluate(Video(synth.camera_video([(1, 0, 0), (-1, 0, 0)]), 12.0), case, ctx)
    m = next(m for m in out.metrics if m.name == "vlm_rubric")
    # 2 chunks x (quality + text) at 4, 1 transition at 1, global consistency + text at 4
    assert m.raw == pytest.approx((6 * 4 + 1 * 1) / 7 / 5)
    assert len(ctx._judge.prompts) == 7


def test_identity_consistency_drops_when_the_agent_changes_colour(synth):
    from tracks.interaction.consistency import agent_identity_consistency
    from tracks.interaction.motion import agent_motion

    chunks = even_chunks(24, 2)
    same = synth.sprite_video([(1.0, 0.0), (0.0, 1.0)])
    swapped = np.concatenate([same[:12], synth.sprite_video([(1.0, 0.0)], color=(250, 250, 40))[:12]])
    a = agent_motion(same, None)  # the model-free blob tracker: it does not know the colour
    b = agent_motion(swapped, None)
    assert agent_identity_consistency(chunks, a.areas, a.colors)["mean"] > 0.8
    assert agent_identity_consistency(chunks, b.areas, b.colors)["mean"] < 0.1
    # with the colour known, the agent that changed colour is not found any more (at most a photo pixel
    # of a similar brightness is, far from the agent's colour): identity lost
    c = agent_motion(swapped, {"color": [40, 220, 240]})
    assert agent_identity_consistency(chunks, c.areas, c.colors)["mean"] < 0.05


def test_frame_identity_consistency_for_camera_scenes(synth):
    from tracks.interaction.consistency import identity_consistency

    chunks = even_chunks(24, 2)
    v = synth.camera_video([(0.5, 0, 0), (0.5, 0, 0)])
    tinted = v.copy()
    tinted[12:, ..., 2] = 255
    assert identity_consistency(v, chunks)["mean"] > identity_consistency(tinted, chunks)["mean"] + 0.3


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    """A random-init CLIP built from a tiny config, saved and reloaded like real local weights."""
    pytest.importorskip("transformers")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, PreTrainedTokenizerFast

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("clip")
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, **{w: i + 4 for i, w in enumerate(["pan", "left", "right", "a", "photo", "over"])}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    cfg = CLIPConfig(
        text_config={"vocab_size": len(vocab), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 16, "eos_token_id": 2, "bos_token_id": 1, "pad_token_id": 0},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=8)
    CLIPModel(cfg).save_pretrained(path)
    CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
                  tokenizer=tokenizer).save_pretrained(path)
    return path


def test_text_alignment_with_local_clip_weights(synth, tmp_path, tiny_clip):
    case = _case(["turn_left", "turn_right"], n=24, captions=["pan left", "pan right"])
    ctx = EvalContext(work_dir=tmp_path, options={"interaction.clip_path": str(tiny_clip)})
    out = InteractionTrack().evaluate(Video(synth.camera_video([(1, 0, 0), (-1, 0, 0)]), 12.0), case, ctx)
    by = {m.name: m for m in out.metrics}
    assert by["text_alignment"].status == "ok", out.errors
    assert -1.0 <= by["text_alignment"].raw <= 1.0 and set(by["text_alignment"].details["per_chunk"]) == {0, 1}
    assert "feature" in by["transition_smoothness"].details["signals"]
    assert by["identity_consistency"].details["descriptor"] == "clip"


def test_missing_clip_folder_is_reported_not_fatal(synth, tmp_path):
    case = _case(["turn_left", "turn_right"], n=24, captions=["pan left", "pan right"])
    ctx = EvalContext(work_dir=tmp_path, options={"interaction.clip_path": str(tmp_path / "nope")})
    out = InteractionTrack().evaluate(Video(synth.camera_video([(1, 0, 0), (-1, 0, 0)]), 12.0), case, ctx)
    assert any("CLIP could not be loaded" in e for e in out.errors)
    assert next(m for m in out.metrics if m.name == "text_alignment").status == "not_applicable"


def test_short_video_is_judged_on_the_frames_it_has(synth, tmp_path):
    case = _case(["turn_left", "turn_right", "turn_left"], n=36)
    frames = synth.camera_video([(1.5, 0, 0), (-1.5, 0, 0)])[:20]  # the model stopped early
    out = InteractionTrack().evaluate(Video(frames, 12.0), case, EvalContext(work_dir=tmp_path))
    following = json.loads((tmp_path / "interaction.json").read_text())["following"]["chunks"]
    assert [c["index"] for c in following] == [0, 1]
    assert next(m for m in out.metrics if m.name == "direction_accuracy").raw == 1.0


def test_identity_of_the_case_objects_is_tracked_by_colour(synth, tmp_path):
    from worldolympiad.types import PhysicsSpec

    case = Case(id="obj", scenario="robotics", fps=12.0, num_frames=24, resolution=(48, 48), tracks=("interaction",),
                chunks=even_chunks(24, 2), physics=PhysicsSpec(objects=({"name": "cube", "color": [40, 220, 240]},)))
    same = synth.sprite_video([(1.0, 0.0), (0.0, 1.0)])
    vanished = np.concatenate([same[:12], synth.sprite_video([(1.0, 0.0)], color=(250, 250, 40))[:12]])
    scores = []
    for frames in (same, vanished):
        out = InteractionTrack().evaluate(Video(frames, 12.0), case, EvalContext(work_dir=tmp_path))
        m = next(m for m in out.metrics if m.name == "identity_consistency")
        assert m.details["region"] == "objects"
        scores.append(m.raw)
    assert scores[0] > 0.8 and scores[1] < 0.05


def test_identity_calibration_divides_by_the_reference_and_caps_at_one():
    from tracks.interaction.consistency import calibrate_identity

    cal = calibrate_identity([0.9, 0.3, 0.5], [0.6, 0.6, 0.0])  # the reference lost the identity in chunk 3
    assert cal["calibration"] == "reference"
    assert cal["per_chunk"] == pytest.approx([1.0, 0.5])
    assert cal["mean"] == pytest.approx(0.75)
    assert calibrate_identity([0.4, 0.8], None) == {"per_chunk": [0.4, 0.8], "calibration": "none", "mean": pytest.approx(0.6)}
    lost = calibrate_identity([0.4], [0.0])
    assert lost["mean"] is None and "reference loses" in lost["reason"]
    with pytest.raises(ValueError, match="one reference value per chunk"):
        calibrate_identity([0.4, 0.5], [0.5])


@pytest.mark.parametrize("generator", ["gaming.maze", "gaming.atari_pong"])
def test_the_reference_keeps_its_own_identity_and_a_swap_does_not(synth, generator):
    """Scored against itself the reference is fully consistent, though its view or sprite changes.

    Uncalibrated, the maze reference scored about 0.6 here - walking down a corridor changes the
    colours on screen - and a frozen first frame 1.0, so the metric rewarded ignoring the actions.
    A video whose colours swap after the first chunk (RGB -> GBR) still loses. Pong at 128 px: at 64 px
    its paddle has 8 px, whose colour a codec takes from the background and version 10 no longer reads
    (RGB -> BGR until then: it leaves the green paddle, R = B, as it was and only tinted its edges).
    """
    case, ref = synth.game_case(generator, 0, size=128 if generator == "gaming.atari_pong" else 64)
    swapped = ref.copy()
    swapped[case.chunks[1].frame_start :] = swapped[case.chunks[1].frame_start :, ..., [1, 2, 0]]
    ctx = EvalContext(reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks))
    scores = {}
    for name, frames in (("reference", ref), ("swapped", swapped)):
        out = InteractionTrack().evaluate(Video(frames, case.fps, chunks=case.chunks), case, ctx)
        m = next(m for m in out.metrics if m.name == "identity_consistency")
        if name == "swapped" and generator == "gaming.atari_pong" and m.status == "not_applicable":
            # version 15: the recoloured paddle's hue points away from green (the likelihood vetoes a turned
            # hue), so no paddle is found after the first chunk and the video is judged still where its actions
            # ask for motion: capped at chance (version 14 followed 3 px specks and scored it 0.72)
            assert "moved in none" in (m.reason or "") and out.score is not None and out.score <= 0.5
            scores[name] = 0.0
            continue
        assert m.details["calibration"] == "reference"
        scores[name] = m.normalized
    assert scores["reference"] == 1.0
    assert scores["swapped"] < 0.8


def test_direction_accuracy_details_name_the_chance_level(synth, tmp_path):
    # the maze's 6 moves: a turn is passed by itself and the strafe that shifts the content the same way
    # (2 of 6), forward by itself alone (1 of 6)
    moves = {"forward": {"translation": [0, 0, 0.1]}, "back": {"translation": [0, 0, -0.1]},
             "strafe_left": {"translation": [-0.05, 0, 0]}, "strafe_right": {"translation": [0.05, 0, 0]},
             "turn_left": {"yaw_deg": 3.0}, "turn_right": {"yaw_deg": -3.0}}
    case = _case(["turn_left", "forward", "turn_right"])
    case.metadata["action_space"] = {"kind": "camera", "actions": moves}
    frames = synth.camera_video([(1.5, 0, 0), (0, 0, 0.02), (-1.5, 0, 0)])
    out = InteractionTrack().evaluate(Video(frames, 12.0), case, EvalContext(work_dir=tmp_path))
    acc = next(m for m in out.metrics if m.name == "direction_accuracy")
    assert acc.raw == 1.0
    assert acc.details["chance"] == pytest.approx((2 + 1 + 2) / 18)
    assert json.loads((tmp_path / "interaction.json").read_text())["following"]["chance"] == acc.details["chance"]
    # without the case's own vocabulary the default camera table of synonyms gives no chance, and says so
    out = InteractionTrack().evaluate(Video(frames, 12.0), _case(["turn_left", "forward", "turn_right"]),
                                      EvalContext(work_dir=tmp_path / "default"))
    acc = next(m for m in out.metrics if m.name == "direction_accuracy")
    assert acc.raw == 1.0 and acc.details["chance"] is None and "synonyms" in acc.details["chance_reason"]


def test_the_rubric_checks_its_0_to_5_scale_through_the_judge(tmp_path):
    """The judge's default schema allows scores 0-10; the rubric asks 0-5 and hands the judge its
    own schema, so a 7 is a rejected answer (the correction request, then no vote) rather than a
    value the rubric later throws away."""
    import pytest

    from tracks.interaction.rubric import _ask
    from worldolympiad.judges import JudgeError
    from worldolympiad.judges.base import CachedJudge

    class Scripted(CachedJudge):
        def __init__(self, answers):
            super().__init__("scripted", retries=0)
            self.answers = list(answers)

        def _generate(self, prompt, images, *, sample, greedy):
            return self.answers.pop(0)

    img = [np.zeros((8, 8, 3), np.uint8)]
    assert _ask(Scripted(['{"score": 4, "reason": "fine"}']), "rate", img, 1) == 4.0
    judge = Scripted(['{"score": 7, "reason": "great"}', '{"score": 7, "reason": "still great"}'])
    with pytest.raises(JudgeError):
        _ask(judge, "rate", img, 1)
    assert judge.calls == 2  # the answer and its one correction request


def test_the_agent_is_tracked_once_per_video(synth, monkeypatch):
    """Action following and identity consistency read one agent track of the video and one of the
    reference (session 52: identity tracked both again, the costliest step of the track done twice)."""
    from tracks.interaction import following, motion

    case, ref = synth.game_case("gaming.atari_pong", 0, size=64)
    calls = []
    real = motion.agent_motion

    def counted(frames, appearance=None, tol=None):
        calls.append(len(frames))
        return real(frames, appearance, tol)

    monkeypatch.setattr(motion, "agent_motion", counted)
    monkeypatch.setattr(following, "agent_motion", counted)
    ctx = EvalContext(reference_loader=lambda: Video(ref, case.fps, chunks=case.chunks))
    out = InteractionTrack().evaluate(Video(ref, case.fps, chunks=case.chunks), case, ctx)
    ic = next(m for m in out.metrics if m.name == "identity_consistency")
    assert ic.status == "ok" and ic.details["calibration"] == "reference"
    assert len(calls) == 2
