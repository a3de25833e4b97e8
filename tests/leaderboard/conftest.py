import io
import json
import zipfile
from pathlib import Path

import pytest

MP4 = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isomiso2"  # an mp4 signature; uploads are not decoded


def result_row(model, case, seed, track, score, status="ok", scenario="gaming", version="1"):
    return {"case_id": case, "model": model, "seed": seed, "track": track, "track_version": version,
            "scenario": scenario, "suite": "smoke", "status": status, "score": score,
            "metrics": [{"name": "m", "raw": score, "normalized": score, "higher_is_better": True, "version": "1",
                         "details": {}, "status": status, "reason": None if status == "ok" else "r"}],
            "coverage": {}, "artifacts": {}, "timings": {}, "errors": []}


def write_run(root: Path, model: str, rows: list[dict], suite: str = "smoke", videos: bool = True) -> Path:
    """A run directory as evaluate-model writes it; ``videos``: an (undecoded) mp4 per scored case and seed."""
    spec = {"model": model, "suite": suite, "tracks": sorted({r["track"] for r in rows}), "seeds": [0],
            "judge": "none", "options": [], "track_versions": [], "hash": f"h{abs(hash((model, suite))) % 10**10}"}
    d = root / f"{model.replace(':', '-')}__{suite}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "run_spec.json").write_text(json.dumps(spec))
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if videos:
        (d / "videos").mkdir(exist_ok=True)
        for r in rows:
            if r.get("status") == "ok" and "case_id" in r and isinstance(r.get("seed"), int):
                (d / "videos" / f"{r['case_id']}__s{r['seed']}.mp4").write_bytes(MP4)
    return d


def zip_bytes(members: dict[str, bytes], *, mode_for: dict[str, int] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode_for and name in mode_for:
                info.external_attr = mode_for[name] << 16
            zf.writestr(info, data)
    return buf.getvalue()


def run_archive(model="team:my-model", rows=None, suite="smoke", videos=True, **extra: bytes) -> bytes:
    """An upload: one run folder with its spec, rows and (by default) the videos behind them."""
    rows = rows if rows is not None else [result_row(model, f"c{i}", 0, "physics", 0.5) for i in range(3)]
    spec = {"model": model, "suite": suite, "tracks": ["physics"], "seeds": [0], "schema_version": "1.0"}
    members = {"run/run_spec.json": json.dumps(spec).encode(),
               "run/results.jsonl": "".join(json.dumps(r) + "\n" for r in rows).encode()}
    if videos:
        keys = {(r["case_id"], r["seed"]) for r in rows if isinstance(r, dict) and "case_id" in r and "seed" in r}
        members.update({f"run/videos/{c}__s{s}.mp4": MP4 for c, s in keys})
    members.update(extra)
    return zip_bytes(members)


@pytest.fixture
def runs_root(tmp_path):
    a = write_run(tmp_path, "reference", [result_row("reference", "c0", 0, "physics", 0.9),
                                          result_row("reference", "c1", 0, "physics", 0.8, scenario="robotics")])
    b = write_run(tmp_path, "perturbed:vanish@1", [result_row("perturbed:vanish@1", "c0", 0, "physics", 0.3),
                                                   result_row("perturbed:vanish@1", "c1", 0, "physics", 0.2,
                                                              scenario="robotics")])
    return tmp_path, [a, b]
