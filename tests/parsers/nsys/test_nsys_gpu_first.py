"""An export read as far as its GPU work (``open_nsys``, what an uncached open does) gives what the
whole read gives: the same GPU events, warnings, metadata and count of events, the same events
frame when a view asks for it, and a kernel table made without a runtime call or NVTX range read in
full; counts checked against plain ``sqlite3``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from nsys_witness import SAMPLE_EXPORTS, SHARED_EXPORTS, connect, export_for_test, export_path

import profview
from profview.errors import ProfviewError
from profview.parsers.nsys import reader
from profview.parsers.nsys.reader import open_nsys, read_nsys

ALL = (*SAMPLE_EXPORTS, *SHARED_EXPORTS)
AS_TEXT = pl.col(pl.Categorical).cast(pl.String)  # categories are numbered in the order met
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _sqlite_counts(path: Path) -> tuple[int, int, int]:
    """(GPU rows, runtime calls less those repeating a call's id on its thread, NVTX events kept:
    marks and ended ranges), by plain sqlite3."""
    with connect(path) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        gpu = sum(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in GPU_TABLES if table in tables)
        calls = 0
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            calls = db.execute(
                "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NULL) + "
                "(SELECT count(*) FROM (SELECT DISTINCT globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                "WHERE correlationId IS NOT NULL))"
            ).fetchone()[0]
        ranges = 0
        if "NVTX_EVENTS" in tables:
            ranges = db.execute(
                'SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34 OR (eventType IN (59, 60) AND "end" IS NOT NULL)'
            ).fetchone()[0]
    return gpu, calls, ranges


@pytest.mark.parametrize("name", ALL)
def test_the_gpu_part_is_the_whole_reads(name: str, request: pytest.FixtureRequest) -> None:
    path = export_for_test(name, request)
    whole = read_nsys(str(path))
    part = open_nsys(str(path))
    assert part.warnings == whole.warnings
    assert part.metadata == whole.metadata
    assert part.missing == whole.missing
    assert part.event_count == whole.events.height > 0
    gpu_rows = whole.events.filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"]))
    assert part.gpu.with_columns(AS_TEXT).equals(gpu_rows.with_columns(AS_TEXT), null_equal=True)
    assert part.events().with_columns(AS_TEXT).equals(whole.events.with_columns(AS_TEXT), null_equal=True)
    gpu, calls, ranges = _sqlite_counts(path)
    kinds = dict(whole.events.group_by(pl.col("kind").cast(pl.String)).len().iter_rows())
    assert part.gpu.height == gpu
    assert kinds.get("runtime", 0) + kinds.get("driver", 0) == calls
    assert sum(kinds.get(kind, 0) for kind in ("cpu_op", "user_annotation", "instant")) == ranges


@pytest.mark.parametrize("name", ALL)
def test_a_kernel_table_reads_no_host_event_in_full(
    name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = export_for_test(name, request)
    expected = profview.load(path, use_cache=False).events  # read whole, as a view that needs the events does
    assert expected is not None

    def refused(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the host events were read in full")

    monkeypatch.setattr(reader, "read_runtime", refused)
    monkeypatch.setattr(reader, "read_nvtx", refused)
    profile = profview.load(path, use_cache=False)
    table = profile.kernels()
    with connect(path) as db:
        launches = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert int(table["calls"].sum()) == launches > 0
    assert profile.event_count == expected.height
    monkeypatch.undo()
    events = profile.events  # read now that a view asks
    assert events is not None and events.with_columns(AS_TEXT).equals(expected.with_columns(AS_TEXT), null_equal=True)


def test_events_read_after_the_export_changed_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "changed.sqlite"
    shutil.copyfile(export_path("nsys_mock_rtx3080.sqlite"), copy)
    part = open_nsys(str(copy))
    with sqlite3.connect(copy) as db:
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")
        db.execute("UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = -1 WHERE rowid = (SELECT max(rowid) FROM "
                   "CUPTI_ACTIVITY_KIND_RUNTIME)")  # fmt: skip
    with pytest.raises(ProfviewError, match="changed while it was being read"):
        part.events()


def test_events_read_when_asked_are_let_go_after_the_link(tmp_path: Path) -> None:
    path = export_path("nsys_mock_rtx3080.sqlite")
    profile = profview.load(path, use_cache=False)
    assert callable(profile.events_source) and profile.reread_events is not None
    events = profile.events
    assert events is not None and events.height == profile.event_count
    profile.release_events()
    assert "events" not in vars(profile) and profile.events_source is profile.reread_events
    again = profile.events
    assert again is not None and again.with_columns(AS_TEXT).equals(events.with_columns(AS_TEXT), null_equal=True)
