"""Memory (issue 15): the allocator's ``[memory]`` events, per event, per operator and per device peak.

Every figure is checked against the raw events read with gzip + json and plain-Python/NumPy
interval search (no profview code): the peak is the raw maximum of ``Total Allocated`` per device,
the per-operator bytes come from finding, for each raw event, the shortest cpu_op/user_annotation
containing it on the same thread.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from support import SHARED, loaded, raw_events, run_cli, sample
from witness import device_of, memory_raw, raw_peaks

from profview.errors import ProfviewError

TRACES = ("resnet50_train_amp.pt.trace.json.gz", "gpt2_train_bf16.pt.trace.json.gz")


def raw_bytes_by_op(events: list[dict]) -> dict[tuple[str, str], int]:
    """Bytes allocated per (innermost operator, device): the shortest host op containing each event."""
    ops: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation") and "dur" in e:
            name = re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", e["name"])
            ops[(str(e["pid"]), str(e["tid"]))].append((e["ts"], e["ts"] + e["dur"], name))
    arrays = {
        k: (np.array([s for s, _, _ in v]), np.array([t for _, t, _ in v]), [n for _, _, n in v])
        for k, v in ops.items()
    }
    out: dict[tuple[str, str], int] = defaultdict(int)
    for e in memory_raw(events):
        if e["args"]["Bytes"] <= 0:
            continue
        starts, ends, names = arrays.get((str(e["pid"]), str(e["tid"])), (np.array([]), np.array([]), []))
        inside = np.flatnonzero((starts <= e["ts"]) & (ends >= e["ts"]))
        name = names[inside[np.argmin(ends[inside] - starts[inside])]] if len(inside) else "(no operator)"
        out[(name, device_of(e["args"]))] += e["args"]["Bytes"]
    return dict(out)


@pytest.mark.parametrize("name", TRACES)
def test_memory_rows_are_the_raw_events(name: str) -> None:
    memory = loaded(name).memory()
    raw = memory_raw(raw_events(name))
    assert memory.height == len(raw)
    assert memory["bytes"].sum() == sum(e["args"]["Bytes"] for e in raw)
    assert sorted(memory["allocated_bytes"].to_list()) == sorted(e["args"]["Total Allocated"] for e in raw)
    assert memory["device"].value_counts().sort("device").rows() == sorted(
        {d: sum(1 for e in raw if device_of(e["args"]) == d) for d in {device_of(e["args"]) for e in raw}}.items()
    )
    assert (memory["ts_us"].diff().drop_nulls() >= 0).all()  # time order


@pytest.mark.parametrize(("name", "cuda_peak"), [(TRACES[0], 3_289_447_936), (TRACES[1], 13_611_741_696)])
def test_peak_is_the_raw_maximum_total_allocated(name: str, cuda_peak: int) -> None:
    peaks = loaded(name).memory_peaks()
    witness = raw_peaks(raw_events(name))
    assert dict(zip(peaks["device"], peaks["peak_allocated_bytes"], strict=True)) == witness
    assert witness["cuda:0"] == cuda_peak
    # The peak's operator: the op open on the thread when the first event reaching the peak fired.
    first = next(
        e
        for e in memory_raw(raw_events(name))
        if device_of(e["args"]) == "cuda:0" and e["args"]["Total Allocated"] == cuda_peak
    )
    row = peaks.filter(pl.col("device") == "cuda:0").row(0, named=True)
    assert row["ts_us"] + loaded(name).span_start == pytest.approx(first["ts"], abs=1e-3)
    assert row["op"] == {TRACES[0]: "aten::nll_loss_forward", TRACES[1]: "aten::_log_softmax_backward_data"}[name]


@pytest.mark.parametrize("name", TRACES)
def test_bytes_per_operator_match_interval_search(name: str) -> None:
    ops = loaded(name).memory_ops()
    mine = {(op, device): b for op, device, b in ops.select("op", "device", "allocated_bytes").rows() if b}
    assert mine == raw_bytes_by_op(raw_events(name))
    # net = allocated - freed, and the totals add up to the raw bytes
    assert (ops["net_bytes"] == ops["allocated_bytes"] - ops["freed_bytes"]).all()
    assert ops["net_bytes"].sum() == sum(e["args"]["Bytes"] for e in memory_raw(raw_events(name)))


def test_retained_bytes_are_blocks_never_freed() -> None:
    """Retained: allocations whose address is not freed later on the device (raw pairing by Addr)."""
    name = TRACES[0]
    raw = sorted(memory_raw(raw_events(name)), key=lambda e: e["ts"])
    live: dict[tuple[str, int], int] = {}
    for e in raw:
        key = (device_of(e["args"]), e["args"]["Addr"])
        if e["args"]["Bytes"] > 0:
            live[key] = e["args"]["Bytes"]
        else:
            live.pop(key, None)
    ops = loaded(name).memory_ops()
    assert ops["retained_bytes"].sum() == sum(live.values())
    assert ops["retained_bytes"].sum() > 0


def test_shared_traces_peak(tmp_path: Path) -> None:
    for name in TRACES:
        path = SHARED / "traces" / name
        if not path.exists():
            pytest.skip(f"{path} absent")
        with gzip.open(path, "rt") as fh:
            witness = raw_peaks(json.load(fh)["traceEvents"])
        out = tmp_path / f"{name}.csv"
        assert run_cli(["export", str(path), "--view", "memory_peaks", "-o", str(out), "--no-cache"]) == 0
        peaks = pl.read_csv(out)
        assert dict(zip(peaks["device"], peaks["peak_allocated_bytes"], strict=True)) == witness


def test_no_memory_events_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    profile = loaded("ddp_nccl_streams.pt.trace.json.gz")
    with pytest.raises(ProfviewError, match="profile_memory=True"):
        profile.memory()
    code = run_cli(["export", str(sample("ddp_nccl_streams.pt.trace.json.gz")), "--view", "memory", "-o", "-"])
    assert code == 2
    assert "no memory events" in capsys.readouterr().err
