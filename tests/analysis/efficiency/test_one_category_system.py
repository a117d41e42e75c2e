"""One kernel category system (issue 40, item 7): every category of the Overview's split (the
categories view) filters the kernel table with ``--category`` to the same GPU time, on compiled and
replayed traces; an Inductor kernel is its kind (``triton_poi_`` elementwise, ``triton_red_``
reduction ...) in both, never "triton" in one and "elementwise" in the other.

Second witness: the raw JSON's kernel durations summed per category of their names, read with
Python's ``re`` over the Inductor prefixes (a second regex engine).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from support import SAMPLES, SHARED, raw_events

import profview
from profview.profiles.views import by_category, view_frame

VLLM_REPLAY = SHARED / "traces" / "public" / "tracelens_mi300_vllm_decode_graph_replay.json.gz"
INDUCTOR = {"poi": "elementwise", "for": "elementwise", "red": "reduction", "per": "reduction"}


@pytest.mark.parametrize(
    "trace",
    [
        SAMPLES / "h100_compile_reduce_overhead.json.gz",
        SAMPLES / "tracelens_mi300_compile_triton.json.gz",
        SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz",
        VLLM_REPLAY,
    ],
    ids=lambda p: p.name.split(".")[0],
)
def test_the_overview_s_categories_filter_the_kernel_table(trace: Path) -> None:
    if not trace.exists():
        pytest.skip("../shared absent: the vLLM replay is not in samples/")
    profile = profview.load(trace, use_cache=False)
    kernels = view_frame(profile, "kernels")
    overview = profile.categories()
    for category, total in overview.select("category", "total_us").iter_rows():
        if category in ("memcpy", "memset"):
            continue
        assert float(by_category(kernels, category)["total_us"].sum()) == pytest.approx(total, abs=1e-6), category
    # the raw JSON: Inductor kernels by their prefix (norm names refine a reduction)
    events = raw_events(trace.name) if trace.parent == SAMPLES else _read(trace)
    raw: dict[str, float] = defaultdict(float)
    for e in events:
        found = re.match(r"triton_(poi|for|red|per)_fused_(\w*)", e["name"]) if e.get("cat") == "kernel" else None
        if found:
            norm = re.search(r"(layer|batch|group|instance|rms)_norm", found.group(2))
            kind = INDUCTOR[found.group(1)]
            raw["normalization" if norm and kind == "reduction" else kind] += e["dur"]
    assert overview.filter(overview["category"] == "triton").height == 0  # no Inductor kernel left as "triton"
    for category, us in raw.items():
        rows = by_category(kernels, category)
        inductor = rows.filter(rows["name"].str.starts_with("triton_"))
        assert float(inductor["total_us"].sum()) == pytest.approx(us, abs=1e-6)


def _read(path: Path) -> list[dict]:
    import gzip
    import json

    with gzip.open(path, "rb") as fh:
        doc = json.loads(fh.read())
    return doc["traceEvents"] if isinstance(doc, dict) else doc
