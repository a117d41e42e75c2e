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
from conftest import run_cli, sample

import profview
from profview import cache
from profview.parsers.schema import EVENT_SCHEMA

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
    hours_ago = time.time() - 2 * cache.STALE_STAGING_S
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
        (["--filter", "a{99999999}"], "is too large to run"),
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


