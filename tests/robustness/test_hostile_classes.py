"""The adversary's three classes (issue 35), each a property over generated inputs, so that the
next variant is caught by its class and not only by the instance the issue names:

1. **quadratic text work**: a run of whitespace anywhere in a document, names of any length and
   character set: twice the size must cost about twice the time (:mod:`scaling`);
2. **reader disagreement**: the compiled scanner and ``PROFVIEW_PURE_PYTHON=1`` give the same
   events, metadata and warnings (or the same one-line error) whatever the order of the top-level
   keys and however much metadata comes before the events, and peak alike in memory;
3. **errors that escape the boundary**: any byte stream a server on 127.0.0.1 sends to the Dask
   probe, and any value of profview's numeric settings, is an answer or a one-line
   :class:`ProfviewError`, in bounded time, never another exception.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaling import assert_linear
from strategies import EVENT
from support import KERNEL

import profview
from profview.errors import ProfviewError

#: Few examples each: every one times two sizes, or starts a process.
FEW = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))


# -- 1. quadratic text work -------------------------------------------------------------------------

WHITESPACE = st.text(alphabet=" \t\r\n", min_size=1, max_size=4)
#: Where a run of whitespace goes: each a place JSON allows it, before, inside and after the events.
PLACES = ("before the document", "after the [", "between events", "between keys", "after the ]", "after the document")


def spaced_document(place: str, run: bytes) -> bytes:
    """A two-event trace with ``run`` at ``place``."""
    event = json.dumps(KERNEL).encode()
    spaced_event = event.replace(b'"ph":', run + b'"ph":') if place == "between keys" else event
    parts = {
        "before the document": [run, b'{"traceEvents":[', event, b",", event, b"]}"],
        "after the [": [b'{"traceEvents":[', run, event, b",", event, b"]}"],
        "between events": [b'{"traceEvents":[', event, b",", run, event, b"]}"],
        "between keys": [b'{"traceEvents":[', event, b",", spaced_event, b"]}"],
        "after the ]": [b'{"traceEvents":[', event, b",", event, run, b"]}"],
        "after the document": [b'{"traceEvents":[', event, b",", event, b"]}", run],
    }[place]
    return b"".join(parts)


@FEW
@given(place=st.sampled_from(PLACES), unit=WHITESPACE, pure=st.booleans())
def test_a_whitespace_run_anywhere_is_read_in_linear_time(place: str, unit: str, pure: bool) -> None:
    """With 4 KiB chunks and windows, as a 1 GB document meets 8 MiB ones."""
    from profview.parsers.chrome_trace import read_chrome
    from profview.parsers.trace_file import read_trace_file

    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    path = folder / f"profview-spaces-{os.getpid()}.json"

    def read(size: int) -> None:
        path.write_bytes(spaced_document(place, unit.encode() * (size // len(unit))))
        file = read_trace_file(path, compiled=not pure, chunk_bytes=4096, window_bytes=4096)
        assert read_chrome(file, chunk_bytes=4096, window_bytes=4096).events.height == 2

    try:
        assert_linear(read, 256 * 1024)
    finally:
        path.unlink(missing_ok=True)


#: Characters of names: ASCII words and the rules' own words, punctuation, other scripts, and
#: characters JSON must escape.
NAME_PIECES = st.sampled_from(
    ["a", "miopen", "nccl", "_", "conv", "gemm", " ", "::", "<", "(", "é", "ж", "漢", "\U0001f600", "\n", '"', "\\",
     "0"]
)


def linked_trace(kernel: str) -> bytes:
    """One step, one operator launching one kernel named ``kernel``."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "my::op", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 5,
         "args": {"External id": 1, "correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": 20, "dur": 8,
         "args": {"External id": 1, "correlation": 9, "stream": 7, "device": 0}},
    ]
    return json.dumps({"traceEvents": events}).encode()


@FEW
@given(pieces=st.lists(NAME_PIECES, min_size=1, max_size=4))
def test_a_name_of_any_length_and_characters_costs_linear_time(tmp_path_factory, pieces: list[str]) -> None:
    """Every view that reads names (kernels, categories, communication, operators, steps)."""
    path = tmp_path_factory.mktemp("names") / "t.json"
    unit = "".join(pieces)

    def views(size: int) -> None:
        path.write_bytes(linked_trace(unit * max(1, size // len(unit))))
        profile = profview.load(path, use_cache=False, comm_pattern="(a+)+$")
        assert profile.kernels()["calls"].to_list() == [1]
        profile.categories(), profile.communication(), profile.ops(), profile.steps()

    assert_linear(views, 16_000)


# -- 2. reader disagreement -------------------------------------------------------------------------

METADATA = {
    "schemaVersion": st.integers(0, 5),
    "deviceProperties": st.lists(st.fixed_dictionaries({"id": st.integers(0, 8), "name": st.text(max_size=12)}),
                                 max_size=3),
    "distributedInfo": st.fixed_dictionaries({"backend": st.sampled_from(["nccl", "gloo"]),
                                              "rank": st.integers(0, 3), "world_size": st.integers(0, 4)}),
    "displayTimeUnit": st.sampled_from(["ms", "ns"]),
    "traceName": st.text(max_size=10),
    "baseTimeNanoseconds": st.integers(0, 2**62),
    "padding": st.integers(0, 3).map(lambda n: "x" * (n * 30_000)),  # up to 90 KB before the events
}


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """A trace whose top-level keys come in any order, with up to 90 KB of metadata anywhere."""
    keys = draw(st.permutations([*METADATA, "traceEvents"]))
    events = [*draw(st.lists(EVENT, max_size=8)), KERNEL]
    doc = {key: (events if key == "traceEvents" else draw(METADATA[key])) for key in keys}
    return json.dumps(doc).encode()


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each reader makes of ``path``: (events, metadata, warnings), or the error's text."""
    answers: list[object] = []
    for pure in (False, True):
        if pure:
            monkeypatch.setenv("PROFVIEW_PURE_PYTHON", "1")
        else:
            monkeypatch.delenv("PROFVIEW_PURE_PYTHON", raising=False)
        try:
            profile = profview.load(path, use_cache=False)
            answers.append((profile.events.to_dicts(), profile.metadata, profile.warnings))
        except ProfviewError as exc:
            answers.append(str(exc))
    return answers


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(document=documents())
def test_both_readers_answer_alike_whatever_the_key_order(
    tmp_path_factory, monkeypatch: pytest.MonkeyPatch, document: bytes
) -> None:
    path = tmp_path_factory.mktemp("order") / "t.json"
    path.write_bytes(document)
    compiled, pure = read_both(path, monkeypatch)
    assert compiled == pure
    assert not isinstance(compiled, str)  # a valid trace, whatever its order: read, not refused


PEAK = """
import resource, sys
import profview
print(profview.load(sys.argv[1], use_cache=False).events.height, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_kib(path: Path, pure: bool) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != "PROFVIEW_PURE_PYTHON"}
    if pure:
        env["PROFVIEW_PURE_PYTHON"] = "1"
    done = subprocess.run([sys.executable, "-c", PEAK, str(path)], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    rows, peak = done.stdout.split()
    return int(rows), int(peak)


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(distinct=st.integers(300, 5000), name_length=st.integers(1, 2000))
def test_both_readers_peak_alike(tmp_path_factory, distinct: int, name_length: int) -> None:
    """Many distinct ph, cat and name values (the compiled reader once peaked 12x the pure one)."""
    events = [{"name": f"{i:x}" * max(1, name_length // 8), "ph": f"X{i}", "cat": f"c{i}", "ts": i, "dur": 1,
               "pid": 0, "tid": 7} for i in range(distinct)]
    path = tmp_path_factory.mktemp("peak") / "t.json"
    path.write_text(json.dumps({"traceEvents": [*events, KERNEL]}))
    compiled, pure = peak_kib(path, pure=False), peak_kib(path, pure=True)
    assert compiled[0] == pure[0] == distinct + 1
    assert compiled[1] < 1.5 * pure[1] + 30_000, f"compiled {compiled[1]:,} KiB, pure {pure[1]:,} KiB"


# -- 3. errors that escape the boundary -------------------------------------------------------------

#: What a Dask scheduler (distributed 2026.8) sends first: its frames' size, count, length, handshake.
HANDSHAKE = (
    b":\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00*\x00\x00\x00\x00\x00\x00\x00"
    b"\x83\xabcompression\xc0\xa6python\x93\x03\x0b\x07\xafpickle-protocol\x05"
)
STREAMS = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=64).map(lambda tail: HANDSHAKE[:8] + tail),  # a plausible size, then anything
    st.tuples(st.integers(0, len(HANDSHAKE)), st.binary(max_size=64)).map(lambda cut: HANDSHAKE[: cut[0]] + cut[1]),
    st.integers(0, 2**64 - 1).map(lambda size: size.to_bytes(8, "little")),
)


def serve_once(stream: bytes, then: str) -> tuple[socket.socket, int]:
    """A loopback server that sends ``stream`` to its first client, then ``then`` (close or silence)."""
    server = socket.create_server(("127.0.0.1", 0))

    def talk() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        try:
            conn.sendall(stream)
            if then == "close":
                conn.close()
            else:
                time.sleep(3)
                conn.close()
        except OSError:
            pass

    threading.Thread(target=talk, daemon=True).start()
    return server, server.getsockname()[1]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(stream=STREAMS, then=st.sampled_from(["close", "silence"]))
def test_any_byte_stream_from_a_dask_server_is_an_answer_or_one_line(stream: bytes, then: str) -> None:
    pytest.importorskip("distributed")
    from profview.jobs.dask_run import is_handshake, probe_dask

    server, port = serve_once(stream, then)
    address = f"tcp://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        message = probe_dask(address, "127.0.0.1", port, timeout=0.3)
        assert is_handshake(message) and "compression" in message  # only a handshake's shape passes
    except ProfviewError as exc:
        assert address in str(exc) and "\n" not in str(exc)
    finally:
        server.close()
    assert time.monotonic() - started < 5


SETTINGS_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["0", "-1", "1e9", "inf", "-inf", "nan", "1e400", "٣", " 4 ", "0x10", "4G", "1_000"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(2**70), 2**70).map(str),
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=SETTINGS_TEXT)
def test_any_value_of_a_numeric_setting_is_a_number_or_one_line(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """PROFVIEW_MEMORY_LIMIT, PROFVIEW_DASK_TIMEOUT/WORKER_WAIT and the thread settings."""
    from profview.jobs.dask_run import dask_seconds
    from profview.parsers.resources import thread_count
    from profview.parsers.source import memory_budget

    if "\x00" in value:
        return  # no environment holds a NUL
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", value)
    monkeypatch.setenv("PROFVIEW_DASK_TIMEOUT", value)
    for ask in (memory_budget, lambda: dask_seconds("PROFVIEW_DASK_TIMEOUT", 10.0)):
        try:
            answer = ask()
        except ProfviewError as exc:
            assert "\n" not in str(exc) and repr(value) in str(exc)
            continue
        number = answer[0] if isinstance(answer, tuple) else answer
        assert isinstance(number, (int, float)) and number >= 0 and number == number and number != float("inf")
    assert 0 <= thread_count(value) <= 1024
