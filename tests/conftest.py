"""Shared fixtures: real sample traces, and the raw events read by a second, independent method."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

import profview

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SHARED = ROOT.parent / "shared"


def run_cli(args: list[str]) -> int:
    """Run the profview command in-process; return its exit code."""
    from profview.cli import main

    try:
        main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Viewer tests carry the ``tui`` marker (``-m "not tui"`` runs the engine alone)."""
    for item in items:
        if item.module is not None and item.module.__name__.startswith("test_tui"):
            item.add_marker(pytest.mark.tui)


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read or write the user's real cache."""
    import os

    os.environ["PROFVIEW_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared beside the checkout, or skip with the reason."""
    if not SHARED.is_dir():
        print(f"skipping: {SHARED} is absent (corpus tests need ../shared beside the checkout)")
        pytest.skip(f"{SHARED} is absent")
    return SHARED


@pytest.fixture
def ddp_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the DDP sample trace, with a cache folder of its own (cache and prefetch tests)."""
    import shutil

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "t.json.gz"
    shutil.copy(sample("ddp_nccl_streams.pt.trace.json.gz"), target)
    return target
