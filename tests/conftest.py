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


#: The quick subset (``pytest -m quick``, the README's second command): the guards, each reader's
#: contract, the trace engine, bad input, the summary, SQL, the command line and the front page, and
#: the viewer's 80x24 snapshots; each file runs in seconds on the samples alone.
QUICK = (
    "test_docstrings_say_what.py", "test_packaging.py", "test_front_page.py", "cli/test_import_hygiene.py",
    "cli/test_front_door.py", "parsers/test_reader_contract.py", "profiles/test_trace_engine.py",
    "parsers/test_layouts_and_cli.py", "robustness/test_bad_input.py",
    "query/test_query.py", "tui/test_docs_agree.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of the quick subset (``-m quick``)."""
    here = Path(__file__).resolve().parent
    quick = {here / name for name in QUICK}
    for item in items:
        if Path(item.path).resolve() in quick:
            item.add_marker(pytest.mark.quick)
