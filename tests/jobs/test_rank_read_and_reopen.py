"""What a job pays per rank: a small rank read on one thread, a re-open that reads no rank's frames.

Witnesses: each rank's events and kernel times are counted from the raw JSON with the standard
library (tarfile, gzip, json); the one-piece read is compared with the chunked read of the same
file (itself fuzzed against the pure reader in ``tests/parsers/test_differential_fuzz.py``).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tarfile
import threading
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES

from profview.errors import ProfviewError
from profview.jobs.executors import map_ranks
from profview.jobs.job import open_job
from profview.parsers import resources
from profview.parsers.trace_file import read_trace_file
from profview.report.job_summary import job_summary_figures
from profview.store import job_summaries

DLRM = SAMPLES / "param_dlrm_8rank_v100.tar.gz"
GLOO = SAMPLES / "gloo_2rank"


def _dlrm_rank(folder: Path, rank: int) -> tuple[Path, dict]:
    """One DLRM rank as a plain JSON file (900 KB), and its document read with json."""
    with tarfile.open(DLRM) as archive:
        member = next(m for m in archive.getmembers() if m.name.split("/")[-1].startswith(f"worker{rank}_"))
        data = archive.extractfile(member).read()  # type: ignore[union-attr]
    path = folder / f"rank{rank}.json"
    path.write_bytes(data)
    return path, json.loads(data)


def test_a_small_plain_rank_is_read_on_the_calling_thread_with_the_chunked_reads_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, doc = _dlrm_rank(tmp_path, 3)
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    whole = read_trace_file(path)
    assert whole.scan is not None and len(whole.scan.parts) == 1  # one range
    frame = whole.scan.frame()
    monkeypatch.undo()
    assert started == []  # no read-ahead, scan or column threads for a rank of 900 KB
    assert frame.height == len(doc["traceEvents"])
    # The same file through small windows (the chunked read), column for column.
    chunked = read_trace_file(path, chunk_bytes=4096, window_bytes=65536)
    assert chunked.scan is not None and len(chunked.scan.parts) > 1
    assert_frame_equal(frame, chunked.scan.frame())
    assert whole.scan.metadata == chunked.scan.metadata == {
        k: v for k, v in doc.items() if k in whole.scan.metadata
    }


def _kernel_totals(folder: Path) -> dict[str, float]:
    """Kernel time per name over every rank of ``folder``, from the raw JSON."""
    totals: dict[str, float] = defaultdict(float)
    for trace in sorted(folder.glob("*.json.gz")):
        for event in json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]:
            if event.get("cat") == "kernel" and event.get("ph") == "X":
                totals[event["name"]] += float(event.get("dur", 0))
    return dict(totals)


def test_a_reopened_job_shows_its_summary_without_reading_any_ranks_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "job"
    shutil.copytree(GLOO, folder)
    with open_job(folder, workers=1) as first:
        before = job_summary_figures(first, 10)
        kernels = first.kernels()
        steps = first.summary(1).steps

    def refuse(_self: object) -> None:
        raise AssertionError("a rank's frames were read")

    monkeypatch.setattr(job_summaries.SavedFrames, "_read", refuse)
    with open_job(folder, workers=1) as again:
        after = job_summary_figures(again, 10)
        assert_frame_equal(again.kernels(), kernels)
        for name in ("ranks", "collectives", "kernels"):
            assert_frame_equal(getattr(after, name), getattr(before, name))
        assert (after.lines, after.straggler, after.backends) == (before.lines, before.straggler, before.backends)
        monkeypatch.undo()
        assert_frame_equal(again.summary(1).steps, steps)  # read when asked for
    witness = _kernel_totals(folder)
    got = dict(zip(kernels["name"].to_list(), kernels["total_us"].to_list(), strict=True))
    assert got.keys() == witness.keys()
    assert all(got[name] == pytest.approx(witness[name], abs=1e-3 * len(got)) for name in got)


def test_a_saved_job_damaged_after_it_was_opened_is_one_line_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "job"
    shutil.copytree(GLOO, folder)
    open_job(folder, workers=1).close()
    entries = list((tmp_path / "cache" / job_summaries.FOLDER).iterdir())
    assert len(entries) == 1
    with open_job(folder, workers=1) as again:
        for frame in entries[0].glob("steps-*.arrow"):
            frame.write_bytes(b"damaged")
        with pytest.raises(ProfviewError) as raised:
            again.steps()
        assert "open the job again" in str(raised.value) and "\n" not in str(raised.value)
    assert not entries[0].exists()
    with open_job(folder, workers=1) as healed:  # summarised again from the rank summaries
        assert healed.steps().height == pl.concat([s.steps for s in healed.summaries]).height > 0


def _setting(name: str) -> str | None:
    """An environment variable as a worker sees it (runs in the worker)."""
    return os.environ.get(name)


def test_a_jobs_workers_keep_the_pages_one_rank_freed_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "999")  # the user's own setting is kept
    monkeypatch.delenv(resources.KEEP_FREED_MEMORY, raising=False)
    names = ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", resources.KEEP_FREED_MEMORY]
    assert map_ranks(_setting, names, workers=2) == [str(32 * 2**20), "999", "1"]
    assert resources.KEEP_FREED_MEMORY not in os.environ  # this process's environment as it was
    trims: list[int] = []
    monkeypatch.setattr(resources, "_malloc_trim", lambda: trims.append)
    resources.give_back_freed_memory()
    monkeypatch.setenv(resources.KEEP_FREED_MEMORY, "1")
    resources.give_back_freed_memory()  # in a worker: kept for the next rank
    assert trims == [0]
