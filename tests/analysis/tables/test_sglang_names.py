"""SGLang's profiler ranges (``sglang_profiler::rmsnorm_rmsnorm2d_fwd_109``) end in a number that
changes from run to run; the tables drop it as TraceLens does (issue 40), so two runs pair.

Second witness: the raw JSON's names with the suffix cut by Python's ``re``, and a second "run"
made from the same trace with every such number changed."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import polars as pl
from support import SAMPLES

import profview
from profview.profiles.views import view_frame

CAPTURE = SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz"


def renumbered(tmp_path: Path) -> Path:
    with gzip.open(CAPTURE, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    for e in events:
        name = e.get("name", "")
        if name.startswith("sglang_profiler::"):
            e["name"] = re.sub(r"_(\d+)$", lambda m: f"_{int(m.group(1)) + 1000}", name)
    path = tmp_path / "second_run.json"
    path.write_text(json.dumps(doc))
    return path


def test_two_runs_pair_by_sglang_range_names(tmp_path: Path) -> None:
    with gzip.open(CAPTURE, "rt") as fh:
        doc = json.load(fh)
    raw = {
        re.sub(r"_\d+$", "", e["name"])
        for e in (doc["traceEvents"] if isinstance(doc, dict) else doc)
        if e.get("name", "").startswith("sglang_profiler::")
    }
    assert "sglang_profiler::rmsnorm_rmsnorm2d_fwd" in raw
    first = view_frame(profview.load(CAPTURE, use_cache=False), "ops")
    second = view_frame(profview.load(renumbered(tmp_path), use_cache=False), "ops")
    ours = set(first.filter(pl.col("name").str.starts_with("sglang_profiler::"))["name"])
    assert ours == raw
    keep = ["name", "calls", "host_total_us"]
    assert first.select(keep).sort("name").equals(second.select(keep).sort("name"))
