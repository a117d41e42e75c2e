"""The serving witness: the iterations of a trace counted from its raw events with the standard library.

An iteration is a ``user_annotation`` event of the given names (outermost per thread), its GPU work
the kernel, memcpy and memset events whose ``correlation`` is that of a runtime call that started
inside it, its tokens the index tensor of its first ``aten::embedding`` call."""

from __future__ import annotations

import json
import math

from support import raw_events, sample

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
VLLM = "tracelens_mi300_vllm_decode_graph_replay.json.gz"
SGLANG = "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
EAGER = "h100_decode_eager_kv.json.gz"
GRAPH = "h100_decode_cuda_graph.json.gz"
B200 = "tracelens_b200_nccl_eager_no_steps.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def raw_iterations(name: str, keep) -> list[dict]:  # type: ignore[no-untyped-def]
    """Per host annotation whose name ``keep`` accepts (outermost per thread, in time order): its name,
    range, GPU µs, kernels, graph launches, embedding tokens and the (start, duration) of the GPU
    events it launched, counted from the raw events."""
    events = raw_events(name)
    complete = [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]
    ranges = sorted(
        (e for e in complete if e.get("cat") == "user_annotation" and keep(e["name"])),
        key=lambda e: (e["ts"], -e["dur"]),
    )
    outer = [
        e
        for e in ranges
        if not any(
            o is not e
            and (o["pid"], o["tid"]) == (e["pid"], e["tid"])
            and o["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= o["ts"] + o["dur"]
            for o in ranges
        )
    ]
    calls = {
        e["args"]["correlation"]: e
        for e in complete
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    gpu = [e for e in complete if e.get("cat") in GPU_CATS]
    embeddings = sorted((e for e in complete if e.get("name") == "aten::embedding"), key=lambda e: e["ts"])
    found = []
    for it in outer:
        lo, hi = it["ts"], it["ts"] + it["dur"]
        mine = [g for g in gpu if (c := calls.get(g["args"].get("correlation"))) is not None and lo <= c["ts"] <= hi]
        first = next((e for e in embeddings if lo <= e["ts"] <= hi), None)
        found.append(
            {
                "name": it["name"],
                "ts": lo,
                "host_us": it["dur"],
                "gpu_us": sum(max(g["dur"], 0) for g in mine),
                "kernels": sum(1 for g in mine if g["cat"] == "kernel"),
                "gpu_end": max((g["ts"] + g["dur"] for g in mine), default=None),
                "graph_launches": sum(1 for c in calls.values() if "GraphLaunch" in c["name"] and lo <= c["ts"] <= hi),
                "tokens": math.prod(first["args"]["Input Dims"][1]) if first else None,
                "intervals": [(g["ts"], max(g["dur"], 0)) for g in mine],
            }
        )
    return found


def facts(name: str) -> dict:
    return json.loads(sample(name.replace(".json.gz", ".facts.json")).read_text())


def union_in(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """µs of [lo, hi) covered by the (start, duration) intervals (a plain sweep in time order, in
    µs from ``lo``: an end added up at the trace's absolute µs would round by up to 0.5 ns)."""
    busy, reach = 0.0, 0.0
    for ts, dur in sorted(intervals):
        start = ts - lo
        start, end = max(start, reach), min(start + dur, hi - lo)
        if end > start:
            busy, reach = busy + end - start, end
    return busy
