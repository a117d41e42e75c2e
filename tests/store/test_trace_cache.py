"""The parsed-frame cache: same frames on re-open, never stale, safe against broken entries."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample

import profview
from profview.parsers.schema import EVENT_SCHEMA
from profview.profiles.loading import remember_views
from profview.store import trace_cache as cache

DDP = "ddp_nccl_streams.pt.trace.json.gz"


@pytest.fixture
def trace(ddp_copy: Path) -> Path:
    return ddp_copy


def test_reopen_serves_identical_frames_from_the_cache(trace: Path) -> None:
    first = profview.load(trace)
    assert cache.lookup(str(trace), EVENT_SCHEMA) is not None
    again = profview.load(trace)
    assert again.events.equals(first.events)
    assert again.kernels().equals(first.kernels())
    assert again.ops().equals(first.ops())
    assert again.metadata == first.metadata


def test_changed_trace_is_parsed_again(trace: Path) -> None:
    profview.load(trace)
    other = sample("hta_mi250_rocm_minitoy.json.gz")
    shutil.copy(other, trace)
    os.utime(trace, ns=(1, 1))  # a different size and modification time
    assert cache.lookup(str(trace), EVENT_SCHEMA) is None
    reloaded = profview.load(trace)
    assert reloaded.kernels()["calls"].sum() == 14  # the ROCm trace's kernels, not the DDP ones
    entries = [p for p in cache.cache_root().iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1  # the stale entry was pruned


def test_broken_entry_is_ignored(trace: Path) -> None:
    profview.load(trace)
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    (entry / cache.EVENTS_FILE).write_bytes(b"not arrow")
    assert cache.lookup(str(trace), EVENT_SCHEMA) is None
    assert profview.load(trace).kernels()["calls"].sum() > 0


def test_no_cache_neither_reads_nor_writes(trace: Path) -> None:
    profview.load(trace, use_cache=False)
    assert not cache.cache_root().exists() or not any(cache.cache_root().iterdir())


def test_reopen_imports_no_parser_and_no_numpy(trace: Path) -> None:
    """A kernel table from the cache needs Polars alone (what keeps a re-open near 0.5 s)."""
    import subprocess
    import sys

    profview.load(trace)  # fills the cache
    probe = (
        "import sys, profview; p = profview.load(sys.argv[1]); k = p.kernels(); "
        "print(k.height, sorted(m for m in ('numpy', 'msgspec', 'profview.parsers.chrome_trace') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(trace)], capture_output=True, text=True, check=True)
    assert out.stdout.split(maxsplit=1) == [str(profview.load(trace).kernels().height), "[]\n"]


def test_reopen_reads_gpu_work_from_the_stored_model(trace: Path) -> None:
    """With a model stored, a re-open's GPU work is its GPU frame less the links (the same rows and
    columns as the events give), read without the events, NumPy or the model; a kernel table from it
    equals a fresh parse's.  Without a stored model it comes from the events, as before."""
    import subprocess
    import sys

    from profview.analysis.trace.events import gpu_work

    first = profview.load(trace)
    first.model  # noqa: B018 (linked here, then stored)
    remember_views(first, model=True)
    again = profview.load(trace)
    assert again.gpu.equals(gpu_work(profview.load(trace, use_cache=False).events))
    assert "events" not in again.__dict__ and "model" not in again.__dict__
    probe = (
        "import sys, profview; p = profview.load(sys.argv[1]); k = p.kernels(by_shape=True); "
        "print(k.height, sorted(m for m in ('numpy', 'profview.analysis.trace.model') if m in sys.modules), "
        "'events' in p.__dict__, 'model' in p.__dict__)"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(trace)], capture_output=True, text=True, check=True)
    expected = profview.load(trace, use_cache=False).kernels(by_shape=True).height
    assert out.stdout.split() == [str(expected), "[]", "False", "False"]


def test_reopen_serves_saved_views_without_reading_events(trace: Path) -> None:
    """Views computed once are read back on the next open; the events stay on disk until needed."""
    first = profview.load(trace)
    expected = {"kernels": first.kernels(), "ops": first.ops(), "steps": first.steps()}
    overview = first.overview()
    remember_views(first)
    again = profview.load(trace)
    assert again.kernels().equals(expected["kernels"])
    assert again.ops().equals(expected["ops"])
    assert again.steps().equals(expected["steps"])
    assert again.overview() == overview
    assert "events" not in again.__dict__ and not again.fresh  # nothing parsed, linked or recomputed
    # A view that needs the events (one step's kernels) reads them then, and agrees with a fresh parse.
    step = again.step_numbers()[0]
    assert again.kernels(step=step).equals(profview.load(trace, use_cache=False).kernels(step=step))


def test_saved_views_are_per_setting(trace: Path) -> None:
    first = profview.load(trace)
    first.kernels()
    remember_views(first)
    entry = cache.lookup(str(trace), EVENT_SCHEMA)
    assert entry is not None
    assert entry.views({}).frame("kernels") is not None
    assert entry.views({"comm_pattern": "x"}).frame("kernels") is None


def test_events_damaged_after_lookup_are_parsed_again(trace: Path) -> None:
    profview.load(trace).kernels()
    again = profview.load(trace)  # found in the cache: events not read yet
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    (entry / cache.EVENTS_FILE).write_bytes(b"not arrow")
    assert again.events is not None
    assert again.events.height == profview.load(trace, use_cache=False).events.height


def test_stored_model_is_the_built_one_and_drill_downs_agree(trace: Path) -> None:
    """The linked model is stored beside the events; a re-open's drill-downs read it
    (no events, no linking) and give the frames a fresh parse gives; a damaged model is rebuilt."""
    import numpy as np

    first = profview.load(trace)
    built = first.model
    remember_views(first, model=True)
    again = profview.load(trace)
    stored = again.model
    assert "events" not in again.__dict__  # read from the stored model, not linked from the events
    assert stored.host.equals(built.host) and stored.gpu.equals(built.gpu)
    for links in ("parent", "op_parent", "subtree_end"):
        assert np.array_equal(getattr(stored.tree, links), getattr(built.tree, links))
    assert (stored.span_start, stored.span_end) == (built.span_start, built.span_end)
    fresh = profview.load(trace, use_cache=False)
    kernel = fresh.kernels()["name"][0]
    op = fresh.ops().filter(pl.col("kind") == "cpu_op")["name"][0]
    assert again.kernel_launches(kernel).equals(fresh.kernel_launches(kernel))
    assert again.launches(op).equals(fresh.launches(op))
    # The launches of the kernel sum to its calls in the kernel table (counted from GPU events).
    assert again.kernel_launches(kernel)["calls"].sum() == fresh.kernels()["calls"][0]
    # A re-open that only drills into a kernel reads the few model columns it needs: same frame.
    third = profview.load(trace)
    assert third.kernel_launches(kernel).equals(fresh.kernel_launches(kernel))
    assert "model" not in vars(third) and "events" not in vars(third)
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    (entry / cache.MODEL_HOST_FILE).write_bytes(b"not arrow")
    damaged = profview.load(trace)
    assert damaged.kernel_launches(kernel).equals(fresh.kernel_launches(kernel))
    assert "events" in damaged.__dict__  # rebuilt from the events


def test_plain_exports_do_not_store_the_model(trace: Path) -> None:
    first = profview.load(trace)
    first.ops()
    remember_views(first)
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    assert not (entry / cache.MODEL_FACTS_FILE).exists()


def test_launch_index_is_stored_once_and_a_reopens_launchers_read_no_host_row(trace: Path) -> None:
    """A drill-down export stores the launch index beside the model; a re-open's
    launchers read it (no host row, no events, no model) and equal a fresh parse's, kernel by
    kernel, which add up to the kernel table's calls; a damaged index is computed again."""
    first = profview.load(trace)
    kernels = first.kernels()["name"].to_list()
    out = str(trace.with_name("launchers.csv"))
    assert run_cli(["export", str(trace), "--view", "launches", "--kernel", kernels[0], "-o", out]) == 0
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    assert (entry / cache.LAUNCH_PATHS_FILE).is_file() and (entry / cache.LAUNCH_ROWS_FILE).is_file()
    fresh = profview.load(trace, use_cache=False)
    again = profview.load(trace)
    for kernel, calls in first.kernels().select("name", "calls").iter_rows():
        assert again.kernel_launches(kernel).equals(fresh.kernel_launches(kernel))
        assert again.kernel_launches(kernel)["calls"].sum() == calls
    assert again.launch_index_stored and not vars(again).keys() & {"model", "events"} and not again._partial_models
    (entry / cache.LAUNCH_PATHS_FILE).write_bytes(b"not arrow")
    damaged = profview.load(trace)
    assert damaged.kernel_launches(kernels[0]).equals(fresh.kernel_launches(kernels[0]))
    assert not damaged.launch_index_stored  # computed from the stored model's columns


def test_plain_exports_do_not_store_the_launch_index(trace: Path) -> None:
    first = profview.load(trace)
    first.kernel_launches(first.kernels()["name"][0])  # computed, not remembered by a plain export
    remember_views(first)
    (entry,) = [p for p in cache.cache_root().iterdir() if p.is_dir()]
    assert not (entry / cache.LAUNCH_PATHS_FILE).exists()
