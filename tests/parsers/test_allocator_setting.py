"""Polars' allocator setting (issue 25): profview's default decay, the large-trace setting for a
trace of 512 MB of JSON or more, and a user's own setting left alone; each decided in a fresh
interpreter before Polars loads (jemalloc reads it once), as ``profview export`` starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, sample

from profview.parsers.source import ALLOCATOR_CONF, LARGE_TRACE_ALLOCATOR_CONF, LARGE_TRACE_BYTES

PROBE = """
import os, sys
import profview
from profview.profiles.prefetch import start
start(sys.argv[1], use_cache=False)
assert "polars" not in sys.modules  # decided before Polars loads
print(os.environ.get("_RJEM_MALLOC_CONF"))
"""


def setting(path: Path, **env: str) -> str:
    clean_env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], env={**clean_env, **env}, capture_output=True, text=True,
        cwd=ROOT, timeout=60, check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def large_trace(tmp_path: Path) -> Path:
    """A sparse file of LARGE_TRACE_BYTES (no disk used): only its size is looked at before the read."""
    path = tmp_path / "large.json"
    with path.open("wb") as fh:
        fh.truncate(LARGE_TRACE_BYTES)
    return path


def test_a_small_trace_keeps_the_default() -> None:
    assert setting(sample("resnet50_train_amp.pt.trace.json.gz")) == ALLOCATOR_CONF


def test_a_large_trace_gives_every_freed_page_back(large_trace: Path) -> None:
    assert setting(large_trace) == LARGE_TRACE_ALLOCATOR_CONF


def test_the_users_own_setting_wins(large_trace: Path) -> None:
    assert setting(large_trace, _RJEM_MALLOC_CONF="narenas:2") == "narenas:2"
