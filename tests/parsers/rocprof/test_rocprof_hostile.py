"""Damaged rocprofv3 JSON: one line naming the file and the problem, exit 2, never a traceback;
dispatches whose kernel id kernel_symbols lacks are kept, named so, and said once."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rocprof_witness import SAMPLE, document, refused, write
from support import sample

import profview
from profview.errors import ProfviewError
from profview.parsers.rocprof.reader import read_rocprof


def plain_sample() -> bytes:
    with gzip.open(sample(SAMPLE)) as fh:
        return fh.read()



def test_a_cut_document_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = plain_sample()
    path = tmp_path / "cut.json"
    path.write_bytes(data[: len(data) // 2])
    assert "cut short" in refused(path, capsys)


def test_a_garbled_document_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = plain_sample()
    at = data.index(b'"start_timestamp":', len(data) // 2)
    path = tmp_path / "garbled.json"
    path.write_bytes(data[:at] + b'"start_timestamp":"soon"' + data[data.index(b",", at) :])
    assert "start_timestamp" in refused(path, capsys)
    syntax = tmp_path / "syntax.json"
    syntax.write_bytes(data.replace(b'"kernel_id":', b'"kernel_id"::', 1))
    assert "not valid JSON" in refused(syntax, capsys)


def test_without_kernel_symbols_no_dispatch_has_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(plain_sample())
    del doc["rocprofiler-sdk-tool"][0]["kernel_symbols"]
    line = refused(write(doc, tmp_path / "nosym.json"), capsys)
    assert "without kernel_symbols" in line and "6,000 kernel dispatches" in line


def test_kernel_ids_missing_from_kernel_symbols_are_kept_and_said(tmp_path: Path) -> None:
    doc = json.loads(plain_sample())
    process = doc["rocprofiler-sdk-tool"][0]
    dispatches = process["buffer_records"]["kernel_dispatch"]
    lost = dispatches[0]["dispatch_info"]["kernel_id"]
    process["kernel_symbols"] = [s for s in process["kernel_symbols"] if s["kernel_id"] != lost]
    profile = profview.load(write(doc, tmp_path / "fewer.json"), use_cache=False)
    count = sum(1 for d in dispatches if d["dispatch_info"]["kernel_id"] == lost)
    name = f"kernel id {lost} (not in kernel_symbols)"
    assert profile.kernels().filter(pl.col("name") == name)["calls"].to_list() == [count]
    assert sum(profile.kernels()["calls"]) == len(dispatches)  # none dropped
    said = [w for w in profile.warnings if "kernel_symbols does not hold" in w]
    assert len(said) == 1 and f"{count:,} kernel dispatches name 1 kernel ids" in said[0]


def test_ids_beyond_int64_are_unknown_not_an_overflow(tmp_path: Path) -> None:
    doc = json.loads(plain_sample())
    first = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][0]
    first["stream_id"]["handle"] = 2**64 - 1
    first["correlation_id"]["internal"] = 2**64 - 1
    events = profview.load(write(doc, tmp_path / "wide.json"), use_cache=False).events
    assert events is not None and events.height == 6000
    assert events["stream"].null_count() == 1 and events["correlation"].null_count() == 1


SMALL = json.dumps(
    {
        "rocprofiler-sdk-tool": [
            {
                "metadata": {"pid": 1},
                "agents": [document(sample(SAMPLE))["rocprofiler-sdk-tool"][0]["agents"][2]],
                "strings": {"buffer_records": [{"kind": "NONE", "operations": []}]},
                "kernel_symbols": [{"kernel_id": 1, "formatted_kernel_name": "k"}],
                "buffer_records": {
                    "kernel_dispatch": [
                        {
                            "kind": 11,
                            "operation": 2,
                            "start_timestamp": 1000,
                            "end_timestamp": 3000,
                            "correlation_id": {"internal": 1, "external": 0},
                            "dispatch_info": {"kernel_id": 1, "agent_id": {"handle": 37946}},
                        }
                    ]
                },
            }
        ]
    }
).encode()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SMALL)), st.integers(0, 40), st.binary(max_size=12))
def test_any_damage_is_a_document_or_one_error(at: int, length: int, junk: bytes) -> None:
    damaged = SMALL[:at] + junk + SMALL[at + length :]
    try:
        trace = read_rocprof(damaged, "damaged.json")
    except ProfviewError as exc:
        assert "\n" not in str(exc)
    else:
        assert trace.events.height >= 1
