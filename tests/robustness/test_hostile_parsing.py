"""Hostile JSON on both readers (issue 23, items 9 and 13): nesting of any depth and numbers out of
range in top-level metadata, each read or refused in one line, the same on the compiled scanner
and the pure-Python reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import KERNEL, run_cli

import profview
from profview.errors import ProfviewError
from profview.parsers.nesting import DEEP_NESTING

SAMPLE_GPT2 = Path(__file__).resolve().parents[2] / "samples" / "gpt2_train_bf16.pt.trace.json.gz"


@pytest.mark.parametrize("depth", [990, 5_000, 1_000_000])
@pytest.mark.parametrize("where", ["metadata", "event"])
def test_9_deep_nesting_is_one_line_at_any_depth(tmp_path: Path, reader: str, depth: int, where: str, capsys) -> None:
    deep = "[" * depth + "]" * depth
    if where == "metadata":
        text = '{"traceEvents": ' + json.dumps([KERNEL]) + ', "x": ' + deep + "}"
    else:
        event = '{"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "args": {"a": ' + deep + "}}"
        text = '{"traceEvents": [' + event + "]}"
    path = tmp_path / "deep.json"
    path.write_text(text)
    assert run_cli(["summary", str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err == f"profview: error: {path}: {DEEP_NESTING}\n" and "JSON nested deeper than profview reads" in err


@pytest.mark.parametrize("field", ["schemaVersion", "distributedInfo", "deviceProperties"])
def test_13_an_out_of_range_number_in_metadata_is_a_missing_value(tmp_path: Path, reader: str, field: str) -> None:
    value = {"schemaVersion": "1e400", "distributedInfo": '{"rank": 0, "world_size": 1e400}',
             "deviceProperties": '[{"id": 0, "name": "H100", "totalGlobalMem": 1e400}]'}[field]
    path = tmp_path / "t.json"
    events = json.dumps([KERNEL, {**KERNEL, "ts": 5}])
    path.write_text('{"' + field + '": ' + value + ', "traceEvents": ' + events + "}")
    profile = profview.load(path, use_cache=False)
    assert profile.kernels()["calls"].to_list() == [2]
    meta = profile.metadata
    if field == "schemaVersion":
        assert "schemaVersion" not in meta
    elif field == "distributedInfo":
        assert meta["distributedInfo"] == {"rank": 0, "world_size": None}
    else:
        assert meta["deviceProperties"] == [{"id": 0, "name": "H100", "totalGlobalMem": None}]


def test_13_without_the_repair_a_plain_bad_document_is_still_refused(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": {"not": "a list"}}')
    with pytest.raises(ProfviewError, match="not a Chrome trace"):
        profview.load(path, use_cache=False)


def test_low_an_mtia_trace_says_its_device_type_is_not_supported(tmp_path: Path, capsys) -> None:
    """Kineto's MTIA categories (``mtia_runtime``, ``mtia_ccp_events``): a synthetic trace, as no
    MTIA sample is at hand; before, it read as 'no GPU work was recorded' and nothing else."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 50, "args": {}},
        {"ph": "X", "cat": "mtia_runtime", "name": "launch", "pid": 1, "tid": 1, "ts": 5, "dur": 5, "args": {}},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "mm", "pid": 0, "tid": 0, "ts": 12, "dur": 30, "args": {}},
    ]
    path = tmp_path / "mtia.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert run_cli(["summary", str(path), "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert f"profview: warning: {path}: device type MTIA is not supported: its 2 mtia_* events" in err
    assert profview.load(SAMPLE_GPT2, use_cache=False).warnings == []  # a CUDA trace: no such warning
