"""A trace that captures a graph (vLLM's and SGLang's capture traces): the host is busy and the
GPU idle because captured launches are recorded, not run, so no hint calls the trace CPU-bound;
the hint says how many captures, counted here from the raw JSON."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from support import SAMPLES, SHARED, run_cli

CAPTURES = (
    SAMPLES / "sglang_decode_capture_traces" / "bs_32_rank0.json.gz",
    SHARED / "traces" / "public" / "tracelens_mi300_vllm_decode_graph_capture.pt.trace.json.gz",
)


def _begun(path: Path) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        events = json.load(fh)["traceEvents"]
    return sum(1 for e in events if re.match(r"(cuda|hip|cu)StreamBeginCapture", str(e.get("name", ""))))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_a_capture_is_not_called_cpu_bound(
    path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    if not str(path).startswith(str(SAMPLES)):
        request.getfixturevalue("shared_dir")
    begun = _begun(path)
    assert begun > 0
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "CPU-bound." not in text
    assert f"inside {begun:,} graph capture(s)" in text
