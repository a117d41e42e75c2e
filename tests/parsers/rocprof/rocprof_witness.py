"""rocprofv3 JSON documents read with the standard library alone (the tests' second witness), and
small documents built in rocprofv3's layout from a real file's name tables."""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from support import SHARED, run_cli, sample

SHARED_FILE = SHARED / "formats" / "rocprofv3" / "tracelens__908_results.json.gz"
SAMPLE = "rocprofv3_mi350x_train_cut.json.gz"


@cache
def document(path: Path) -> dict[str, Any]:
    """The whole document, as json reads it."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def kernel_witness(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """Per kernel symbol (``formatted_kernel_name``, rocprofv3's own name): (dispatches, total ns,
    min ns, max ns), from the raw records."""
    process = document(path)["rocprofiler-sdk-tool"][0]
    names = {s["kernel_id"]: s["formatted_kernel_name"] for s in process["kernel_symbols"]}
    spans: dict[str, list[int]] = {}
    for record in process["buffer_records"]["kernel_dispatch"]:
        name = names[record["dispatch_info"]["kernel_id"]]
        spans.setdefault(name, []).append(record["end_timestamp"] - record["start_timestamp"])
    return {name: (len(v), sum(v), min(v), max(v)) for name, v in spans.items()}


def operation(process: dict[str, Any], kind: str, name: str) -> tuple[int, int]:
    """(kind number, operation number) of ``name`` in the file's own name tables."""
    for number, entry in enumerate(process["strings"]["buffer_records"]):
        if entry["kind"] == kind:
            return number, entry["operations"].index(name)
    raise KeyError(kind)


def record(kind: tuple[int, int], start: int, end: int, corr: int, tid: int = 908, **extra: Any) -> dict[str, Any]:
    """A buffer record as rocprofv3 writes one."""
    return {
        "size": 48,
        "kind": kind[0],
        "operation": kind[1],
        "thread_id": tid,
        "correlation_id": {"internal": corr, "external": 0},
        "start_timestamp": start,
        "end_timestamp": end,
        **extra,
    }


def traced_run() -> dict[str, Any]:
    """A run recorded with ``--hip-trace --marker-trace --memory-copy-trace --rccl-trace`` in
    rocprofv3's layout: the sample's metadata, agents, name tables and two of its kernels, with
    a roctx range ``train_step`` around two ``hipLaunchKernel`` calls (correlation 101, 102), the
    kernels they enqueued, an ``ncclAllReduce`` call, and one host-to-device copy of 4096 bytes."""
    process = copy.deepcopy(document(sample(SAMPLE))["rocprofiler-sdk-tool"][0])
    buffers = process["buffer_records"]
    first, second = buffers["kernel_dispatch"][0], buffers["kernel_dispatch"][1]
    base = 10_000_000
    launch = operation(process, "HIP_RUNTIME_API", "hipLaunchKernel")
    push = operation(process, "MARKER_CORE_API", "roctxRangePushA")
    h2d = operation(process, "MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE")
    allreduce = operation(process, "RCCL_API", "ncclAllReduce")
    dispatches = []
    for corr, (template, start) in enumerate(((first, base + 2_000), (second, base + 5_000)), start=101):
        dispatch = copy.deepcopy(template)
        dispatch["correlation_id"] = {"internal": corr, "external": 0}
        dispatch["start_timestamp"], dispatch["end_timestamp"] = start, start + 1_500 + 250 * (corr - 101)
        dispatches.append(dispatch)
    buffers["kernel_dispatch"] = dispatches
    buffers["hip_api"] = [
        record(launch, base + 100, base + 900, 101),
        record(launch, base + 1_000, base + 1_800, 102),
    ]
    buffers["marker_api"] = [record(push, base, base + 3_000, 100)]
    process["strings"]["marker_api"] = [{"key": 100, "value": "train_step"}]
    buffers["rccl_api"] = [record(allreduce, base + 3_100, base + 3_900, 103)]
    agents = {a["type"]: a["id"] for a in reversed(process["agents"])}
    buffers["memory_copy"] = [
        record(h2d, base + 4_000, base + 4_400, 104, dst_agent_id=agents[2], src_agent_id=agents[1], bytes=4096)
    ]
    return {"rocprofiler-sdk-tool": [process]}


def write(doc: dict[str, Any], path: Path) -> Path:
    """``doc`` as a plain JSON file at ``path``."""
    path.write_text(json.dumps(doc))
    return path


def refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``profview summary`` prints for ``path``, which it must refuse with exit 2."""
    assert run_cli(["summary", str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and path.name in lines[0], err
    return lines[0]


def assert_traced_run_links(profile: Any, doc: dict[str, Any]) -> None:
    """The profile read from :func:`traced_run`'s document (in any of rocprofv3's outputs) links
    its calls, markers and copies as the document says: the kinds, the copy's bytes, the roctx
    range's device and host time, and both kernels launched under it by ``hipLaunchKernel``."""
    raw = doc["rocprofiler-sdk-tool"][0]
    assert not profile.missing
    events = profile.events
    assert events is not None
    kinds = dict(zip(events["name"].to_list(), events["kind"].cast(pl.String).to_list(), strict=True))
    assert kinds["hipLaunchKernel"] == "runtime" and kinds["train_step"] == "user_annotation"
    assert kinds["ncclAllReduce"] == "cpu_op" and kinds["MEMORY_COPY_HOST_TO_DEVICE"] == "memcpy"
    copy_row = events.filter(pl.col("kind") == "memcpy").row(0, named=True)
    assert (copy_row["bytes"], copy_row["device"]) == (4096, 0)
    dispatches = raw["buffer_records"]["kernel_dispatch"]
    names = {s["kernel_id"]: s["formatted_kernel_name"] for s in raw["kernel_symbols"]}
    step = profile.ops().filter(pl.col("name") == "train_step").row(0, named=True)
    device_ns = sum(d["end_timestamp"] - d["start_timestamp"] for d in dispatches)
    assert step["device_total_us"] == pytest.approx(device_ns / 1000)
    assert step["host_total_us"] == pytest.approx(3.0)  # 3,000 ns
    first = names[dispatches[0]["dispatch_info"]["kernel_id"]]
    assert {names[d["dispatch_info"]["kernel_id"]] for d in dispatches} == {first}  # one kernel, twice
    launched = profile.kernel_launches(first).row(0, named=True)
    assert (launched["op"], launched["calls"]) == ("train_step", 2)
    assert profile.launches("hipLaunchKernel").filter(pl.col("name") == first)["calls"].to_list() == [2]
