"""Shared fixtures: a tiny suite of cases with pre-generated videos, and the test tracks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import wo_testlib  # noqa: E402


@pytest.fixture(autouse=True)
def _test_tracks():
    wo_testlib.register_test_tracks()
    yield


@pytest.fixture
def videos_suite(tmp_path):
    """Three good cases with videos in ``videos/`` and a suite file; returns (suite_path, videos_dir)."""
    from worldolympiad.video import write_video

    vids = tmp_path / "videos"
    vids.mkdir()
    cases = [wo_testlib.case_dict(f"case{i}") for i in range(3)]
    for c in cases:
        write_video(vids / f"{c['id']}.mp4", wo_testlib.frames_for(c["id"]), 8)
    suite = wo_testlib.write_suite(tmp_path / "suite.json", cases)
    return suite, vids
