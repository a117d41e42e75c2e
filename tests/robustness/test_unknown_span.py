"""A trace whose events have no time has no span: its summary says unknown, never a span of 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(root))
    return root


def summary(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "profview", "summary", str(path), *extra], capture_output=True, text=True, timeout=120
    )


def trace(tmp_path: Path, events: list[dict[str, object]]) -> Path:
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
                    *events,
                ]
            }
        )
    )
    return path


def test_a_trace_with_no_timed_event_says_its_span_and_gpu_busy_are_unknown(tmp_path: Path, own_cache: Path) -> None:
    path = trace(tmp_path, [{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "cat": "cpu_op"}])
    text = summary(path)
    assert text.returncode == 0, text.stderr
    assert "span unknown" in text.stdout and "GPU busy unknown" in text.stdout
    assert "span 0.000" not in text.stdout
    document = json.loads(summary(path, "--format", "json").stdout)
    assert document["overview"]["span_us"] is None and document["overview"]["gpu_busy_pct"] is None


def test_a_trace_with_one_timed_event_keeps_its_span(tmp_path: Path, own_cache: Path) -> None:
    op = {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "cat": "cpu_op", "ts": 100.0, "dur": 7.5}
    path = trace(tmp_path, [op])
    document = json.loads(summary(path, "--format", "json").stdout)
    assert document["overview"]["span_us"] == pytest.approx(op["dur"])
    assert document["overview"]["gpu_busy_pct"] == 0.0
    assert "span 7.500 us" in summary(path).stdout
