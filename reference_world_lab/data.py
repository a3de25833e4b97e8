"""Training clips from folders written by ``worldolympiad scenarios render``.

Only the on-disk layout is used (``inferix`` imports none of the benchmark packages)::

    ROOT/suite.json            {"cases": ["cases/<id>.json", ...]}
    ROOT/cases/<id>.json       id, scenario, fps, num_frames, resolution [H, W], prompt,
                               chunks [{frame_start, frame_end, caption, action}], reference
    ROOT/videos/<id>.mp4       the reference video (decoded with PyAV)
    ROOT/ground_truth/<id>.npz ``masks`` [T, H, W] object ids (0 = background), read only for
                               ``train.object_share`` (the case's ``metadata.ground_truth_files``)

Each video is decoded once, resized (OpenCV area filter, as ``LoadedModel.encode_image`` does)
to the pixel grid the engine will use for that case's resolution and content (a bundle's
``content_grids``: a 64 x 64 Atari render trains at the 96 x 72 grid the model serves it at), and
kept as uint8. A clip
is one clean prefix frame followed by ``blocks_per_clip`` blocks of ``block_frames`` frames::

    frames   [ p | b0 b0 | b1 b1 | b2 b2 | b3 b3 ]      p = clean prefix (the first frame / context)
    actions  [a0 | a0 a0 | a1 a1 | a2 a2 | a3 a3 ]      a_k = action of the chunk holding b_k's first frame
    caption  caption of the chunk holding b0's first frame (dropped with caption_dropout)

(the engine likewise commits the prefix with block 0's action and switches a block's action
only at block starts). Clips of one batch share a grid; a batch's videos are drawn with the
configured per-scenario weights.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from inferix.bundle import generator_keys
from inferix.registry import ActionVocab, with_camera_delta

if TYPE_CHECKING:
    import torch

    from reference_world_lab.config import ActionsConfig, DataConfig

logger = logging.getLogger(__name__)

__all__ = ["Clip", "ClipDataset", "VideoRecord", "read_cases", "read_video_rgb"]


def read_video_rgb(path: str | Path) -> np.ndarray:
    """All frames of a video file as ``uint8 [T, H, W, 3]`` RGB: PyAV, or OpenCV's FFmpeg where PyAV
    is not installed (a GPU image that ships torch and OpenCV but not PyAV can train without it).

    Raises:
        ValueError: the file has no decodable frame.
    """
    try:
        import av
    except ImportError:
        import cv2

        cap = cv2.VideoCapture(str(path))
        frames = []
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
        cap.release()
    else:
        with av.open(str(path)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    if not frames:
        raise ValueError(f"video {str(path)!r} has no frames")
    return np.stack(frames)


def read_cases(root: str | Path) -> list[tuple[dict[str, Any], Path]]:
    """``(case dict, case file)`` of every case listed in ``ROOT/suite.json``.

    Raises:
        FileNotFoundError: ``suite.json`` is missing (the message says how to make one).
    """
    r = Path(root).expanduser()
    suite = r / "suite.json"
    if not suite.is_file():
        raise FileNotFoundError(f"{str(r)!r} has no suite.json: render training data with "
                                f"`worldolympiad scenarios render SUITE {r}`")
    out = []
    for rel in json.loads(suite.read_text()).get("cases", []):
        p = r / rel
        out.append((json.loads(p.read_text()), p))
    return out


def _weight_keys(v: VideoRecord) -> list[str]:
    """``data.weights`` keys that apply to ``v``, most specific first: generator (``mechanics.bounce``),
    its family (``mechanics``), scenario (``realworld``)."""
    return [*generator_keys(v.generator), v.scenario]


def _first_pose(case: dict[str, Any]) -> Any:
    """The case camera's first camera-to-world pose (4x4), or None when the case has none."""
    traj = (case.get("camera") or {}).get("trajectory") or []
    return traj[0] if len(traj) else None


def _action_name(action: Any) -> str | None:
    if isinstance(action, dict):
        action = action.get("name", action.get("action"))
    return None if action is None else str(action)


@dataclass
class VideoRecord:
    """One decoded training video.

    Attributes:
        case_id: the case id.
        scenario: scenario family (``gaming``...).
        frames: ``uint8 [T, H, W, 3]`` at the model grid.
        action_ids: ``int64 [T]`` model action id of the chunk holding each frame.
        captions: caption of the chunk holding each frame.
        latents: ``float32 [T, C, h, w]`` codec latents of ``frames`` once
            :meth:`ClipDataset.encode_latents` ran (a learned codec is frozen while the DiT trains,
            so every frame is encoded once instead of every step).
        generator: the scenario generator that rendered it (``gaming.atari_pong``...; the case's
            ``metadata.generator``), empty when the case does not say.
        objects: ``uint8 [T, H, W]`` share of each pixel covered by a ground-truth object, 0-255,
            at the model grid (``None``: not read, or the render has no masks).
    """

    case_id: str
    scenario: str
    frames: np.ndarray
    action_ids: np.ndarray
    captions: list[str]
    latents: np.ndarray | None = None
    generator: str = ""
    objects: np.ndarray | None = None

    @property
    def hw(self) -> tuple[int, int]:
        return int(self.frames.shape[1]), int(self.frames.shape[2])

    @property
    def content(self) -> str:
        """What the video shows, for per-content reports: its generator, else its scenario."""
        return self.generator or self.scenario


@dataclass
class Clip:
    """A batch of clips (see the module docstring).

    Attributes:
        pixels: ``float32 [B, 3, F, H, W]`` in [-1, 1], F = 1 + blocks * block_frames (``None``
            when the clip comes from cached latents).
        actions: ``int64 [B, F]`` model action ids per frame.
        captions: one caption per row.
        case_ids: source case per row.
        starts: first frame of each clip in its video.
        latents: ``float32 [B, C, F, h, w]`` cached codec latents (see :meth:`ClipDataset.encode_latents`).
        objects: ``float32 [B, 1, F, H, W]`` share of each pixel covered by a ground-truth object
            (zeros for a row whose video has no masks; ``None`` when the dataset reads no masks).
        content_keys: per row, the ``data.weights``-style keys of its video (generator, family,
            scenario), for per-content training settings (``train.anchor_start_only``).
    """

    pixels: torch.Tensor | None
    actions: torch.Tensor
    captions: list[str]
    case_ids: list[str]
    starts: list[int]
    latents: torch.Tensor | None = None
    objects: torch.Tensor | None = None
    content_keys: list[tuple[str, ...]] = field(default_factory=list)


class ClipDataset:
    """Decoded videos of one or more rendered folders, sampled into clip batches.

    Args:
        data: the ``data`` section of the recipe.
        actions: the ``actions`` section (vocabulary + map).
        pixel_hw_for: ``(case resolution (H, W), generator name)`` -> the pixel grid the engine
            uses for that case (``lm.pixel_hw(lm.latent_hw_for(hw, content))``).
        object_masks: also read each render's ground-truth object masks (``train.object_share``).
        object_skip: ``data.weights``-style keys (generator, family, scenario) of videos whose
            masks are not read (``train.object_share_skip``).

    Raises:
        ValueError: a chunk action that neither the vocabulary nor the map knows (the message
            lists them and says where to add them), or no usable video.
    """

    def __init__(self, data: DataConfig, actions: ActionsConfig,
                 pixel_hw_for: Callable[[tuple[int, int], str | None], tuple[int, int]],
                 object_masks: bool = False, object_skip: tuple[str, ...] | list[str] = ()) -> None:
        self.data = data
        self.object_masks = object_masks
        self.object_skip = set(object_skip)
        self.vocab = list(actions.vocabulary)
        self.map = dict(actions.map)
        self.default = actions.default
        self.directional = ActionVocab(self.vocab, self.default)  # its NAME@DIRECTION lookup, as served
        self.clip_frames = 1 + data.blocks_per_clip * data.block_frames
        self.crop = data.crop  # window side in pixels, 0 = whole frames (the trainer switches it per step)
        self.videos: list[VideoRecord] = []
        unknown: dict[str, str] = {}
        for root in data.roots:
            for case, path in read_cases(root):
                if data.max_videos is not None and len(self.videos) >= data.max_videos:
                    break
                rec = self._load(case, path, pixel_hw_for, unknown)
                if rec is not None:
                    self.videos.append(rec)
        if unknown:
            raise ValueError("actions not in the model vocabulary: "
                             + ", ".join(f"{a!r} (case {c})" for a, c in sorted(unknown.items()))
                             + "; add them to actions.vocabulary or map them in actions.map of the config")
        if not self.videos:
            raise ValueError(f"no video with at least {self.clip_frames} frames under {data.roots}")
        known = {k for v in self.videos for k in _weight_keys(v)}
        unused = sorted(set(data.weights) - known)
        if unused:  # a misspelt or wrong-level key would otherwise be a silent no-op
            logger.warning("data.weights keys %s match no video (its generators, families and scenarios: %s)",
                           unused, ", ".join(sorted(known)))
        # weights multiply frame counts, so short clips get a small share at a large weight: say it
        logger.info("share of sampled clips: %s",
                    ", ".join(f"{k} {100 * v:.1f}%" for k, v in sorted(self.shares().items(), key=lambda kv: -kv[1])))
        self.groups: dict[tuple[int, int], list[int]] = {}
        for i, v in enumerate(self.videos):
            self.groups.setdefault(v.hw, []).append(i)
        logger.info("training data: %d videos, %d frames, grids %s", len(self.videos),
                    sum(len(v.frames) for v in self.videos), sorted(self.groups))
        if object_masks:
            logger.info("object masks: %d of %d videos", sum(v.objects is not None for v in self.videos),
                        len(self.videos))
            if self.object_skip - known:
                logger.warning("train.object_share_skip keys %s match no video", sorted(self.object_skip - known))

    def action_id(self, action: Any) -> int | None:
        if (i := self.directional.directional_id(action)) is not None:
            return i
        name = _action_name(action)
        if name is None:
            return self.vocab.index(self.default)
        name = self.map.get(name, name) if name not in self.vocab else name
        return self.vocab.index(name) if name in self.vocab else None

    def _load(self, case: dict[str, Any], path: Path,
              pixel_hw_for: Callable[[tuple[int, int], str | None], tuple[int, int]],
              unknown: dict[str, str]) -> VideoRecord | None:
        import cv2

        ref = case.get("reference")
        if not ref:
            logger.warning("case %s has no reference video; skipped", case.get("id"))
            return None
        frames = read_video_rgb((path.parent / ref).resolve())
        if len(frames) < self.clip_frames:
            logger.warning("case %s: %d frames < clip length %d; skipped", case["id"], len(frames), self.clip_frames)
            return None
        generator = str((case.get("metadata") or {}).get("generator", ""))
        h, w = pixel_hw_for(tuple(case.get("resolution") or frames.shape[1:3]), generator or None)
        if frames.shape[1:3] != (h, w):
            frames = np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) for f in frames])
        t = len(frames)
        ids = np.full(t, self.vocab.index(self.default), np.int64)
        caps = [""] * t
        pose = _first_pose(case)
        for ch in case.get("chunks", []):
            a = self.action_id(with_camera_delta(ch.get("action"), pose))
            if a is None:
                unknown[str(_action_name(ch.get("action")))] = case["id"]
                continue
            s, e = int(ch["frame_start"]), min(int(ch["frame_end"]), t)
            ids[s:e] = a
            caps[s:e] = [str(ch.get("caption") or case.get("prompt", ""))] * max(0, e - s)
        rec = VideoRecord(case["id"], str(case.get("scenario", "")), frames, ids, caps, generator=generator)
        if self.object_masks and not self.object_skip.intersection(_weight_keys(rec)):
            rec.objects = self._object_masks(case, path, t, (h, w))
        return rec

    @staticmethod
    def _object_masks(case: dict[str, Any], path: Path, frames: int, hw: tuple[int, int]) -> np.ndarray | None:
        """``uint8 [T, H, W]``: the share of each pixel of the model grid ``hw`` that a ground-truth
        object covers (the render's ``masks``, any id > 0, area-resized), or ``None`` (with a
        warning when the case names masks it does not deliver)."""
        import cv2

        files = (case.get("metadata") or {}).get("ground_truth_files") or {}
        if not files.get("has_masks") or not files.get("arrays"):
            return None
        arrays = (path.parent / files["arrays"]).resolve()
        try:
            with np.load(arrays) as z:
                masks = z["masks"]
        except (OSError, KeyError, ValueError) as e:
            logger.warning("case %s: no object masks in %s (%s); its clips are unweighted", case["id"], arrays, e)
            return None
        if masks.ndim != 3 or len(masks) != frames:
            logger.warning("case %s: masks of shape %s do not match its %d frames; its clips are unweighted",
                           case["id"], masks.shape, frames)
            return None
        h, w = hw
        cover = (masks > 0).astype(np.float32)
        if cover.shape[1:] != (h, w):
            cover = np.stack([cv2.resize(m, (w, h), interpolation=cv2.INTER_AREA) for m in cover])
        return np.round(np.clip(cover, 0.0, 1.0) * 255).astype(np.uint8)

    def encode_latents(self, codec: Any, batch: int = 32, progress: bool = False) -> None:
        """Encode every frame once with the (frozen) ``codec``; later batches are cut from the cache."""
        import torch
        from tqdm import tqdm

        for v in tqdm(self.videos, disable=not progress, desc="encode", unit="video"):
            out = []
            for i in range(0, len(v.frames), batch):
                x = torch.from_numpy(v.frames[i : i + batch]).permute(3, 0, 1, 2)[None].float() / 127.5 - 1.0
                out.append(codec.encode(x)[0].permute(1, 0, 2, 3).float().cpu().numpy())  # [t, C, h, w]
            v.latents = np.concatenate(out)

    # ------------------------------------------------------------------ sampling
    def shares(self) -> dict[str, float]:
        """Expected share of sampled clips per generator (``scenario`` for a video without one),
        summing to 1: a video is drawn in proportion to :meth:`_weight`, its weight times its
        length."""
        total: dict[str, float] = {}
        for i, v in enumerate(self.videos):
            total[v.content] = total.get(v.content, 0.0) + self._weight(i)
        norm = sum(total.values())
        return {k: w / norm for k, w in total.items()}

    def _weight(self, i: int) -> float:
        """Sampling weight of video ``i``: the weight of its generator, else of the generator's family,
        else of its scenario (:func:`_weight_keys`), times its length (so frames count evenly)."""
        v = self.videos[i]
        key = next((k for k in _weight_keys(v) if k in self.data.weights), None)
        return (1.0 if key is None else float(self.data.weights[key])) * len(v.frames)

    def draw_videos(self, batch_size: int, generator: torch.Generator) -> tuple[tuple[int, int], list[int]]:
        """``(grid, video indices)``: one grid group drawn by total weight, then ``batch_size`` of its
        videos (with replacement) by :meth:`_weight`."""
        import torch

        groups = sorted(self.groups)
        gw = torch.tensor([sum(self._weight(i) for i in self.groups[g]) for g in groups], dtype=torch.float64)
        g = groups[int(torch.multinomial(gw, 1, generator=generator))]
        idx = self.groups[g]
        vw = torch.tensor([self._weight(i) for i in idx], dtype=torch.float64)
        rows = torch.multinomial(vw, batch_size, replacement=True, generator=generator).tolist()
        return g, [idx[r] for r in rows]

    def _crop(self, clip: np.ndarray, stride: int, generator: torch.Generator) -> tuple[slice, slice]:
        """Rows and columns of a random ``data.crop``-pixel window of ``clip`` ``[F, H, W, C]`` (cells of
        ``stride`` pixels); the whole clip when cropping is off or the grid is no larger than the
        window. With probability ``data.crop_motion`` the window is centred on a cell drawn in
        proportion to its change over the clip (clamped inside the grid); a clip that does not
        change gets a uniform window."""
        import torch

        if not self.crop:
            return slice(None), slice(None)
        ch = min(clip.shape[1], self.crop // stride)
        cw = min(clip.shape[2], self.crop // stride)
        if self.data.crop_motion and float(torch.rand((), generator=generator)) < self.data.crop_motion:
            change = np.abs(np.diff(clip.astype(np.float32), axis=0)).sum(axis=(0, 3))  # [H, W]
            if change.sum() > 0:
                i = int(torch.multinomial(torch.from_numpy(change.ravel()).double(), 1, generator=generator))
                cy, cx = divmod(i, change.shape[1])
                y = min(max(cy - ch // 2, 0), clip.shape[1] - ch)
                x = min(max(cx - cw // 2, 0), clip.shape[2] - cw)
                return slice(y, y + ch), slice(x, x + cw)
        y = int(torch.randint(0, clip.shape[1] - ch + 1, (1,), generator=generator))
        x = int(torch.randint(0, clip.shape[2] - cw + 1, (1,), generator=generator))
        return slice(y, y + ch), slice(x, x + cw)

    def _block_actions(self, v: VideoRecord, start: int) -> np.ndarray:
        """Action ids of the clip of ``v`` at ``start``: per block, the action at the block's first
        frame; the prefix takes block 0's (as the engine commits it)."""
        bf = self.data.block_frames
        a = v.action_ids[start : start + self.clip_frames].copy()
        for k in range(self.data.blocks_per_clip):
            lo = 1 + k * bf
            a[lo : lo + bf] = a[lo]
        a[0] = a[1]
        return a

    def clip_at(self, i: int, start: int = 0) -> Clip:
        """The whole-frame clip of video ``i`` from frame ``start``, with its caption: one row, no
        randomness (checks and evaluations)."""
        import torch

        v = self.videos[i]
        if not 0 <= start <= len(v.frames) - self.clip_frames:
            raise ValueError(f"{v.case_id}: a clip of {self.clip_frames} frames cannot start at frame {start} "
                             f"of {len(v.frames)}")
        x = torch.from_numpy(v.frames[start : start + self.clip_frames]).permute(3, 0, 1, 2)[None].float() / 127.5 - 1
        objects = None
        if self.object_masks:
            objects = self._objects(v, start, slice(None), slice(None))[None, None]
        return Clip(x, torch.from_numpy(self._block_actions(v, start))[None], [v.captions[start + 1]], [v.case_id],
                    [start], objects=objects, content_keys=[tuple(_weight_keys(v))])

    def _objects(self, v: VideoRecord, start: int, rows: slice, cols: slice) -> torch.Tensor:
        """``float32 [F, h, w]`` object cover of ``v``'s clip at ``start`` in the pixel window
        ``rows`` x ``cols`` (zeros for a video without masks)."""
        import torch

        if v.objects is None:
            h, w = v.hw
            return torch.zeros(self.clip_frames, h, w)[:, rows, cols].contiguous()
        return torch.from_numpy(np.ascontiguousarray(v.objects[start : start + self.clip_frames, rows, cols])).float() / 255.0

    def sample(self, batch_size: int, generator: torch.Generator) -> Clip:
        """A batch of clips from one grid group (all randomness from ``generator``)."""
        import torch

        _, vids = self.draw_videos(batch_size, generator)
        pix, acts, caps, ids, starts, objs, keys = [], [], [], [], [], [], []
        for vi in vids:
            v = self.videos[vi]
            s = int(torch.randint(0, len(v.frames) - self.clip_frames + 1, (1,), generator=generator))
            clip = v.frames[s : s + self.clip_frames]
            a = self._block_actions(v, s)
            drop = float(torch.rand((), generator=generator)) < self.data.caption_dropout
            if v.latents is None:
                rows, cols = self._crop(clip, 1, generator)
                clip = clip[:, rows, cols]  # [F, H, W, 3]
            else:
                stride = v.frames.shape[1] // v.latents.shape[2]
                cells = v.latents[s : s + self.clip_frames].transpose(0, 2, 3, 1)
                rows, cols = self._crop(cells, stride, generator)
                clip = cells[:, rows, cols].transpose(0, 3, 1, 2)
                rows, cols = (slice(None if r.start is None else r.start * stride,
                                    None if r.stop is None else r.stop * stride) for r in (rows, cols))
            if self.object_masks:
                objs.append(self._objects(v, s, rows, cols))
            pix.append(torch.from_numpy(np.ascontiguousarray(clip)))
            acts.append(torch.from_numpy(a))
            caps.append("" if drop else v.captions[s + 1])
            ids.append(v.case_id)
            keys.append(tuple(_weight_keys(v)))
            starts.append(s)
        objects = torch.stack(objs)[:, None] if objs else None  # [B, 1, F, H, W]
        if self.videos[vids[0]].latents is not None:
            z = torch.stack(pix).permute(0, 2, 1, 3, 4).contiguous()  # [B, C, F, h, w]
            return Clip(None, torch.stack(acts), caps, ids, starts, latents=z, objects=objects, content_keys=keys)
        x = torch.stack(pix).permute(0, 4, 1, 2, 3).float() / 127.5 - 1.0  # [B, 3, F, H, W]
        return Clip(x, torch.stack(acts), caps, ids, starts, objects=objects, content_keys=keys)
