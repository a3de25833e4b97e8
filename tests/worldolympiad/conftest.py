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


@pytest.fixture(autouse=True)
def _fresh_judge_server_info():
    """``openai:`` judges share a server's /v1/models answer per process (by URL): a port the OS hands out
    again to another test's fake server must not see the previous server's model list."""
    from worldolympiad.judges import openai as openai_judge

    openai_judge._SERVER_INFO.clear()
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
