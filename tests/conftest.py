"""Fixtures every test may use (the helpers they import live in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SHARED, sample


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
