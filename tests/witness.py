"""Second witnesses: figures recomputed from the raw events with the standard library, no profview code."""

from __future__ import annotations

import collections
import gzip
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path

import orjson
from support import SAMPLES

BEFORE = SAMPLES / "hta_diff_control_a100.json.gz"


AFTER = SAMPLES / "hta_diff_test_v100.json.gz"


GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@cache
def raw(path: Path) -> list[dict]:
    with gzip.open(path) as fh:
        return orjson.loads(fh.read())["traceEvents"]


@cache
def raw_kernels(path: Path) -> dict[str, tuple[int, int]]:
    """name → (calls, total µs) of the complete ``kernel`` events (integer µs in these traces)."""
    calls: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    for e in raw(path):
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            calls[e["name"]] += 1
            total[e["name"]] += max(e["dur"], 0)
    return {name: (calls[name], total[name]) for name in calls}


DEVICE = {0: "cpu", 1: "cuda"}


def device_of(args: dict) -> str:
    name = DEVICE[args["Device Type"]]
    return f"{name}:{args['Device Id']}" if args["Device Id"] >= 0 else name


def memory_raw(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("name") == "[memory]" and e.get("ph") == "i"]


def raw_peaks(events: list[dict]) -> dict[str, int]:
    peaks: dict[str, int] = {}
    for e in memory_raw(events):
        device = device_of(e["args"])
        peaks[device] = max(peaks.get(device, -1), e["args"]["Total Allocated"])
    return peaks


def witness(events: list[dict]) -> tuple[dict[str, float], dict[str, float], float]:
    """(total per module name, self per module name, GPU time outside every module)."""
    launch = {}
    for e in events:
        runtime = e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
        if runtime and "correlation" in e.get("args", {}):
            launch.setdefault(e["args"]["correlation"], (e["pid"], e["tid"], e["ts"]))
    frames: dict[tuple, list[tuple[float, float, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "):
            frames[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"][len("nn.Module: ") :]))
    total: dict[str, float] = defaultdict(float)
    own: dict[str, float] = defaultdict(float)
    outside = 0.0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        where = launch.get(e.get("args", {}).get("correlation"))
        open_ = [] if where is None else [f for f in frames[where[:2]] if f[0] <= where[2] <= f[1]]
        if not open_:
            outside += e["dur"]
            continue
        for name in {f[2] for f in open_}:
            total[name] += e["dur"]
        own[max(open_, key=lambda f: f[0])[2]] += e["dur"]
    return dict(total), dict(own), outside


def _intervals(events: list[dict], keep: Callable[[dict], bool]) -> dict[tuple, list[dict]]:
    found: dict[tuple, list[dict]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and keep(e):
            found[(e["pid"], e["tid"])].append(e)
    return found


def _open(found: dict[tuple, list[dict]], where: tuple, ts: float) -> list[dict]:
    return [e for e in found.get(where, []) if e["ts"] <= ts <= e["ts"] + e["dur"]]


def backward_witness(events: list[dict]) -> dict[str, dict[str, float]]:
    """{"bwd_total": per module name, "bwd_self": per module name, "optimizer": {name: us},
    "passes": {"fwd"/"bwd"/"optimizer"/"other": us}, "bwd_outside": {"us": ...}}."""
    launch = {}
    for e in events:
        runtime = e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
        if runtime and "correlation" in e.get("args", {}):
            launch.setdefault(e["args"]["correlation"], ((e["pid"], e["tid"]), e["ts"]))
    modules = _intervals(events, lambda e: e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "))
    nodes = _intervals(
        events,
        lambda e: (
            e.get("cat") == "cpu_op"
            and "Sequence number" in e.get("args", {})
            and e["args"].get("Fwd thread id", 0) > 0
        ),
    )
    optimizers = _intervals(events, lambda e: e.get("cat") == "user_annotation" and e["name"].startswith("Optimizer."))
    creator: dict[int, dict] = {}
    threads: dict[int, set] = defaultdict(set)
    for e in events:
        args = e.get("args", {})
        forward_op = e.get("ph") == "X" and e.get("cat") == "cpu_op" and "Sequence number" in args
        if forward_op and args.get("Fwd thread id", 0) == 0:
            seq = args["Sequence number"]
            threads[seq].add((e["pid"], e["tid"]))
            if seq not in creator or e["ts"] >= creator[seq]["ts"]:
                creator[seq] = e
    out: dict[str, dict[str, float]] = {
        "bwd_total": defaultdict(float),
        "bwd_self": defaultdict(float),
        "optimizer": defaultdict(float),
        "passes": defaultdict(float),
        "bwd_outside": defaultdict(float),
    }
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        at = launch.get(e.get("args", {}).get("correlation"))
        if at is None:
            out["passes"]["other"] += e["dur"]
            continue
        if _open(modules, *at):
            out["passes"]["fwd"] += e["dur"]
            continue
        held = _open(nodes, *at)
        if held:
            out["passes"]["bwd"] += e["dur"]
            seq = max(held, key=lambda n: (n["ts"], -n["dur"]))["args"]["Sequence number"]
            made = creator.get(seq) if len(threads.get(seq, ())) == 1 else None
            frames = [] if made is None else _open(modules, (made["pid"], made["tid"]), made["ts"])
            if not frames:
                out["bwd_outside"]["us"] += e["dur"]
                continue
            for name in {f["name"][len("nn.Module: ") :] for f in frames}:
                out["bwd_total"][name] += e["dur"]
            out["bwd_self"][max(frames, key=lambda f: f["ts"])["name"][len("nn.Module: ") :]] += e["dur"]
            continue
        annotations = _open(optimizers, *at)
        if annotations:
            out["passes"]["optimizer"] += e["dur"]
            out["optimizer"][min(annotations, key=lambda a: a["ts"])["name"]] += e["dur"]
            continue
        out["passes"]["other"] += e["dur"]
    return out


def kernels_under(events: list[dict], op_name: str) -> list[tuple[dict, float]]:
    """Per host call named ``op_name``: (the call, µs of the GPU work launched from inside it),
    the launches found by time containment on the call's thread and their GPU events by
    ``correlation`` (no External id, no call tree)."""
    launches: dict[tuple, list[tuple[float, int]]] = defaultdict(list)
    for e in events:
        runtime = e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
        if runtime and "correlation" in e.get("args", {}):
            launches[(e["pid"], e["tid"])].append((e["ts"], e["args"]["correlation"]))
    gpu_us: dict[int, float] = defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and "correlation" in e.get("args", {}):
            gpu_us[e["args"]["correlation"]] += e["dur"]
    out = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e.get("name") == op_name:
            inside = [c for ts, c in launches[(e["pid"], e["tid"])] if e["ts"] <= ts <= e["ts"] + e["dur"]]
            out.append((e, sum(gpu_us.get(c, 0.0) for c in inside)))
    return out


@cache
def dlrm_kernels() -> dict[int, collections.Counter[str]]:
    """rank → kernel name → its complete ``kernel`` events in the DLRM 8-rank sample (tarfile + json)."""
    import json
    import tarfile

    found: dict[int, collections.Counter[str]] = {}
    with tarfile.open(SAMPLES / "param_dlrm_8rank_v100.tar.gz") as archive:
        for member in archive.getmembers():
            if member.name.endswith(".json"):
                doc = json.load(archive.extractfile(member))  # type: ignore[arg-type]
                names = collections.Counter(
                    e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"
                )
                found[doc["distributedInfo"]["rank"]] = names
    return found


def dlrm_kernel_calls() -> dict[int, int]:
    """rank → its complete ``kernel`` events in the DLRM 8-rank sample."""
    return {rank: sum(names.values()) for rank, names in dlrm_kernels().items()}
