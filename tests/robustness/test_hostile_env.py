"""Hostile environments: a cache that must never lie and heals itself, SIGTERM, closed or full
outputs, odd arguments and odd files — each a one-line error or a clean result, never debris."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample

import profview
from profview.parsers.schema import EVENT_SCHEMA
from profview.store import staging
from profview.store import trace_cache as cache

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
PROFVIEW = [sys.executable, "-m", "profview"]


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(root))
    return root


@pytest.fixture
def plain_trace(tmp_path: Path) -> Path:
    target = tmp_path / "trace.json"
    target.write_bytes(gzip.decompress(sample("ddp_nccl_streams.pt.trace.json.gz").read_bytes()))
    return target


def entries(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.is_dir() and len(p.name) == 32]


def test_trace_rewritten_in_place_with_size_and_mtime_kept_is_read_again(own_cache: Path, plain_trace: Path) -> None:
    first = profview.load(plain_trace)
    top = first.kernels()["name"][0]
    stat = plain_trace.stat()
    renamed = "K" * len(top)  # same length: the file keeps its size
    data = plain_trace.read_bytes().replace(top.encode(), renamed.encode())
    assert len(data) == stat.st_size
    time.sleep(0.01)
    plain_trace.write_bytes(data)
    os.utime(plain_trace, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as touch -r / rsync --times do
    assert plain_trace.stat().st_mtime_ns == stat.st_mtime_ns and plain_trace.stat().st_size == stat.st_size
    again = profview.load(plain_trace)
    assert renamed in again.kernels()["name"].to_list() and top not in again.kernels()["name"].to_list()


@pytest.mark.parametrize("junk", [b"[1, 2]", b"{}", b'{"identity": 1, "fields": []}', b"\x00\xff"])
def test_damaged_metadata_is_replaced(own_cache: Path, plain_trace: Path, junk: bytes) -> None:
    expected = profview.load(plain_trace).kernels()
    (entry,) = entries(own_cache)
    (entry / cache.META_FILE).write_bytes(junk)
    assert profview.load(plain_trace).kernels().equals(expected)  # parsed again, no internal error
    hit = cache.lookup(str(plain_trace), EVENT_SCHEMA)
    assert hit is not None and hit.events().height > 0  # and a sound entry written in its place


def test_junk_events_file_is_replaced(own_cache: Path, plain_trace: Path) -> None:
    height = profview.load(plain_trace).events.height
    (entry,) = entries(own_cache)
    (entry / cache.EVENTS_FILE).write_bytes(b"junk")
    assert profview.load(plain_trace).events.height == height
    hit = cache.lookup(str(plain_trace), EVENT_SCHEMA)
    assert hit is not None and hit.events().height == height


def test_stale_staging_folders_are_swept(own_cache: Path, plain_trace: Path, tmp_path: Path) -> None:
    own_cache.mkdir(parents=True)
    stale, fresh = own_cache / ".tmp-stale", own_cache / ".tmp-fresh"
    for folder in (stale, fresh):
        folder.mkdir()
        (folder / cache.EVENTS_FILE).write_bytes(b"half")
    hours_ago = time.time() - 2 * staging.STALE_STAGING_S
    os.utime(stale, (hours_ago, hours_ago))
    profview.load(plain_trace)  # a store prunes
    assert not stale.exists() and fresh.exists()  # a fresh one may be another process's


def test_pipe_input_writes_no_cache_entry(own_cache: Path, plain_trace: Path) -> None:
    fifo = plain_trace.parent / "pipe"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat '{plain_trace}' > '{fifo}'"])
    try:
        assert profview.load(fifo).kernels().height > 0
    finally:
        writer.wait(10)
    assert not own_cache.exists() or not entries(own_cache)


def test_sigterm_while_caching_leaves_no_staging_folder(
    own_cache: Path, plain_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pl.DataFrame.write_ipc

    def killed(self, file, *args, **kwargs):  # type: ignore[no-untyped-def]
        real(self, file, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)  # the scheduler ends the job mid-write
        time.sleep(1)

    monkeypatch.setattr(pl.DataFrame, "write_ipc", killed)
    out = tmp_path / "k.csv"
    try:
        assert run_cli(["export", str(plain_trace), "-o", str(out)]) == 143
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert not out.exists()
    assert not [p for p in own_cache.iterdir() if p.name.startswith(".tmp-")]


def test_sigterm_while_exporting_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(self, file, *args, **kwargs):  # type: ignore[no-untyped-def]
        file.write(b"name,calls\n")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)

    monkeypatch.setattr(pl.DataFrame, "write_csv", killed)
    folder = tmp_path / "out"
    folder.mkdir()
    try:
        assert run_cli(["export", str(sample(GPT2)), "-o", str(folder / "k.csv"), "--no-cache"]) == 143
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert list(folder.iterdir()) == []


def test_closed_pipe_exits_141_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*PROFVIEW, "export", str(sample(GPT2)), "-o", "-", "--no-cache"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first row is written
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and err == ""


def test_full_disk_is_one_line() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        command = [*PROFVIEW, "summary", str(sample(GPT2)), "--no-cache"]
        done = subprocess.run(command, stdout=full, stderr=subprocess.PIPE)
    lines = done.stderr.decode().strip().splitlines()
    assert done.returncode == 2 and lines == ["profview: error: cannot write the output (No space left on device)"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--filter", "a{99999999}"], "too large to run"),
        (["--view", "launches", "--op", "aten::mull"], "no operator named 'aten::mull' (closest: aten::mul"),
        (["--view", "launches", "--kernel", "no such kernel"], "no kernel named 'no such kernel'"),
    ],
)
def test_arguments_that_cannot_work_are_one_line_errors(args: list[str], expected: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(["export", str(sample(GPT2)), "-o", "-", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


def test_negative_top_is_refused(capsys) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(["export", str(sample(GPT2)), "-o", "-", "--top", "-1"]) == 2
    assert "-1 is not in the range" in capsys.readouterr().err


def test_written_path_is_shown_inert(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "k\x1b[31mred.csv"
    assert run_cli(["export", str(sample(GPT2)), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert out.exists() and "\x1b" not in err and "␛[31mred.csv" in err


def test_symlinks_are_followed_only_with_force(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    target, link = tmp_path / "real.csv", tmp_path / "link.csv"
    target.write_text("old")
    link.symlink_to(target)
    assert run_cli(["export", str(sample(GPT2)), "-o", str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err and target.read_text() == "old"
    assert run_cli(["export", str(sample(GPT2)), "-o", str(link), "--force"]) == 0
    assert link.is_symlink() and target.read_text().startswith("name,calls")
    dangling, missing = tmp_path / "dangling.csv", tmp_path / "made.csv"
    dangling.symlink_to(missing)
    assert run_cli(["export", str(sample(GPT2)), "-o", str(dangling)]) == 2 and not missing.exists()
    assert run_cli(["export", str(sample(GPT2)), "-o", str(dangling), "--force"]) == 0
    assert dangling.is_symlink() and missing.read_text().startswith("name,calls")


def test_proc_files_are_read_not_called_empty(capsys) -> None:  # type: ignore[no-untyped-def]
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc on this system")
    assert run_cli(["summary", "/proc/self/status"]) == 2
    assert "not a recognised profile" in capsys.readouterr().err




# ---- limits of the machine -------------------------------------------------------------------

LIMITED_RUN = """
import resource, sys
import profview.cli
import profview.profiles.loading  # Polars loaded, as a run has it when it reads (profview.cli alone does not)
def vm_size():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
room = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (vm_size() + room, resource.RLIM_INFINITY))
profview.cli.main(["summary", sys.argv[2]])
"""


@pytest.mark.parametrize("room_mib, refused", [(150, True), (2500, False)])
def test_an_address_space_limit_is_respected_with_a_one_line_error(
    room_mib: int, refused: bool, own_cache: Path
) -> None:
    """``ulimit -v`` (as SLURM sets it): refused with the size needed, never a Rust abort (exit 134)."""
    trace = str(sample(GPT2))
    done = subprocess.run(
        [sys.executable, "-c", LIMITED_RUN, str(room_mib * 2**20), trace],
        capture_output=True,
        text=True,
        env={**os.environ, "PROFVIEW_MEMORY_LIMIT": ""},
    )
    if refused:
        assert done.returncode == 2, done.stderr[-500:]
        (line,) = done.stderr.strip().splitlines()
        assert "needs about" in line and "the address-space limit, ulimit -v" in line
    else:  # the same trace under a limit it fits in: the limit is read, not always refused
        assert done.returncode == 0, done.stderr[-500:]
        assert "ProfilerStep" in done.stdout or "Kernel" in done.stdout


def test_memory_budget_takes_the_tightest_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from profview.parsers import source

    monkeypatch.delenv("PROFVIEW_MEMORY_LIMIT", raising=False)
    monkeypatch.setattr(source, "_mem_available", lambda: (8 * 2**30, "free memory"))
    monkeypatch.setattr(source, "_cgroup_room", lambda: (3 * 2**30, "the memory cgroup's limit"))
    monkeypatch.setattr(source, "_rlimit_room", lambda held=False: None)
    assert source.memory_budget() == (3 * 2**30, "the memory cgroup's limit")
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(2**30))
    assert source.memory_budget() == (2**30, "PROFVIEW_MEMORY_LIMIT")


def test_cgroup_limits_are_read_for_v1_and_v2_layouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from profview.parsers import source

    v2 = tmp_path / "v2" / "job" / "step"
    v2.mkdir(parents=True)
    (v2 / "memory.max").write_text("max\n")
    (v2.parent / "memory.max").write_text(str(4 * 2**30))
    (v2.parent / "memory.current").write_text(str(2**30))
    assert source._ancestors(str(tmp_path / "v2"), "/job/step") == [str(v2), str(v2.parent)]
    rooms = [
        (source._read_int(os.path.join(f, "memory.max")), source._read_int(os.path.join(f, "memory.current")))
        for f in source._ancestors(str(tmp_path / "v2"), "/job/step")
    ]
    assert rooms == [(None, None), (4 * 2**30, 2**30)]  # "max" is no limit; the parent's limit counts


def test_a_gzip_bomb_is_refused_after_its_first_bytes(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        for _ in range(64):
            fh.write(bytes(2**20))
    done = subprocess.run([*PROFVIEW, "summary", str(bomb)], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().endswith("starts with binary data (NUL bytes), not a trace or profiler table")


def test_an_endless_pipe_of_zeros_is_refused_at_once() -> None:
    reader = subprocess.Popen(["head", "-c", str(2**34), "/dev/zero"], stdout=subprocess.PIPE)
    try:
        done = subprocess.run([*PROFVIEW, "summary", "/dev/stdin"], stdin=reader.stdout, capture_output=True, text=True)
    finally:
        reader.kill()
        reader.wait()
    assert done.returncode == 2
    assert "starts with binary data" in done.stderr and done.stderr.count("\n") == 1


def test_an_array_of_spaces_is_a_cut_trace_for_both_readers(tmp_path: Path) -> None:
    spaces = tmp_path / "spaces.json"
    spaces.write_bytes(b'{"traceEvents":[' + b" " * (8 * 2**20))
    for env in ({}, {"PROFVIEW_PURE_PYTHON": "1"}):
        environment = {**os.environ, **env}
        done = subprocess.run([*PROFVIEW, "summary", str(spaces)], capture_output=True, text=True, env=environment)
        assert done.returncode == 2
        assert done.stderr.strip().endswith("the trace is cut before its first complete event")


def test_what_the_trace_holds_sets_the_memory_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One distinct kernel name per launch: the JSON-size estimate passes, the events frame (larger
    than its JSON) is checked before the tables are built, with a one-line error."""
    from profview.parsers import source
    from profview.parsers.source import memory_factor
    from profview.profiles import loading
    from profview.profiles.loading import ANALYSIS_MEMORY_FACTOR

    # Without the libraries' share (the same on both sides), so that a small trace shows the case.
    monkeypatch.setattr(source, "BASE_MEMORY", 0)
    monkeypatch.setattr(loading, "BASE_MEMORY", 0)

    events = [
        f'{{"ph":"X","cat":"kernel","name":"void kernel_variant_{i}<float, {i % 97}, true>(Params)",'
        f'"pid":0,"tid":7,"ts":{i * 10},"dur":4,"args":{{"correlation":{i + 1},"device":0,"stream":7}}}}'
        for i in range(60_000)
    ]
    trace = tmp_path / "distinct.json"
    trace.write_text('{"traceEvents":[' + ",".join(events) + "]}")
    frame = profview.load(trace, use_cache=False).events
    assert frame["name"].n_unique() == 60_000
    json_need = int(trace.stat().st_size * memory_factor(chunked=True))  # read in chunks
    frame_need = int(frame.estimated_size() * ANALYSIS_MEMORY_FACTOR)  # the whole peak
    assert json_need < frame_need  # the case the JSON size alone gets wrong
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str((json_need + frame_need) // 2))
    with pytest.raises(profview.errors.ProfviewError, match=r"needs about .* of memory to load"):
        profview.load(trace, use_cache=False)
