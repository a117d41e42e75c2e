"""Profiles of tools profview does not read are named in one line with what to do, exit 2: an
XLA XPlane protobuf, a Perfetto trace (plain and gzip), a PyTorch execution trace and
rocmProfileData's RPD database (a rocprofv3 rocpd database is read; one without the tables it
needs is refused naming the first one absent).  Each file is built here by hand in its
writer's layout (the field numbers of tsl's xplane.proto and Perfetto's trace_packet.proto, the
header torch's ExecutionTraceObserver writes, the table names of rocprofiler-sdk's rocpd schema
and of RPD); an SQLite database is only read, never written or left locked."""

from __future__ import annotations

import gzip
import os
import sqlite3
from pathlib import Path

import pytest
from support import run_cli

from profview.parsers.foreign import chakra_schema, is_perfetto, xplane_name


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, wire: int, payload: bytes | int) -> bytes:
    """One protobuf field: a varint (wire 0, ``payload`` an int) or length-delimited bytes (wire 2)."""
    tag = varint(number << 3 | wire)
    if isinstance(payload, int):
        return tag + varint(payload)
    return tag + varint(len(payload)) + payload


def xspace() -> bytes:
    """XSpace{planes: [XPlane{id 1, "/device:GPU:0", a stream line}, XPlane{"/host:CPU"}], hostnames}."""
    line = field(1, 0, 14) + field(2, 2, b"Stream #14(Compute)") + field(3, 0, 1_700_000_000_000_000_000)
    gpu = field(1, 0, 1) + field(2, 2, b"/device:GPU:0") + field(3, 2, line)
    host = field(1, 0, 2) + field(2, 2, b"/host:CPU")
    return field(1, 2, gpu) + field(1, 2, host) + field(4, 2, b"node-7")


def perfetto() -> bytes:
    """Trace{packet: a track descriptor, a track event}, each with its trusted_packet_sequence_id."""
    track = field(1, 0, 12345) + field(2, 2, b"GPU 0")
    event = field(9, 0, 1) + field(11, 0, 12345) + field(23, 2, b"Cijk_Ailk_Bljk")
    first = field(8, 0, 1000) + field(10, 0, 1) + field(60, 2, track)
    second = field(8, 0, 2000) + field(10, 0, 1) + field(11, 2, event)
    return field(1, 2, first) + field(1, 2, second)


#: The header torch's ExecutionTraceObserver writes, then one node.
EXECUTION_TRACE = (
    '{\n  "schema": "1.1.1-chakra.0.0.4", "pid": 1234, "time": "2025-01-01 00:00:00", "start_ts": 12,\n'
    '  "nodes": [{"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 0,'
    ' "inputs": {"values": [], "shapes": [], "types": []}, "attrs": []}], "finish_ts": 99}'
)


def database(path: Path, statements: list[str]) -> Path:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()
    return path


UUID = "_00001111_2222_3333_4444_555566667777"
ROCPD = [
    f'CREATE TABLE "rocpd_metadata{UUID}" ("id" INTEGER PRIMARY KEY, "tag" TEXT NOT NULL, "value" TEXT NOT NULL)',
    f'CREATE TABLE "rocpd_info_agent{UUID}" ("id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL)',
    f'CREATE TABLE "rocpd_kernel_dispatch{UUID}" ("id" INTEGER PRIMARY KEY, "start" INTEGER, "end" INTEGER)',
    f'CREATE VIEW "rocpd_kernel_dispatch" AS SELECT * FROM "rocpd_kernel_dispatch{UUID}"',
]
RPD = [
    'CREATE TABLE "rocpd_api" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "pid" integer NOT NULL,'
    ' "tid" integer NOT NULL, "start" integer NOT NULL, "end" integer NOT NULL)',
    'CREATE TABLE "rocpd_op" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, "gpuId" integer NOT NULL,'
    ' "queueId" integer NOT NULL, "start" integer NOT NULL, "end" integer NOT NULL)',
]


def refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert run_cli(["summary", str(path), "--no-cache"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in err, err
    return lines[0]


def test_an_xplane_protobuf_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(xspace())
    line = refused(path, capsys)
    assert "XLA XPlane protobuf (first plane '/device:GPU:0')" in line and "create_perfetto_trace=True" in line


@pytest.mark.parametrize("compressed", [False, True])
def test_a_perfetto_trace_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], compressed: bool) -> None:
    path = tmp_path / ("run.pftrace.gz" if compressed else "run.pftrace")
    path.write_bytes(gzip.compress(perfetto()) if compressed else perfetto())
    line = refused(path, capsys)
    assert "a Perfetto protobuf trace" in line and "traceconv json" in line and "--output-format json" in line


def test_an_execution_trace_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "et.json"
    path.write_text(EXECUTION_TRACE)
    line = refused(path, capsys)
    assert "a PyTorch execution trace (schema 1.1.1-chakra.0.0.4)" in line and "torch.profiler" in line


@pytest.mark.parametrize(
    ("statements", "named"),
    # a rocpd database is read (parsers/rocprof/rocpd.py): this one lacks the tables it needs, named
    [(ROCPD, "a rocpd database without a rocpd_string table"), (RPD, "a rocmProfileData (RPD) database")],
)
def test_rocm_databases_are_named_and_left_as_they_were(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statements: list[str], named: str
) -> None:
    path = database(tmp_path / "results.db", statements)
    before = (path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(tmp_path)))
    assert named in refused(path, capsys)
    assert (path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(tmp_path))) == before
    connection = sqlite3.connect(path)  # not left locked: a writer gets in at once
    connection.execute("CREATE TABLE after_profview (x)")
    connection.commit()
    connection.close()


def test_other_sqlite_and_json_are_not_claimed(tmp_path: Path) -> None:
    """The detectors name only their own formats: a Chrome trace, JSON that merely has a
    ``schema`` key, text starting with a newline, and protobuf of another message are not theirs."""
    chrome = b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0}]}'
    for head in (chrome, b'{"schema": "v1", "rows": []}', b"\n" + b"Name  Self CPU %" * 20):
        assert chakra_schema(head) is None and not is_perfetto(head) and xplane_name(head) is None
    other_plane = field(1, 2, field(1, 0, 1) + field(2, 2, b"a plane of something else"))
    assert xplane_name(other_plane) is None and not is_perfetto(other_plane)
    assert not is_perfetto(xspace()) and xplane_name(perfetto()) is None
