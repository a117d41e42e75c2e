"""Shared test helpers: real sample traces, and the raw events read by a second, independent method.

Imported by the tests as ``from support import ...`` (the conftest beside it puts this folder on sys.path)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import profview

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SHARED = ROOT.parent / "shared"
#: The least a kernel event holds, for traces written by hand.
KERNEL = {"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "pid": 0, "tid": 7, "args": {"stream": 7}}


def run_cli(args: list[str]) -> int:
    """Run the profview command in-process; return its exit code."""
    from profview.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def fresh_python_output(script: str, *args: str, tmp_path: Path) -> str:
    """What ``script`` prints, run with ``args`` in a fresh interpreter (the only way to see what a
    run imports or how it leaves process-wide state), its cache under ``tmp_path``; it must succeed."""
    import subprocess
    import sys

    env = {"PROFVIEW_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@cache
def replay_profile(replay: Path, capture: Path | None) -> profview.Profile:
    """A graph-replay trace read without the cache, attributed through ``capture`` when given
    (once per pair in a test run: the tests only read its views)."""
    loaded = profview.load(replay, use_cache=False)
    if capture is not None:
        loaded.use_capture([str(capture)], use_cache=False)
    return loaded


def sample(name: str) -> Path:
    """Path of a file in samples/."""
    return SAMPLES / name


@cache
def raw_events(name: str) -> list[dict]:
    """The events of a sample read with the standard library (the independent check)."""
    path = sample(name)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        doc = json.load(fh)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@cache
def loaded(name: str) -> profview.Profile:
    """A sample loaded by profview (cached per test session)."""
    return profview.load(sample(name), use_cache=False)


def viewer(name: str):  # type: ignore[no-untyped-def]
    """The viewer on a sample, showing the profile parsed once per test session (:func:`loaded`)."""
    from profview.tui.app import ProfviewApp

    return ProfviewApp(str(sample(name)), no_cache=True, profile=loaded(name))
