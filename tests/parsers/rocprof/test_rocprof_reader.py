"""The rocprofv3 JSON reader: the kernel table per kernel symbol against the raw records counted
with the standard library (rocprof_witness), on the shared real file and on the sample cut from it;
agents as deviceProperties; calls, markers, copies and correlation on a document built in the
same layout."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from rocprof_witness import SAMPLE, SHARED_FILE, assert_traced_run_links, document, kernel_witness, traced_run, write
from support import run_cli, sample

import profview
from profview.analysis.efficiency.device_peaks import trace_device
from profview.parsers.schema import EVENT_SCHEMA, unknown_categories


def assert_kernel_table(profile: profview.Profile, witness: dict[str, tuple[int, int, int, int]]) -> None:
    """Every kernel symbol's count, total, min and max (ns as µs) as the witness counts them."""
    table = profile.kernels()
    assert table.height == len(witness)
    for row in table.iter_rows(named=True):
        count, total_ns, min_ns, max_ns = witness[row["name"]]
        assert row["calls"] == count, row["name"]
        assert row["total_us"] == pytest.approx(total_ns / 1000, abs=1e-6), row["name"]
        assert row["min_us"] == pytest.approx(min_ns / 1000, abs=1e-9), row["name"]
        assert row["max_us"] == pytest.approx(max_ns / 1000, abs=1e-9), row["name"]


def test_the_shared_run_kernel_table_equals_the_raw_dispatches(shared_dir: Path) -> None:
    assert SHARED_FILE.is_file(), f"{SHARED_FILE} is absent"
    profile = profview.load(SHARED_FILE, use_cache=False)
    assert profile.format == "rocprofv3 JSON"
    witness = kernel_witness(SHARED_FILE)
    assert len(witness) == 80 and sum(c for c, *_ in witness.values()) == 43_915  # what the file holds
    assert_kernel_table(profile, witness)


def test_the_sample_kernel_table_equals_the_raw_dispatches() -> None:
    profile = profview.load(sample(SAMPLE), use_cache=False)
    assert_kernel_table(profile, kernel_witness(sample(SAMPLE)))
    assert profile.events is not None and profile.events.schema == EVENT_SCHEMA


def test_dispatch_fields_become_kineto_columns() -> None:
    """grid is work-groups (rocprofv3's grid_size is work-items), block the work-group size,
    shared_mem the LDS bytes, device the GPU index, correlation the internal id, ts/dur in µs."""
    raw = document(sample(SAMPLE))["rocprofiler-sdk-tool"][0]
    first = raw["buffer_records"]["kernel_dispatch"][0]
    info = first["dispatch_info"]
    events = profview.load(sample(SAMPLE), use_cache=False).events
    assert events is not None
    row = events.filter(pl.col("correlation") == first["correlation_id"]["internal"]).row(0, named=True)
    grid, group = info["grid_size"], info["workgroup_size"]
    groups = [-(-grid[d] // group[d]) for d in "xyz"]
    assert row["grid"] == f"[{groups[0]}, {groups[1]}, {groups[2]}]"
    assert row["block"] == f"[{group['x']}, {group['y']}, {group['z']}]"
    assert row["shared_mem"] == info["group_segment_size"]
    assert row["ts"] == first["start_timestamp"] / 1000
    assert row["dur"] == (first["end_timestamp"] - first["start_timestamp"]) / 1000
    agent = next(a for a in raw["agents"] if a["id"]["handle"] == info["agent_id"]["handle"])
    assert row["device"] == agent["logical_node_type_id"] and row["pid"] == str(agent["logical_node_type_id"])
    assert row["stream"] == first["stream_id"]["handle"] and str(row["kind"]) == "kernel"


def test_gpu_agents_are_the_device_properties() -> None:
    raw = document(sample(SAMPLE))["rocprofiler-sdk-tool"][0]
    gpus = [a for a in raw["agents"] if a["type"] == 2]
    profile = profview.load(sample(SAMPLE), use_cache=False)
    listed = profile.metadata["deviceProperties"]
    assert [(d["id"], d["name"], d["numSms"]) for d in listed] == [
        (a["logical_node_type_id"], a["product_name"], a["cu_count"]) for a in gpus
    ]
    assert trace_device(profile.metadata, 0)[0] == "AMD Instinct MI350X"


def test_a_run_without_hip_api_says_what_it_lacks() -> None:
    profile = profview.load(sample(SAMPLE), use_cache=False)
    assert set(profile.missing) == {"launches", "ops"}
    assert "--hip-trace" in profile.missing["launches"]
    assert not profile.available("ops") and profile.available("kernels")


def test_calls_markers_copies_and_correlation(tmp_path: Path) -> None:
    """hipLaunchKernel calls link to their dispatches by the internal correlation id, so the
    roctx range around them is the kernels' operator; the copy is GPU work with its bytes."""
    doc = traced_run()
    assert_traced_run_links(profview.load(write(doc, tmp_path / "traced.json"), use_cache=False), doc)


def test_a_cached_reopen_is_the_same_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / SAMPLE
    path.write_bytes(sample(SAMPLE).read_bytes())
    fresh = profview.load(path)
    kernels = fresh.kernels()
    again = profview.load(path)
    assert again.saved is not None  # from the cache
    assert (again.format, again.missing) == (fresh.format, fresh.missing)
    assert again.kernels().equals(kernels)
    assert again.metadata["deviceProperties"] == fresh.metadata["deviceProperties"]


def test_rocprofv3_records_read_as_work_are_not_said_unread(capsys: pytest.CaptureFixture[str]) -> None:
    """A rocprofv3 record keeps its record kind as its category (``KERNEL_DISPATCH``): its kernels are
    read (as many as the document's dispatches, counted with json), so no note says otherwise."""
    path = sample(SAMPLE)
    dispatches = len(document(path)["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"])
    events = profview.load(path, use_cache=False).events
    assert events is not None
    kernels = events.filter(pl.col("kind") == "kernel")
    assert kernels.height == dispatches > 0
    assert set(kernels["cat"].cast(pl.String).to_list()) == {"KERNEL_DISPATCH"}  # not a Kineto category
    assert unknown_categories(events) == (0, [])
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    assert "were not read" not in capsys.readouterr().out
