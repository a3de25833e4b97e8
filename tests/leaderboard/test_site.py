"""The Gradio site: API endpoints through gradio_client, and a real browser through
Playwright + Debian Chromium (issue 8, acceptance 2 and 3)."""

import os
import shutil
import socket
from pathlib import Path

import pytest

from leaderboard.store import Store

from .conftest import result_row, run_archive, write_run

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(os.environ.get("WO_SCREENSHOTS", "bench/_out/screenshots"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("gradio")
    from leaderboard.site import build_app

    root = tmp_path_factory.mktemp("site")
    models = {"reference": (0.9, 0.8), "perturbed:vanish@1": (0.3, 0.6), "inferix:tiny": (0.5, 0.1)}
    db = root / "lb.sqlite"
    with Store(db) as store:
        for model, (gaming, robotics) in models.items():
            rows = [result_row(model, "g0", 0, "physics", gaming, scenario="gaming"),
                    result_row(model, "r0", 0, "physics", robotics, scenario="robotics"),
                    result_row(model, "g0", 0, "interaction", gaming / 2, scenario="gaming")]
            run = write_run(root, model, rows)
            if model == "reference":  # a run folder with videos, for the side-by-side view
                import numpy as np

                from worldolympiad.evaluator import video_storage
                from worldolympiad.video import write_video

                frames = np.zeros((8, 64, 64, 3), np.uint8)
                frames[:, 30:34, 11:13] = (220, 40, 40)  # a 2-px sprite across two 4:2:0 chroma cells
                pix_fmt, qp = video_storage({})  # stored as the evaluator stores generated videos (4:4:4)
                write_video(run / "videos" / "g0__s0.mp4", frames, 4, pix_fmt=pix_fmt, qp=qp)
                write_video(run / "references" / "g0.mp4", frames, 4)  # the evaluator's 4:2:0 copy
            store.add_run(run)
    app = build_app(db)
    port = _free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True)
    yield {"url": f"http://127.0.0.1:{port}/", "db": db, "root": root}
    app.close()


def test_api_leaderboard_filters_by_scenario_and_sorts(site):
    from gradio_client import Client

    c = Client(site["url"], verbose=False)
    allrows = c.predict("all", "Rank", "all", "smoke", "verified", api_name="/leaderboard")
    assert [r[allrows["headers"].index("Model")] for r in allrows["data"]][0] == "reference"
    rob = c.predict("robotics", "Rank", "all", "smoke", "verified", api_name="/leaderboard")
    models = [r[rob["headers"].index("Model")] for r in rob["data"]]
    assert models == ["reference", "perturbed:vanish@1", "inferix:tiny"]  # 0.8 > 0.6 > 0.1
    assert [r[0] for r in rob["data"]] == [1, 2, 3]  # robotics has physics only: all fully covered
    by_name = c.predict("all", "Model", "all", "smoke", "verified", api_name="/leaderboard")
    assert [r[1] for r in by_name["data"]] == sorted(models)
    fam = c.predict("all", "Rank", "perturbed", "smoke", "verified", api_name="/leaderboard")
    assert [r[1] for r in fam["data"]] == ["perturbed:vanish@1"]


def test_api_model_cases_and_metrics_doc(site):
    from gradio_client import Client

    c = Client(site["url"], verbose=False)
    cases = c.predict("reference", api_name="/model_cases")
    ids = {(r[0], r[2]) for r in cases["data"]}
    assert ids == {("g0", "physics"), ("r0", "physics"), ("g0", "interaction")}
    gen, ref = c.predict("reference", "g0", api_name="/case_videos")
    gen_path = gen["video"] if isinstance(gen, dict) else gen
    ref_path = ref["video"] if isinstance(ref, dict) else ref
    assert str(gen_path).endswith(".mp4") and str(ref_path).endswith(".mp4")
    doc = c.predict(api_name="/metrics_doc")
    assert "Physical" in doc and "weighted mean" in doc


def test_api_submit_rejects_hostile_and_accepts_valid(site, tmp_path):
    from gradio_client import Client, handle_file

    c = Client(site["url"], verbose=False)
    bad = tmp_path / "bad.zip"
    bad.write_bytes(run_archive(**{"../../evil.json": b"{}"}))
    before = Store(site["db"]).counts()
    status, _ = c.predict(handle_file(str(bad)), api_name="/submit")
    assert status.startswith("Rejected") and "escapes the archive" in status
    assert Store(site["db"]).counts() == before
    good = tmp_path / "good.zip"
    good.write_bytes(run_archive(model="team:api-model"))
    status, table = c.predict(handle_file(str(good)), api_name="/submit")
    assert status.startswith("Accepted") and "self-reported" in status
    row = [r for r in table["data"] if r[1].startswith("team:api-model [upload u")]
    assert row and row[0][table["headers"].index("Status")] == "self-reported"


def test_api_poisoning_hijack_and_bloat_leave_verified_rows_byte_identical(site, tmp_path):
    """Issue 59, acceptance 2, through the site's real upload endpoint."""
    import hashlib
    import json

    from gradio_client import Client, handle_file

    from leaderboard.site import dump_table

    from .conftest import MP4, zip_bytes

    def verified() -> tuple[str, str]:
        with Store(site["db"]) as s:
            return hashlib.sha256(s.verified_dump()).hexdigest(), dump_table(site["db"])

    c = Client(site["url"], verbose=False)
    before = verified()
    with Store(site["db"]) as s:
        runs = s.runs()
        victim = runs.loc[runs["model"] == "reference", "run_id"].iloc[0]
    poison = [result_row("reference", "g0", 0, "physics", 0.0), result_row("reference", "r0", 0, "physics", 0.0)]
    hijack_spec = {"model": "reference", "suite": "smoke", "tracks": ["physics"], "hash": victim}
    hijack = zip_bytes({"run_spec.json": json.dumps(hijack_spec).encode(),
                        "results.jsonl": (json.dumps(poison[0]) + "\n").encode(), "videos/g0__s0.mp4": MP4})
    wide = [dict(result_row("team:bloat", f"c{i}", 0, "physics", 0.5),
                 metrics=[{"name": f"m{j}", "raw": 0.5, "normalized": 0.5} for j in range(300)]) for i in range(200)]
    answers = []
    for name, data in (("poison", run_archive("reference", poison)), ("hijack", hijack),
                       ("bloat", run_archive("team:bloat", wide))):
        path = tmp_path / f"{name}.zip"
        path.write_bytes(data)
        answers.append(c.predict(handle_file(str(path)), api_name="/submit")[0])
    assert answers[0].startswith("Accepted (added)") and answers[1].startswith("Accepted (added)")
    assert answers[2].startswith("Rejected") and "300 metrics in one row" in answers[2]
    assert verified() == before  # the dump's hash and the verified table, byte for byte
    table = c.predict("all", "Rank", "all", "smoke", "verified", api_name="/leaderboard")
    assert [r[1] for r in table["data"]][0] == "reference"


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (make setup installs it)")
def test_site_in_a_real_browser(site, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=args, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(site["url"], wait_until="networkidle")
        table = page.locator("#table")
        table.get_by_text("inferix:tiny").first.wait_for(timeout=30_000)
        page.screenshot(path=str(SHOTS / "01_leaderboard.png"), full_page=True)

        names = ["reference", "perturbed:vanish@1", "inferix:tiny", "team:api-model"]

        def order() -> list[str]:
            text = table.inner_text()
            return sorted((n for n in names if n in text), key=text.index)

        def first_model() -> str:
            return order()[0]

        assert first_model() == "reference"

        def choose(elem_id: str, option: str) -> None:
            page.locator(f"#{elem_id} input").click()
            page.get_by_role("option", name=option, exact=True).click()

        # Filter to robotics: reference (0.8) > perturbed (0.6) > inferix (0.1)
        choose("scenario", "robotics")
        page.wait_for_function("() => document.querySelector('#table').innerText.includes('robotics')")
        assert order()[:3] == ["reference", "perturbed:vanish@1", "inferix:tiny"]
        # Sort by model name: inferix:tiny comes first alphabetically.
        choose("sort_by", "Model")
        page.wait_for_function("() => { const t = document.querySelector('#table').innerText;"
                               " return t.indexOf('inferix:tiny') < t.indexOf('perturbed:vanish@1'); }")
        assert order()[:3] == ["inferix:tiny", "perturbed:vanish@1", "reference"]
        page.screenshot(path=str(SHOTS / "02_sorted_filtered.png"), full_page=True)
        # Filter by family
        choose("family", "perturbed")
        page.wait_for_function("() => !document.querySelector('#table').innerText.includes('inferix:tiny')")
        assert "perturbed:vanish@1" in table.inner_text()

        # Model page: it opens on the first ranked model with its cases already shown (issue 58.4) ...
        page.get_by_role("tab", name="Model").click()
        page.locator("#cases").get_by_text("r0").first.wait_for(timeout=30_000)
        assert page.locator("#model input").input_value() == "reference"
        page.screenshot(path=str(SHOTS / "03a_model_tab_opens_populated.png"), full_page=True)
        # ... and picking another model, then the same one again, reloads each time.
        choose("model", "inferix:tiny")
        page.wait_for_function("() => document.querySelector('#cases').innerText.includes('0.1')")
        choose("model", "reference")
        page.wait_for_function("() => document.querySelector('#cases').innerText.includes('0.9')")
        page.locator("#cases").get_by_text("r0").first.wait_for(timeout=30_000)
        # A case row opens its videos side by side, and the browser decodes both: the generated one
        # is H.264 4:4:4 (what the evaluator stores), the reference the evaluator's 4:2:0 copy.
        page.locator("#cases").get_by_role("gridcell", name="g0", exact=True).first.click()
        for elem in ("gen_video", "ref_video"):
            page.wait_for_function(f"() => {{ const v = document.querySelector('#{elem} video');"
                                   " return v && (v.readyState >= 2 || v.error); }", timeout=30_000)
            state = page.evaluate(f"() => {{ const v = document.querySelector('#{elem} video');"
                                  " return [v.readyState, v.videoWidth, v.error && v.error.message]; }")
            assert state[0] >= 2 and state[1] == 64 and state[2] is None, (elem, state)
        # ... and shows the 2-px sprite in its colour (the reason generated videos are stored 4:4:4)
        sprite = page.evaluate("() => { const v = document.querySelector('#gen_video video');"
                               " const c = document.createElement('canvas'); c.width = 64; c.height = 64;"
                               " const g = c.getContext('2d'); g.drawImage(v, 0, 0);"
                               " return Array.from(g.getImageData(11, 31, 2, 1).data); }")
        assert all(abs(a - b) < 30 for a, b in zip(sprite[:3] + sprite[4:7], (220, 40, 40) * 2, strict=True)), sprite
        page.screenshot(path=str(SHOTS / "03_model_page.png"), full_page=True)

        # Submissions: an invalid one is rejected, a valid one accepted as self-reported.
        page.get_by_role("tab", name="Submit").click()
        bad = tmp_path / "bad.zip"
        bad.write_bytes(run_archive(**{"run/model.pkl": b"\x80\x04."}))
        page.locator("#upload input[type=file]").set_input_files(str(bad))
        page.wait_for_function("() => document.querySelector('#submit_status textarea').value.startsWith('Rejected')",
                               timeout=30_000)
        assert "not accepted" in page.locator("#submit_status textarea").input_value()
        page.screenshot(path=str(SHOTS / "04_rejected.png"), full_page=True)
        good = tmp_path / "good.zip"
        good.write_bytes(run_archive(model="team:browser-model"))
        page.reload(wait_until="networkidle")  # a fresh upload widget
        page.get_by_role("tab", name="Submit").click()
        page.locator("#upload input[type=file]").set_input_files(str(good))
        page.wait_for_function("() => document.querySelector('#submit_status textarea').value.startsWith('Accepted')",
                               timeout=30_000)
        page.wait_for_function("() => document.querySelector('#submitted').innerText.includes('team:browser-model')",
                               timeout=30_000)
        page.screenshot(path=str(SHOTS / "05_accepted.png"), full_page=True)
        # Verified and self-reported runs are two lists, never ranked together (issue 58.4).
        page.get_by_role("tab", name="Leaderboard").click()
        assert "[upload" not in table.inner_text() and "team:browser-model" not in table.inner_text()
        page.locator("#view").get_by_text("self-reported", exact=True).click()
        page.wait_for_function("() => document.querySelector('#table').innerText.includes('team:browser-model')",
                               timeout=30_000)
        text = table.inner_text()
        assert "perturbed:vanish@1" not in text and "inferix:tiny" not in text
        page.screenshot(path=str(SHOTS / "06_self_reported_apart.png"), full_page=True)
        browser.close()
    with Store(site["db"]) as store:
        runs = store.runs()
        assert list(runs.loc[runs["display"] == "team:browser-model", "verified"]) == [0]
