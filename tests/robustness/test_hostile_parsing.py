"""Hostile JSON on both readers (issue 23, items 9 and 13): nesting of any depth and numbers out of
range in top-level metadata, each read or refused in one line, the same on the compiled scanner
and the pure-Python reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import run_cli

import profview
from profview.errors import ProfviewError
from profview.parsers.nesting import DEEP_NESTING

KERNEL = {"name": "k", "ph": "X", "cat": "kernel", "ts": 1, "dur": 2, "pid": 0, "tid": 7, "args": {"stream": 7}}


@pytest.fixture(params=["compiled", "pure"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "pure":
        monkeypatch.setenv("PROFVIEW_PURE_PYTHON", "1")
    return str(request.param)


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
