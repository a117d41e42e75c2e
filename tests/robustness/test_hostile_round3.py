"""Hostile input, third round (issue 35): each test re-makes its input, names the item it checks
(``test_35_<item>_``; ``low`` for the low ones) and fails on the code before its fix."""

from __future__ import annotations

import collections
import csv
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from scaling import assert_linear
from support import KERNEL, SAMPLES

import profview


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(root))
    return root


def trace_of(names: list[str]) -> bytes:
    """A trace of one kernel per name (each 2 µs), as a profiler would write it."""
    events = [{**KERNEL, "name": n, "ts": 10 * i} for i, n in enumerate(names)]
    return json.dumps({"traceEvents": events}).encode()


def test_35_1_a_trace_rewritten_in_place_during_its_first_open_is_not_cached_as_the_new_one(
    own_cache: Path, tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is rewritten (same inode) after it was read and before the cache stores it: the
    events are the old file's, so no entry may carry the new file's identity."""
    from profview.parsers import chrome_trace

    path = tmp_path / "t.json"
    path.write_bytes(trace_of(["old_kernel"] * 3))
    inode = path.stat().st_ino
    real = chrome_trace.read_chrome

    def rewritten_meanwhile(file, **kwargs):  # type: ignore[no-untyped-def]
        trace = real(file, **kwargs)
        with open(path, "r+b") as fh:  # in place: the same inode, as `cat new > t.json` does
            fh.truncate(0)
            fh.write(trace_of(["new_kernel"] * 5))
        return trace

    monkeypatch.setattr(chrome_trace, "read_chrome", rewritten_meanwhile)
    first = profview.load(path)
    assert first.kernels()["name"].to_list() == ["old_kernel"]  # what was read
    monkeypatch.setattr(chrome_trace, "read_chrome", real)
    assert path.stat().st_ino == inode
    again = profview.load(path)
    # the stdlib's reading of the file as it is now: five calls of new_kernel
    raw = json.loads(path.read_bytes())["traceEvents"]
    assert again.kernels()["name"].to_list() == sorted({e["name"] for e in raw}) == ["new_kernel"]
    assert again.kernels()["calls"].to_list() == [len(raw)] == [5]
    assert profview.load(path).kernels()["calls"].to_list() == [5]  # and the entry now stored is the new one's


def test_35_1_a_prefetched_read_of_a_file_rewritten_with_size_and_mtime_kept_is_read_again(tmp_path: Path) -> None:
    from profview.profiles import prefetch

    path = tmp_path / "t.json"
    path.write_bytes(trace_of(["aaaa"] * 3))
    before = path.stat()
    prefetch.start(str(path), use_cache=False)
    prefetch._reads[str(path.resolve())].thread.join()
    with open(path, "r+b") as fh:  # the same size and, restored, the same mtime: only ctime tells
        fh.write(trace_of(["bbbb"] * 3))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert prefetch.take(str(path)) is None
    assert profview.load(path, use_cache=False).kernels()["name"].to_list() == ["bbbb"]


def read_events(path: Path, reader: str, chunk_bytes: int) -> int:
    """Events read by the chunked readers with small chunks and windows (a small input shows what
    a large one does with 8 MiB ones)."""
    from profview.parsers.chrome_trace import read_chrome
    from profview.parsers.trace_file import read_trace_file

    file = read_trace_file(path, compiled=reader == "compiled", chunk_bytes=chunk_bytes, window_bytes=chunk_bytes)
    return read_chrome(file, chunk_bytes=chunk_bytes, window_bytes=chunk_bytes).events.height


EVENT_TEXT = json.dumps(KERNEL).encode()


@pytest.mark.parametrize("where", ["after the array's [", "between two events"])
def test_35_2_a_run_of_whitespace_is_read_in_linear_time(tmp_path: Path, reader: str, where: str) -> None:
    """``{"traceEvents":[`` and a run of spaces: each chunk re-matched the whole pending run."""
    path = tmp_path / "spaces.json"

    def read(size: int) -> None:
        run = b" \n\t\r" * (size // 4)
        if where == "between two events":
            path.write_bytes(b'{"traceEvents":[' + EVENT_TEXT + b"," + run + EVENT_TEXT + b"]}")
        else:
            path.write_bytes(b'{"traceEvents":[' + run + EVENT_TEXT + b"," + EVENT_TEXT + b"]}")
        assert read_events(path, reader, 4096) == 2  # the two events json.loads sees

    assert_linear(read, 512 * 1024)


def test_35_low_a_run_of_newlines_after_the_first_event_is_not_held_in_memory(tmp_path: Path, reader: str) -> None:
    """The pending whitespace was kept (and grown) until the next event: 400 MB of newlines peaked
    at 900 MB.  Now what is held while reading is a chunk or two, whatever the run's length."""
    import tracemalloc

    path = tmp_path / "newlines.json"
    path.write_bytes(b'{"traceEvents":[' + EVENT_TEXT + b"]}")
    assert read_events(path, reader, 2**20) == 1  # the readers' imports are not the read
    run = 32 * 2**20
    path.write_bytes(b'{"traceEvents":[' + EVENT_TEXT + b"," + b"\n" * run + EVENT_TEXT + b"]}")
    tracemalloc.start()
    try:
        assert read_events(path, reader, 2**20) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < run // 4, f"{peak:,} bytes held for a run of {run:,} newlines"


def linked_trace(kernel_names: list[str], op: str = "my::op_no_rule_knows") -> bytes:
    """One step; per kernel name, an operator launching it (cudaLaunchKernel) on stream 7."""
    events: list[dict] = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
                           "dur": 50 * len(kernel_names) + 50, "args": {}}]
    for i, kernel in enumerate(kernel_names):
        ts = 10 + 50 * i
        events += [
            {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 20,
             "args": {"External id": i + 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 2, "dur": 5,
             "args": {"External id": i + 1, "correlation": 100 + i}},
            {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + 10, "dur": 8,
             "args": {"External id": i + 1, "correlation": 100 + i, "stream": 7, "device": 0}},
        ]
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def test_35_2_a_long_kernel_name_is_categorised_in_linear_time(tmp_path: Path) -> None:
    """``miopen`` repeated (240 KB: 28 s): the rule ``miopen.*conv`` backtracked in Python's re."""
    path = tmp_path / "long.json"

    def categorise(size: int) -> None:
        path.write_bytes(linked_trace(["miopen" * (size // 6)]))
        table = profview.load(path, use_cache=False).categories()
        assert table["category"].to_list() == ["other"] and table["calls"].to_list() == [1]

    assert_linear(categorise, 12_000)


def regex_calls(run: Callable[[], object]) -> int:
    """How many times Python's ``re`` matched (``search``/``match``/``fullmatch``) during ``run``."""
    import re
    import sys

    count = 0

    def profiler(_frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event == "c_call" and isinstance(getattr(arg, "__self__", None), re.Pattern):
            count += getattr(arg, "__name__", "") in ("search", "match", "fullmatch")

    sys.setprofile(profiler)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def test_35_2_distinct_kernel_names_cost_no_regex_call_each(tmp_path: Path) -> None:
    """10^6 distinct names made 3.6 million ``re.search`` calls (48 s): the rules now run over the
    column of distinct names in Polars' engine, so the Python-level work does not grow with them."""

    def calls(count: int) -> int:
        path = tmp_path / f"distinct{count}.json"
        path.write_bytes(linked_trace([f"void kernel_{i}<float>(int)" for i in range(count)]))
        profile = profview.load(path, use_cache=False)
        profile.model  # noqa: B018 - linked before counting: only the name rules are counted
        made = regex_calls(lambda: (profile.categories(), profile.communication()))
        assert profile.categories()["kernels"].to_list() == [count]  # all distinct, all "other"
        return made

    assert calls(2_000) == calls(20)


def test_35_2_the_memory_check_counts_a_long_name_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 256 MB name peaked at 3.85 GB, 15 times itself, where the check counted 3.6 times the
    frame: under a limit between the two a long name is refused in one line, before the tables."""
    from profview.errors import ProfviewError
    from profview.parsers.source import BASE_MEMORY

    name = "x" * (8 * 2**20)
    path = tmp_path / "long.json"
    path.write_bytes(linked_trace([name]))
    limit = BASE_MEMORY + 5 * 8 * 2**20  # more than 3.6x the 8 MB frame, less than 12x
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(limit))
    with pytest.raises(ProfviewError, match=r"needs about .* of memory to load") as refused:
        profview.load(path, use_cache=False)
    assert refused.value.out_of_memory
    path.write_bytes(linked_trace([name[: 60 * 1024]] * 4))  # names of real length: checked as before
    assert profview.load(path, use_cache=False).kernels()["calls"].to_list() == [4]


def test_35_2_a_cached_long_name_is_counted_again_when_its_events_are_read(
    own_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compressed in the cache, 8 MB of one letter takes a few KB: the check after reading counts it."""
    from profview.errors import ProfviewError
    from profview.parsers.source import BASE_MEMORY

    path = tmp_path / "long.json"
    path.write_bytes(linked_trace(["x" * (8 * 2**20)]))
    profview.load(path).events  # noqa: B018 - parsed and stored
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(BASE_MEMORY + 5 * 8 * 2**20))
    reopened = profview.load(path)
    with pytest.raises(ProfviewError, match=r"needs about .* of memory to load"):
        reopened.kernels()


def test_35_9_a_comm_pattern_runs_in_linear_time(tmp_path: Path) -> None:
    """``(a+)+$`` over a kernel name of 29 letters ran past 60 s in Python's re (exponential); the
    linear engine takes as long over 24 letters as over 3."""
    path = tmp_path / "t.json"

    def classify(size: int) -> None:
        path.write_bytes(linked_trace(["a" * size + "!"]))
        frame = profview.load(path, use_cache=False, comm_pattern="(a+)+$").communication()
        assert frame["backend"].drop_nulls().len() == 0  # the name ends in "!": no match

    assert_linear(classify, 3)


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        (["--filter", "(?=gemm)"], "bad --filter regex '(?=gemm)': look-around, including look-ahead and "
         "look-behind, is not supported"),
        (["--view", "critical_path", "--what-if", "gemm(=0.5"],
         "what-if 'gemm(=0.5': bad regex (unclosed group at position 4)"),
        (["--comm-pattern", "(?<=nccl)x"], "--comm-pattern '(?<=nccl)x' is not a valid regular expression "
         "(look-around, including look-ahead and look-behind, is not supported at position 0)"),
    ],
)
def test_35_low_a_pattern_the_engine_cannot_run_is_named_with_the_engines_whole_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str], reason: str
) -> None:
    """``(?=gemm)`` was 'too large to run', a bad --what-if regex's reason was cut to 'regex parse
    error:', and a look-behind --comm-pattern (valid for Python's re) an internal error."""
    from support import run_cli, sample

    code = run_cli(["export", str(sample("gpt2_train_bf16.pt.trace.json.gz")), "-o", "-", *option])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and reason in err, err


PEAK_OF_A_READ = """
import resource, sys
import profview
profile = profview.load(sys.argv[1], use_cache=False)
print(profile.events.height, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def read_peak(path: Path, pure: bool) -> tuple[int, int]:
    """(events, peak resident KiB) of a load in a fresh interpreter, by one reader."""
    import subprocess
    import sys

    env = {**os.environ, "PROFVIEW_PURE_PYTHON": "1"} if pure else {k: v for k, v in os.environ.items()
                                                                     if k != "PROFVIEW_PURE_PYTHON"}
    done = subprocess.run([sys.executable, "-c", PEAK_OF_A_READ, str(path)], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    events, peak = done.stdout.split()
    return int(events), int(peak)


def test_35_2_many_distinct_ph_and_cat_values_cost_both_readers_alike(tmp_path: Path, monkeypatch) -> None:
    """3,000 distinct ``ph`` and ``cat`` values (300 KB): the compiled reader looked up every pair
    of them (9 million) and peaked at 1.1 GB where the pure reader took 110 MB."""
    events = [{"name": "k", "ph": f"X{i}", "cat": f"kernel{i}", "ts": i, "dur": 1, "pid": 0, "tid": 7}
              for i in range(3000)]
    path = tmp_path / "phcat.json"
    path.write_text(json.dumps({"traceEvents": [*events, KERNEL]}))
    compiled_events, compiled_peak = read_peak(path, pure=False)
    pure_events, pure_peak = read_peak(path, pure=True)
    assert compiled_events == pure_events == len(json.loads(path.read_bytes())["traceEvents"])
    assert compiled_peak < 1.5 * pure_peak, f"compiled {compiled_peak:,} KiB, pure {pure_peak:,} KiB"
    frames = []
    for pure in (False, True):
        monkeypatch.setenv("PROFVIEW_PURE_PYTHON", "1") if pure else monkeypatch.delenv("PROFVIEW_PURE_PYTHON", False)
        frames.append(profview.load(path, use_cache=False).events)
    assert frames[0].equals(frames[1])
    kinds = collections.Counter(str(kind) for kind in frames[0]["kind"].to_list())
    assert kinds == {"other": 3000, "kernel": 1}  # no ph but the last one's is one profview knows


PROFVIEW = [sys.executable, "-m", "profview"]


@pytest.mark.parametrize("setting", ["0", "-3", "abc", "٣"])
def test_35_4_a_bad_thread_setting_is_a_warning_not_a_panic(setting: str) -> None:
    """``POLARS_MAX_THREADS=0`` printed a Rust backtrace and a Python traceback (Polars panics at
    its first query); now a warning, and the summary is the one of the default setting."""
    from support import sample

    command = [*PROFVIEW, "summary", str(sample("ddp_nccl_streams.pt.trace.json.gz")), "--no-cache"]
    plain = subprocess.run(command, capture_output=True, text=True, timeout=120)
    env = {**os.environ, "POLARS_MAX_THREADS": setting}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == plain.returncode == 0
    assert done.stderr.splitlines() == [
        f"profview: warning: POLARS_MAX_THREADS={setting!r} is not a number of threads above 0: the default is used"
    ]
    assert done.stdout == plain.stdout


def test_35_4_a_panic_inside_polars_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``PanicException`` is a BaseException: the boundary let it through as a traceback."""
    import polars as pl
    from support import run_cli, sample

    from profview.profiles.trace_profile import Profile

    def panics(self: Profile) -> pl.DataFrame:
        raise pl.exceptions.PanicException("capacity overflow")

    monkeypatch.setattr(Profile, "kernels", panics)
    path = sample("ddp_nccl_streams.pt.trace.json.gz")
    assert run_cli(["summary", str(path), "--no-cache"]) == 3
    err = capsys.readouterr().err
    assert err == (f"profview: error: {path}: internal error (PanicException: capacity overflow); "
                   "PROFVIEW_DEBUG=1 shows the traceback\n")


#: What a Dask scheduler (distributed 2026.8) sends first on a connection: the 8-byte size of its
#: frames, the frame count and length, and the msgpack handshake {compression, python, pickle-protocol}.
DASK_HANDSHAKE = (
    b":\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00*\x00\x00\x00\x00\x00\x00\x00"
    b"\x83\xabcompression\xc0\xa6python\x93\x03\x0b\x07\xafpickle-protocol\x05"
)


class FakeScheduler:
    """A loopback server that answers each connection with ``greeting`` and then ``after``:
    ``silence``, ``garbage`` (64 KiB of 0xff once) or ``endless`` (bytes until the peer leaves)."""

    def __init__(self, greeting: bytes, after: str = "silence") -> None:
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.greeting, self.after = greeting, after
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn) -> None:  # type: ignore[no-untyped-def]
        try:
            conn.sendall(self.greeting)
            if self.after == "garbage":
                conn.sendall(b"\xff" * 65536)
            while self.after == "endless":
                conn.sendall(b"\x07" * 65536)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


def dask_job(tmp_path: Path) -> Path:
    import shutil

    from support import sample

    folder = tmp_path / "job"
    shutil.copytree(sample("gloo_2rank"), folder)
    return folder


def run_dask(tmp_path: Path, address: str) -> tuple[int, list[str], float]:
    """``profview summary JOB --dask ADDRESS`` in a fresh process: (exit code, stderr lines, seconds)."""
    import time

    started = time.monotonic()
    done = subprocess.run([*PROFVIEW, "summary", str(dask_job(tmp_path)), "--dask", address, "--no-cache"],
                          capture_output=True, text=True, timeout=90,
                          env={**os.environ, "PROFVIEW_DASK_TIMEOUT": "2"})
    return done.returncode, done.stderr.splitlines(), time.monotonic() - started


@pytest.mark.parametrize(
    ("greeting", "after", "said"),
    [
        (DASK_HANDSHAKE[:8], "silence", "sent the start of a Dask handshake and then nothing within 2 s"),
        (DASK_HANDSHAKE[:8], "garbage", "answers in another protocol, not as a Dask scheduler"),
        ((60000).to_bytes(8, "little"), "endless", "answers in another protocol, not as a Dask scheduler"),
        (b"", "endless", "answers in another protocol, not as a Dask scheduler"),
        (DASK_HANDSHAKE, "silence", "the Dask scheduler at"),
        (DASK_HANDSHAKE, "garbage", "the Dask scheduler at"),
    ],
    ids=["size-then-nothing", "size-then-garbage", "plausible-size-then-endless", "endless", "handshake-then-nothing",
         "handshake-then-garbage"],
)
def test_35_3_a_dask_server_that_misbehaves_is_one_line_within_the_timeout(
    tmp_path: Path, greeting: bytes, after: str, said: str
) -> None:
    """Before: a plausible size then nothing hung past 180 s with PROFVIEW_DASK_TIMEOUT=2; a frame
    header then garbage, or an endless stream, was `internal error (error: unpack_from…)` and a
    `Client.__del__` traceback after it."""
    pytest.importorskip("distributed")
    server = FakeScheduler(greeting, after)
    try:
        code, lines, seconds = run_dask(tmp_path, server.address)
    finally:
        server.close()
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("profview: error: ") and server.address in lines[0] and said in lines[0], lines
    assert "internal error" not in lines[0] and seconds < 30


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("tls://127.0.0.1:9", "tls:// needs Dask's TLS settings"),
        ("inproc://127.0.0.1/1/1", "an inproc:// address names a scheduler inside this process"),
    ],
)
def test_35_3_the_other_documented_schemes_are_one_line(tmp_path: Path, address: str, said: str) -> None:
    """``tls://`` was `internal error (TypeError: TLS expects a ssl_context…)`, ``inproc://`` a traceback."""
    pytest.importorskip("distributed")
    code, lines, seconds = run_dask(tmp_path, address)
    assert code == 2 and len(lines) == 1 and address in lines[0] and said in lines[0], lines
    assert seconds < 30


def test_35_3_the_real_handshake_is_read_as_one(tmp_path: Path) -> None:
    """The fixture above is what the probe accepts (and a real scheduler's: test_hostile_jobs -k test_6_)."""
    pytest.importorskip("distributed")
    from profview.jobs.dask_run import read_handshake

    server = FakeScheduler(DASK_HANDSHAKE)
    try:
        import socket
        import time

        host, port = server.address.removeprefix("tcp://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            message = read_handshake(sock, server.address, time.monotonic() + 5, 5)
    finally:
        server.close()
    assert message["compression"] is None and list(message["python"]) == [3, 11, 7]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("PROFVIEW_MEMORY_LIMIT", "abc", "PROFVIEW_MEMORY_LIMIT='abc' is not a number of bytes"),
        ("PROFVIEW_MEMORY_LIMIT", "-1", "PROFVIEW_MEMORY_LIMIT='-1' is not a number of bytes"),
        ("PROFVIEW_MEMORY_LIMIT", "nan", "PROFVIEW_MEMORY_LIMIT='nan' is not a number of bytes"),
        ("PROFVIEW_DASK_TIMEOUT", "inf", "PROFVIEW_DASK_TIMEOUT='inf' is not a number of seconds above 0"),
        ("PROFVIEW_DASK_WORKER_WAIT", "-5", "PROFVIEW_DASK_WORKER_WAIT='-5' is not a number of seconds above 0"),
    ],
)
def test_35_10_a_bad_number_in_the_environment_is_one_line_naming_it(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    """``PROFVIEW_MEMORY_LIMIT=abc`` was an internal error, ``-1`` 'only -0 MiB is available',
    ``PROFVIEW_DASK_TIMEOUT=inf`` an internal error."""
    from support import sample

    args = ["summary", str(sample("ddp_nccl_streams.pt.trace.json.gz")), "--no-cache"]
    if variable.startswith("PROFVIEW_DASK"):
        pytest.importorskip("distributed")
        args = ["summary", str(dask_job(tmp_path)), "--no-cache", "--dask", "tcp://127.0.0.1:9"]
    done = subprocess.run([*PROFVIEW, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, variable: value})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert said in done.stderr and "internal error" not in done.stderr, done.stderr


def test_35_10_a_limit_written_as_a_float_is_that_many_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``1e9`` was an internal error (int('1e9')); it is 1,000,000,000 bytes."""
    from profview.parsers.source import memory_budget

    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", "1e9")
    assert memory_budget() == (1_000_000_000, "PROFVIEW_MEMORY_LIMIT")


@pytest.mark.parametrize("how", ["plain", "gzip", "pipe"])
def test_35_5_events_after_64_kib_of_other_top_level_keys_are_read(tmp_path: Path, reader: str, how: str) -> None:
    """A sorted-keys dump puts ``deviceProperties`` before ``traceEvents``: 96 KB of it made both
    readers refuse the trace as 'not a recognised profile'."""
    import gzip
    import threading

    devices = [{"id": i, "name": "NVIDIA H100 " + "x" * 100} for i in range(700)]
    events = [KERNEL, {**KERNEL, "ts": 10}, {**KERNEL, "name": "k2", "ts": 20}]
    text = json.dumps({"baseTimeNanoseconds": 1, "deviceProperties": devices, "traceEvents": events}, sort_keys=True)
    assert text.index('"traceEvents"') > 65536
    path = tmp_path / ("t.json.gz" if how == "gzip" else "t.json")
    data = gzip.compress(text.encode()) if how == "gzip" else text.encode()
    if how == "pipe":
        os.mkfifo(path)
        writer = threading.Thread(target=path.write_bytes, args=(data,), daemon=True)
        writer.start()
    else:
        path.write_bytes(data)
    profile = profview.load(path, use_cache=False)
    raw = json.loads(text)
    assert dict(profile.kernels().select("name", "calls").iter_rows()) == dict(
        collections.Counter(e["name"] for e in raw["traceEvents"])
    )
    assert len(profile.metadata["deviceProperties"]) == len(raw["deviceProperties"]) == 700


@pytest.mark.parametrize("number", ["99999999999999999999", "\u0663", "1" * 19])
def test_35_6_a_step_number_that_does_not_fit_is_a_label(tmp_path: Path, number: str, capsys) -> None:
    """``ProfilerStep#99999999999999999999`` and ``ProfilerStep#٣``: summary, the steps and
    critical-path views and --step were internal errors (an int64 cast), and the viewer could not
    open the trace.  Such a range is an ordinary annotation: the steps are the others."""
    from support import run_cli

    odd = f"ProfilerStep#{number}"
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": odd, "pid": 1, "tid": 1, "ts": 200, "dur": 100, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 210, "dur": 50,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 212, "dur": 5,
         "args": {"External id": 1, "correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": "gemm_k", "pid": 0, "tid": 7, "ts": 220, "dur": 30,
         "args": {"External id": 1, "correlation": 9, "stream": 7, "device": 0}},
    ]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = profview.load(path, use_cache=False)
    steps = profile.steps()
    assert steps["step"].to_list() == [1] and steps["duration_us"].to_list() == [100.0]  # ts 0, dur 100 above
    assert odd in profile.ops()["name"].to_list()  # the odd range is an operator row, by its own name
    for args in (["summary"], ["export", "-o", "-", "--view", "critical_path"], ["export", "-o", "-", "--step", "1"]):
        assert run_cli([*args, str(path), "--no-cache"]) == 0, args
    assert "internal error" not in capsys.readouterr().err


def tar_with(tmp_path: Path, extra: list[tarfile.TarInfo]) -> Path:
    """A tar of the two gloo rank traces and ``extra`` members (links, FIFOs: no data)."""
    from support import sample

    archive = tmp_path / "job.tar"
    with tarfile.open(archive, "w") as tar:
        for rank in (0, 1):
            tar.add(sample(f"gloo_2rank/rank{rank}.pt.trace.json.gz"), arcname=f"rank{rank}.pt.trace.json.gz")
        for info in extra:
            tar.addfile(info)
    return archive


def tar_link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def test_35_7_a_tar_member_that_links_to_itself_is_left_out_with_a_note(tmp_path: Path) -> None:
    """A symlink naming itself, or two naming each other: the whole job failed with RecursionError,
    the good ranks lost with it."""
    from profview.jobs.job import open_job

    loops = [tar_link("rank2.json", "rank2.json"), tar_link("rank3.json", "rank4.json"),
             tar_link("rank4.json", "rank3.json")]
    job = open_job(tar_with(tmp_path, loops), use_cache=False, workers=1)
    try:
        assert job.ranks == [0, 1]  # the two real traces (their distributedInfo ranks)
        looped = [n for n in job.notes if "leads back to itself (a loop)" in n]
        assert len(looped) == 3 and any("job.tar:rank2.json" in n for n in looped), job.notes
    finally:
        job.close()


def test_35_low_fifo_and_device_members_of_a_tar_are_named(tmp_path: Path) -> None:
    from profview.jobs.job import open_job

    fifo, device = tarfile.TarInfo("rank2.json"), tarfile.TarInfo("rank3.json")
    fifo.type, device.type = tarfile.FIFOTYPE, tarfile.CHRTYPE
    job = open_job(tar_with(tmp_path, [fifo, device]), use_cache=False, workers=1)
    try:
        assert job.ranks == [0, 1]
        assert "job.tar:rank2.json: a FIFO, not a file: left out" in job.notes
        assert "job.tar:rank3.json: a device, not a file: left out" in job.notes
    finally:
        job.close()


def test_35_low_the_backend_is_said_beside_the_rank_count_not_after_a_note(tmp_path: Path, capsys) -> None:
    """A job whose first note was a FIFO member printed 'a FIFO, not a file: left out (gloo)'."""
    from support import run_cli

    fifo = tarfile.TarInfo("rank2.json")
    fifo.type = tarfile.FIFOTYPE
    assert run_cli(["summary", str(tar_with(tmp_path, [fifo])), "--no-cache", "--workers", "1"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    backends = {json.loads(gzip.decompress(p.read_bytes()))["distributedInfo"]["backend"]
                for p in (SAMPLES / "gloo_2rank").glob("rank*.json.gz")}
    assert backends == {"gloo"}
    assert "2 of 2 ranks (gloo)" in lines and "job.tar:rank2.json: a FIFO, not a file: left out" in lines


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--view", "critical_path", "--what-if", "cutlass=1e308"], "the factor must be a number from 0 to 1,000,000"),
        (["--view", "efficiency", "--peak-tflops", "nan"], "--peak-tflops nan: a peak is a number above 0"),
        (["--view", "efficiency", "--peak-tflops", "inf"], "--peak-tflops inf: a peak is a number above 0"),
        (["--view", "efficiency", "--peak-tflops", "1e400"], "--peak-tflops inf: a peak is a number above 0"),
        (["--view", "steps", "--peak-tflops", "0"], "--peak-tflops 0: a peak is a number above 0"),
        (["--view", "efficiency", "--peak-tbs", "nan"], "--peak-tbs nan: a peak is a number above 0"),
    ],
)
def test_35_8_non_finite_absurd_and_zero_figures_are_refused(option: list[str], said: str, capsys) -> None:
    """``--what-if 'cutlass=1e308'`` printed a NumPy overflow warning and a total of inf; NaN and
    infinite peaks were taken (NaN MFU, a 692 FLOP/B GEMM called memory-bound); ``--peak-tflops 0``
    silently used the device's peak."""
    from support import run_cli, sample

    code = run_cli(["export", str(sample("gpt2_train_bf16.pt.trace.json.gz")), "-o", "-", *option])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_35_8_a_peak_given_is_the_peak_used(capsys) -> None:
    """The refusal bounds let a real peak through: --peak-tflops 500 is each row's peak_tflops."""
    from support import run_cli, sample

    out = sample("gpt2_train_bf16.pt.trace.json.gz")
    assert run_cli(["export", str(out), "-o", "-", "--view", "efficiency", "--peak-tflops", "500"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and {row["peak_tflops"] for row in rows if row["peak_tflops"]} == {"500.000"}


def skewed_step(number: int, t0: float, kind: str) -> list[dict]:
    """A step of two launches and a ``cudaDeviceSynchronize``, as Kineto writes them; ``kind``:
    ``plain``; ``late_kernel``: the second kernel, launched after the sync, starts 17 µs before its
    launch and so appears to end inside the sync; ``crossed``: it starts 60 µs before its launch,
    before the first kernel on their stream, which the sync waited for (a cycle through the stream)."""
    def op(name: str, ts: float, dur: float, eid: int) -> list[dict]:
        kernel_ts = {"late_kernel": ts - 17, "crossed": ts - 60}.get(kind, ts + 8) if name == "late" else ts + 8
        kernel_dur = 5.0 if kind == "crossed" and name == "late" else 10.0
        return [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::{name}", "pid": 1, "tid": 1, "ts": ts - 2, "dur": 12,
             "args": {"External id": eid}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 5,
             "args": {"External id": eid, "correlation": eid}},
            {"ph": "X", "cat": "kernel", "name": f"{name}_kernel", "pid": 0, "tid": 7, "ts": kernel_ts,
             "dur": kernel_dur, "args": {"External id": eid, "correlation": eid, "stream": 7, "device": 0}},
        ]

    sync = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1,
            "ts": t0 + 25, "dur": 40, "args": {}}
    step = {"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1, "ts": t0, "dur": 200,
            "args": {}}
    return [step, *op("early", t0 + 10, 0, 10 * number), sync, *op("late", t0 + 70, 0, 10 * number + 1)]


@pytest.mark.parametrize("kind", ["late_kernel", "crossed"])
def test_35_11_a_clock_skewed_kernel_costs_no_other_step_its_path(tmp_path: Path, kind: str, capsys) -> None:
    """One kernel starting 17 µs before its launch, then a cudaDeviceSynchronize: a dependency
    cycle, and the critical path of every step was refused (``--rules hta`` worked)."""
    from support import run_cli

    events = [e for n in (1, 2, 3) for e in skewed_step(n, 1000.0 * n, kind if n == 2 else "plain")]
    path = tmp_path / "skew.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = profview.load(path, use_cache=False)
    frame = profile.critical_path()
    hta = profile.critical_path(rules="hta")
    if kind == "late_kernel":  # the sync cannot wait for work launched after it: no cycle at all
        assert sorted(set(frame["step"].to_list())) == [1, 2, 3] == sorted(set(hta["step"].to_list()))
    else:  # a cycle the trace's times leave: that step alone is left out, and said so
        assert sorted(set(frame["step"].to_list())) == [1, 3]
        assert list(profile.step_paths().refused) == [2]
        assert run_cli(["export", str(path), "-o", "-", "--view", "critical_path", "--no-cache"]) == 0
        err = capsys.readouterr().err
        assert f"profview: warning: {path}: step 2: the dependency graph has a cycle" in err
    # the plain steps: their path is their host chain and kernels, the same as in a trace of them alone
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"traceEvents": [e for n in (1, 3) for e in skewed_step(n, 1000.0 * n, "plain")]}))
    alone = profview.load(plain, use_cache=False).critical_path()
    assert frame.filter(pl.col("step") != 2).equals(alone)


def test_35_low_text_after_a_gzip_stream_is_named_not_none(tmp_path: Path, reader: str) -> None:
    """The warning read ``None; read 122 decompressed bytes``."""
    document = json.dumps({"traceEvents": [KERNEL]}).encode()
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(document) + b"trailing junk here")
    profile = profview.load(path, use_cache=False)
    assert profile.warnings == [
        f"ignored {len(b'trailing junk here')} bytes after the end of the gzip stream; "
        f"read {len(document)} decompressed bytes"
    ]
    assert profile.kernels()["calls"].to_list() == [1]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"])
def test_35_low_a_trace_in_utf16_or_utf32_is_refused_naming_the_encoding(
    tmp_path: Path, reader: str, encoding: str
) -> None:
    """It was 'not a recognised profile', the encoding unnamed."""
    from profview.errors import ProfviewError

    path = tmp_path / "wide.json"
    path.write_bytes(json.dumps({"traceEvents": [KERNEL]}).encode(encoding))
    named = {"utf-16": "UTF-16LE", "utf-32": "UTF-32LE"}.get(encoding, encoding.upper().replace("-LE", "LE")
                                                              .replace("-BE", "BE"))
    with pytest.raises(ProfviewError, match=f"is text in {named}, not UTF-8"):
        profview.load(path, use_cache=False)


def test_35_low_a_timestamp_of_1e300_prints_a_short_span(tmp_path: Path, capsys) -> None:
    """The span was printed with its 300 digits, over five lines.  Since issue 55 an event at
    1e300 µs (past 2^53 µs) is left out of the tables with a note, so the span is the other
    event's; a huge figure is still printed short (``frames.fmt_fixed``: test_45_low_a_phase_line…)."""
    from support import run_cli

    events = [{**KERNEL, "ts": 1e300}, {**KERNEL, "ts": 1}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert run_cli(["summary", str(path), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    kept = [e for e in events if abs(e["ts"]) <= 2**53]
    span_us = max(e["ts"] + e["dur"] for e in kept) - min(e["ts"] for e in kept)
    assert f"span {span_us:.3f} us," in out and "1 events with a time past 2^53 µs" in err
    assert not re.search(r"\d{16}", out)  # no figure of 16 digits or more anywhere


def gloo_rank(rank: int, **info: object) -> dict:
    """The gloo sample's rank trace, read with the standard library, its distributedInfo changed."""
    doc = json.loads(gzip.decompress((SAMPLES / "gloo_2rank" / f"rank{rank}.pt.trace.json.gz").read_bytes()))
    doc["distributedInfo"].update(info)
    return doc


def test_35_low_a_world_size_of_0_is_no_size(tmp_path: Path, capsys) -> None:
    """``world_size: 0`` was taken literally: ``rank 0 of 0``, and a job of it beside a rank that
    says 2 was two jobs."""
    from support import run_cli

    from profview.jobs.job import open_job

    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "rank0.json").write_text(json.dumps(gloo_rank(0, world_size=0)))
    (folder / "rank1.json").write_text(json.dumps(gloo_rank(1)))
    assert run_cli(["summary", str(folder / "rank0.json"), "--no-cache"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert "rank 0 (gloo)" in lines and not any(line.startswith("rank 0 of") for line in lines)
    job = open_job(folder, use_cache=False, workers=1)
    try:
        assert job.ranks == [0, 1] and job.world_size == gloo_rank(1)["distributedInfo"]["world_size"] == 2
    finally:
        job.close()


@pytest.mark.parametrize("target", ["folder", "folder/", "new.csv/"])
def test_35_low_an_output_naming_a_directory_is_said_to_be_one(tmp_path: Path, target: str, capsys) -> None:
    """``-o DIR`` said 'unknown export format'; ``-o new.csv/`` wrote the file new.csv."""
    from support import run_cli, sample

    (tmp_path / "folder").mkdir()
    out = str(tmp_path / target) + ("/" if target.endswith("/") else "")
    assert run_cli(["export", str(sample("ddp_nccl_streams.pt.trace.json.gz")), "-o", out]) == 2
    what = "names a directory" if target == "new.csv/" else "is a directory"
    assert capsys.readouterr().err == f"profview: error: {out}: {what}: name a file, e.g. -o DIR/kernels.csv\n"
    assert not (tmp_path / "new.csv").exists()


@pytest.mark.parametrize("what", ["pattern", "empty folder"])
def test_35_low_a_job_that_names_nothing_is_said_before_the_terminal_is_taken(tmp_path: Path, what: str) -> None:
    """``profview 'nomatch*.json'`` started the viewer first: its escape sequences (alternate
    screen, mouse) came before the error, into whatever stderr was (a log)."""
    target = str(tmp_path / "nomatch*.json")
    if what == "empty folder":
        target = str(tmp_path / "empty")
        os.mkdir(target)
    done = subprocess.run([*PROFVIEW, target], capture_output=True, text=True, timeout=60)
    said = {"pattern": "no file matches this pattern", "empty folder": "no trace files (*.json, *.json.gz)"}[what]
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"profview: error: {target}: {said}") and done.stderr.count("\n") == 1, done.stderr
    assert "\x1b" not in done.stderr


def test_35_low_a_named_pipe_nobody_writes_to_is_one_line_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mkfifo F; profview summary F`` with no writer blocked for ever (in open())."""
    import threading
    import time

    from profview.errors import ProfviewError
    from profview.parsers import source

    monkeypatch.setattr(source, "FIFO_WAIT_S", 0.5)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def load() -> None:
        try:
            profview.load(fifo, use_cache=False)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    started = time.monotonic()
    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():  # blocked in open(): a writer lets it go, then the test fails
        with open(fifo, "wb"):
            pass
        reader.join(5)
        pytest.fail("the load waited for a writer for ever")
    assert isinstance(outcome[0], ProfviewError) and time.monotonic() - started < 10
    assert str(outcome[0]) == f"{fifo}: is a named pipe that no program opened to write within 0.5 s"


def test_35_low_a_named_pipe_whose_writer_comes_late_or_writes_late_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is for a writer to open the pipe; one that has opened it is waited for."""
    import threading
    import time

    from profview.parsers import source

    monkeypatch.setattr(source, "FIFO_WAIT_S", 2.0, raising=False)  # (it worked before the wait, too)
    document = json.dumps({"traceEvents": [KERNEL, {**KERNEL, "ts": 9}]}).encode()
    for opens_after, writes_after in ((0.5, 0.0), (0.0, 3.0)):
        fifo = tmp_path / f"pipe{opens_after}.json"
        os.mkfifo(fifo)

        def write(path: Path = fifo, first: float = opens_after, then: float = writes_after) -> None:
            time.sleep(first)
            with open(path, "wb") as fh:
                time.sleep(then)  # open, silent past FIFO_WAIT_S, then the trace
                fh.write(document)

        threading.Thread(target=write, daemon=True).start()
        assert profview.load(fifo, use_cache=False).kernels()["calls"].to_list() == [2]


def test_35_low_overlapping_steps_keep_their_own_ranges_and_one_order(tmp_path: Path) -> None:
    """Two ProfilerStep ranges over the same time: step 2 got a duration of 0 (moved past step 1's
    end), and which of the two held the critical path changed from run to run and between the
    rule sets (the steps' order came from a group-by)."""
    body = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 5,
         "args": {"External id": 1, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
         "args": {"External id": 1, "correlation": 1, "stream": 7, "device": 0}},
    ]
    steps = [{"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
              "args": {}} for n in (1, 2)]
    path = tmp_path / "overlap.json"
    path.write_text(json.dumps({"traceEvents": [*steps, *body]}))
    frame = profview.load(path, use_cache=False).steps()
    assert frame["duration_us"].to_list() == [s["dur"] for s in steps] == [100, 100]
    holders = set()
    for _ in range(4):
        profile = profview.load(path, use_cache=False)
        for rules in ("profview", "hta"):
            paths = profile.critical_path(rules=rules)
            holders.add(tuple(paths.filter(pl.col("duration_us") > 0)["step"].unique().to_list()))
    assert holders == {(2,)}  # the later of two steps of one start holds their events, always


SIGTERM_AT = {
    # while the command's modules import: a finder that is asked for typer sends the signal
    "imports": """
import os, signal, sys
class Kill:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            os.kill(os.getpid(), signal.SIGTERM)
        return None
sys.meta_path.insert(0, Kill())
from profview.cli import main
main(sys.argv[1:])
""",
    # just after the boundary set its handler, before the command ran
    "set-up": """
import os, signal, sys
import profview.cli.boundary as boundary
boundary.economise_address_space = lambda: os.kill(os.getpid(), signal.SIGTERM)
from profview.cli import main
main(sys.argv[1:])
""",
}


@pytest.mark.parametrize("moment", list(SIGTERM_AT))
def test_35_low_sigterm_while_starting_says_terminated(moment: str) -> None:
    """A SIGTERM about a second in (imports on a busy machine) ended the command silently, or
    with a traceback of ``Terminated`` when it came just after the handler was set."""
    from support import sample

    done = subprocess.run(
        [sys.executable, "-c", SIGTERM_AT[moment], "summary", str(sample("ddp_nccl_streams.pt.trace.json.gz"))],
        capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stderr) == (143, "profview: terminated\n")


def children_of(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the worker processes")
def test_35_low_a_sigkilled_job_leaves_no_warning_behind() -> None:
    """multiprocessing's resource tracker outlived the killed command and printed 'There appear to
    be 5 leaked semaphore objects to clean up at shutdown' on its stderr."""
    import signal
    import time

    from support import sample

    proc = subprocess.Popen(
        [*PROFVIEW, "summary", str(sample("param_dlrm_8rank_v100.tar.gz")), "--no-cache", "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any("spawn_main" in c for c in children_of(proc.pid)):
        time.sleep(0.05)
    assert any("resource_tracker" in c for c in children_of(proc.pid)), "the pool did not start"
    proc.send_signal(signal.SIGKILL)
    _out, err = proc.communicate(timeout=60)  # to its end: the tracker holds stderr until it is done
    assert proc.returncode == -signal.SIGKILL and "leaked" not in err and "Warning" not in err, err


def test_35_low_no_more_workers_start_than_the_memory_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--workers 16`` on 16 ranks started 16 processes of about 110 MB each, the memory unasked."""
    import concurrent.futures

    from support import sample

    from profview.jobs import executors
    from profview.jobs.job import open_job
    from profview.parsers.source import BASE_MEMORY

    started: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def counted(count: int, **kwargs):  # type: ignore[no-untyped-def]
        started.append(count)
        return real(count, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counted)
    limit = 2 * executors.WORKER_BASE_MEMORY + BASE_MEMORY
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(limit))
    job = open_job(sample("param_dlrm_8rank_v100.tar.gz"), workers=8, use_cache=False)
    try:
        assert len(started) == 1 and 1 < started[0] < 8 and started[0] * executors.WORKER_BASE_MEMORY <= limit
        assert job.ranks == list(range(8))  # the archive's 8 rank traces, all read
        assert any(n.startswith("8 workers would need about") and n.endswith(f": {started[0]} read ranks at once")
                   for n in job.notes), job.notes
    finally:
        job.close()
