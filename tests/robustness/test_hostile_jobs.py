"""Hostile, huge and half-broken jobs (issue 23): each case bounded in time and memory, named in
one line, nothing left behind (no ``profview-job-*`` folder, no process).

The ranks are real: the two gloo traces of ``samples/gloo_2rank`` with their ``distributedInfo``
rewritten, so every job here opens (or is refused) on data a profiler wrote.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from support import SAMPLES, run_cli

from profview.errors import ProfviewError
from profview.jobs import archives
from profview.jobs.inputs import MAX_RANKS, check_ranks, find_inputs
from profview.jobs.job import Job, open_job
from profview.store import job_summaries, rank_summaries, staging

GLOO = SAMPLES / "gloo_2rank"
PROFVIEW = [sys.executable, "-m", "profview"]


@cache
def gloo_doc(rank: int) -> dict:
    """The gloo trace of ``rank`` (0 or 1), read with the standard library."""
    with gzip.open(GLOO / f"rank{rank}.pt.trace.json.gz", "rt") as fh:
        return json.load(fh)


def rank_bytes(rank: int, world: int | None = 2, *, info: bool = True, **extra: object) -> bytes:
    """A gloo rank trace with its rank and world size set (none with ``info=False``)."""
    doc = copy.deepcopy(gloo_doc(rank % 2))
    if info:
        doc["distributedInfo"] = {"backend": "gloo", "rank": rank, "world_size": world, **extra}
    else:
        doc.pop("distributedInfo")
    return json.dumps(doc).encode()


def own_temp_dirs(pid: int | None = None) -> list[str]:
    prefix = f"{archives.TEMP_PREFIX}{pid or os.getpid()}-"
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(prefix)]


@pytest.fixture(autouse=True)
def nothing_left_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test: its own cache, and afterwards no extraction folder of this process."""
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    yield
    assert own_temp_dirs() == []


def run(args: list[str], timeout: float = 60, **env: str) -> tuple[int, str, float]:
    """The profview command in a fresh process: (exit code, stderr, seconds); no extraction folder left."""
    started = time.monotonic()
    proc = subprocess.Popen(
        PROFVIEW + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        _out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    assert own_temp_dirs(proc.pid) == []
    return proc.returncode, err, time.monotonic() - started


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profview: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


def make_tar(path: Path, members: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


# -- 3, 4: ranks beyond belief -------------------------------------------------------------------


def test_3_a_billion_in_a_file_name_or_world_size_is_refused_at_once_in_little_memory(tmp_path: Path) -> None:
    """Before: ``set(range(10**9))`` (gigabytes, then the OOM killer); here under a 1.5 GB cap."""
    (tmp_path / "rank1000000000.json").write_bytes(rank_bytes(0, info=False))
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29)); "
    code = limit + f"from profview.cli import main; main(['summary', {str(tmp_path)!r}, '-j', '1'])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = one_line_error(proc.stderr)
    assert proc.returncode == 2 and "rank1000000000.json: rank 1,000,000,000 is implausible" in line
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "a.json").write_bytes(rank_bytes(0, world=10**9))
    with pytest.raises(ProfviewError, match="world size 1,000,000,000 is implausible for a job of 1 trace"):
        open_job(huge, workers=1)


def test_3_missing_ranks_are_counted_without_the_range() -> None:
    found = [("a.json", 0, MAX_RANKS - 1), ("b.json", 5, MAX_RANKS - 1)]
    started = time.monotonic()
    ranks, world, notes = check_ranks(found)
    assert time.monotonic() - started < 0.5
    assert (ranks, world) == ([0, 5], MAX_RANKS - 1)
    assert notes == [f"2 of {MAX_RANKS - 1} ranks (missing: 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, …)"]


def test_low_a_rank_outside_the_world_size_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_bytes(rank_bytes(0, world=2))
    (tmp_path / "s.json").write_bytes(rank_bytes(9, world=2))
    with pytest.raises(ProfviewError, match=r"s\.json: rank 9 is outside the job's world size 2"):
        open_job(tmp_path, workers=1)


@pytest.mark.parametrize("reader", ["compiled", "pure"])
def test_4_ranks_past_int32_and_int64_on_both_readers(tmp_path: Path, reader: str, monkeypatch) -> None:
    if reader == "pure":
        monkeypatch.setenv("PROFVIEW_PURE_PYTHON", "1")
    for literal in ("2147483648", "4611686018427387904"):
        folder = tmp_path / literal
        folder.mkdir()
        (folder / "rank0.json").write_bytes(rank_bytes(0))
        (folder / "rank1.json").write_bytes(rank_bytes(1).replace(b'"rank": 1,', f'"rank": {literal},'.encode()))
        with pytest.raises(ProfviewError, match=f"rank {int(literal):,} is implausible"):
            open_job(folder, workers=1, use_cache=False)
    # Above int64 (or a float): the docs say such a value is missing, so the name gives the rank.
    for literal in ("1e20", "18446744073709551616"):
        folder = tmp_path / ("x" + literal)
        folder.mkdir()
        (folder / "rank0.json").write_bytes(rank_bytes(0))
        (folder / "rank1.json").write_bytes(rank_bytes(1).replace(b'"rank": 1,', f'"rank": {literal},'.encode()))
        with open_job(folder, workers=1, use_cache=False) as job:
            assert job.ranks == [0, 1] and job.world_size == 2
            waits = job.ranks_view()["wait_us"].to_list()
            assert all(w is not None and 0 <= w < 1e6 for w in waits)  # no absurd waits


# -- 5, 6: Dask schedulers that are not there, or not Dask -----------------------------------------


def _job_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        (folder / f"rank{rank}.json").write_bytes(rank_bytes(rank))
    return folder


@pytest.mark.parametrize("address", ["not an address", "tcp://[::1", "http://127.0.0.1:1/"])
def test_5_a_bad_dask_address_is_one_line_at_once(tmp_path: Path, address: str) -> None:
    code, err, seconds = run(["summary", str(_job_dir(tmp_path)), "--dask", address], timeout=30)
    line = one_line_error(err)
    assert code == 2 and "not a Dask scheduler address" in line and seconds < 15


class _Listener:
    """A loopback TCP server for a test: ``http`` answers a request as a web server would, ``ssh``
    greets first with a banner, ``silent`` accepts and says nothing."""

    def __init__(self, kind: str) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.kind = kind
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            try:
                if self.kind == "ssh":
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                elif self.kind == "http":
                    conn.settimeout(30)
                    if conn.recv(65536):
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            except OSError:
                pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.mark.parametrize("kind", ["http", "silent", "ssh"])
def test_5_6_an_http_silent_or_foreign_port_is_named_within_the_timeout(tmp_path: Path, kind: str) -> None:
    """Before: an HTTP port hung, or its reply was read as a Dask frame length ('out of memory')."""
    server = _Listener(kind)
    try:
        code, err, seconds = run(
            ["summary", str(_job_dir(tmp_path)), "--dask", f"tcp://127.0.0.1:{server.port}"],
            timeout=40, PROFVIEW_DASK_TIMEOUT="2",
        )
    finally:
        server.close()
    line = one_line_error(err)
    assert code == 2 and "out of memory" not in line and seconds < 15
    if kind == "ssh":
        assert f"tcp://127.0.0.1:{server.port} answers in another protocol, not as a Dask scheduler" in line
    else:  # a web server waits for a request that profview never sends it
        assert f"no Dask scheduler answered at tcp://127.0.0.1:{server.port} within 2 s" in line


def test_low_a_refused_local_port_is_answered_at_once(tmp_path: Path) -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    code, err, seconds = run(["summary", str(_job_dir(tmp_path)), "--dask", f"127.0.0.1:{port}"], timeout=40)
    assert code == 2 and "connection refused" in one_line_error(err) and seconds < 10


def test_6_a_scheduler_without_workers_is_said_within_the_limit(tmp_path: Path, monkeypatch) -> None:
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PROFVIEW_DASK_WORKER_WAIT", "2")
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        started = time.monotonic()
        with pytest.raises(ProfviewError, match=r"no Dask worker took the tasks at .* within 2 s"):
            open_job(_job_dir(tmp_path), dask=cluster.scheduler_address, use_cache=False)
        assert time.monotonic() - started < 20


# -- 7, 8, 12, 15: archives -------------------------------------------------------------------------


def test_7_an_archive_bomb_stops_while_streaming(tmp_path: Path, monkeypatch) -> None:
    """200 MB of JSON whitespace in a ~200 KB tar.gz: refused after at most 50x its size is written."""
    monkeypatch.setenv("PROFVIEW_ARCHIVE_EXPANSION", "50")
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz") as tar:
        info = tarfile.TarInfo("rank0.json")
        info.size = 200 << 20
        stream = io.BufferedReader(_Spaces(b'{"traceEvents": [', info.size))  # type: ignore[arg-type]
        tar.addfile(info, stream)
    limit = int(bomb.stat().st_size * 50) + archives.EXPANSION_FLOOR
    started = time.monotonic()
    with pytest.raises(ProfviewError, match=r"bomb.tar.gz: expands to more than .*refused as an archive bomb"):
        find_inputs([str(bomb)])
    assert time.monotonic() - started < 20 and limit < 100 << 20


class _Spaces(io.RawIOBase):
    """``head`` then spaces, ``size`` bytes in all, made as they are read."""

    def __init__(self, head: bytes, size: int) -> None:
        self.head, self.left = head, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        count = min(len(buffer), self.left)
        chunk = (self.head + b" " * count)[:count]
        self.head = self.head[count:]
        buffer[:count] = chunk
        self.left -= count
        return count


def _zip_with_repeated_entry(path: Path, data: bytes, copies: int) -> None:
    """A zip whose central directory lists one stored member ``copies`` times (under new names)."""
    import zlib as _zlib

    crc = _zlib.crc32(data)
    name = b"rank0.json"
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0)
    body = local + name + data
    central = b""
    for copy_no in range(copies):
        alias = f"rank{copy_no}.json".encode()
        central += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, len(data), len(data), len(alias), 0, 0, 0, 0, 0, 0
        ) + alias
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, copies, copies, len(central), len(body), 0)
    path.write_bytes(body + central + end)


def test_7_a_zip_listing_one_entry_many_times_is_extracted_once(tmp_path: Path) -> None:
    archive = tmp_path / "job.zip"
    _zip_with_repeated_entry(archive, rank_bytes(0, world=1), copies=500)
    inputs = find_inputs([str(archive)])
    try:
        assert len(inputs.paths) == 1 and len(os.listdir(inputs.temp_dir)) == 1
        assert inputs.notes == ["job.zip: 499 zip entries repeat the data of another entry; read once"]
    finally:
        inputs.cleanup()


def test_7_members_checked_while_streaming_sniff_and_memory(tmp_path: Path, monkeypatch) -> None:
    archive = make_tar(
        tmp_path / "job.tar.gz",
        {
            "rank0.json": rank_bytes(0),
            "rank1.json": b"\x00" * 100_000,
            "rank2.json": b'{"traceEvents":[' + b" " * 3_000_000,
        },
    )
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(archives_budget_for(1_000_000)))
    with open_job(archive, workers=1, use_cache=False) as job:
        assert job.ranks == [0]
        notes = "\n".join(job.notes)
        assert "rank 1 unreadable: job.tar.gz:rank1.json: not a trace (its first bytes are not JSON)" in notes
        assert "rank 2 unreadable: job.tar.gz:rank2.json: larger than this machine could load" in notes


def archives_budget_for(member_bytes: int) -> int:
    """A memory limit under which a member of ``member_bytes`` is too large to load."""
    from profview.parsers.source import BASE_MEMORY, memory_factor

    return BASE_MEMORY + int(member_bytes * memory_factor())


def _bad_zip(path: Path) -> None:
    """rank0 sound; rank1 with damaged deflate data; rank2 in an unsupported method; rank3 encrypted."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for rank in range(4):
            z.writestr(f"rank{rank}.json", rank_bytes(rank, world=4))
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        infos = {i.filename: i for i in z.infolist()}
    one = infos["rank1.json"]
    start = one.header_offset + 30 + len(one.filename)
    raw[start + 100 : start + 400] = os.urandom(300)  # the deflate stream broken in the middle
    # Local header: flags at byte 6, method at 8; central directory record: flags at 8, method at 10.
    central = {}
    at = raw.find(b"PK\x01\x02")
    while at != -1:
        size = struct.unpack_from("<H", raw, at + 28)[0]
        central[bytes(raw[at + 46 : at + 46 + size]).decode()] = at
        at = raw.find(b"PK\x01\x02", at + 46 + size)
    for name, (local_field, central_field, value) in {"rank2.json": (8, 10, 99), "rank3.json": (6, 8, 0x1)}.items():
        local = infos[name].header_offset + local_field
        raw[local : local + 2] = struct.pack("<H", value)
        raw[central[name] + central_field : central[name] + central_field + 2] = struct.pack("<H", value)
    path.write_bytes(bytes(raw))


def test_8_bad_zip_members_are_named_and_the_rest_opens(tmp_path: Path) -> None:
    archive = tmp_path / "job.zip"
    _bad_zip(archive)
    with open_job(archive, workers=1, use_cache=False) as job:
        assert job.ranks == [0] and job.world_size == 4
        notes = "\n".join(job.notes)
    assert "rank 1 unreadable: job.zip:rank1.json: cannot be read (Error -3 while decompressing" in notes
    assert "rank 2 unreadable: job.zip:rank2.json: cannot be read (" in notes and "compression" in notes
    assert "rank 3 unreadable: job.zip:rank3.json: encrypted" in notes
    assert "/tmp" not in notes and "profview-job-" not in notes  # named by member, not temporary path
    code, err, _s = run(["summary", str(archive), "--strict", "-j", "1"])
    line = one_line_error(err)
    assert code == 2 and "job.zip:rank1.json: cannot be read" in line and "(and 2 more unreadable)" in line


def test_12_a_tar_gz_damaged_in_the_middle_names_the_damage(tmp_path: Path) -> None:
    archive = make_tar(tmp_path / "job.tar.gz", {f"rank{r}.json": rank_bytes(r, world=8) for r in range(8)})
    raw = bytearray(archive.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 64] = bytes(64)
    archive.write_bytes(bytes(raw))
    with open_job(archive, workers=1, use_cache=False) as job:
        notes = "\n".join(job.notes)
        assert 0 < len(job.ranks) < 8
    assert "job.tar.gz: damaged" in notes and "the members after the damage are lost" in notes
    assert f"{len(job.ranks)} of 8 ranks (missing: " in notes


def test_15_tar_hard_link_members_are_read(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "rank0.json").write_bytes(rank_bytes(0, info=False))
    for rank in range(1, 6):
        os.link(source / "rank0.json", source / f"rank{rank}.json")
    archive = tmp_path / "job.tar.gz"
    subprocess.run(["tar", "-czhf", str(archive), "-C", str(source), "."], check=True)
    with tarfile.open(archive) as tar:
        assert sum(m.islnk() for m in tar.getmembers()) == 5  # GNU tar wrote five links
    with open_job(archive, workers=1, use_cache=False) as job:
        assert job.ranks == list(range(6)) and job.notes == []


def test_low_extraction_folders_of_killed_runs_are_swept(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        alive = tempfile.mkdtemp(prefix=f"{archives.TEMP_PREFIX}{child.pid}-")
    finally:
        pass
    dead_proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tempfile.mkdtemp(prefix=f"{archives.TEMP_PREFIX}{int(dead_proc.stdout)}-")
    try:
        removed = archives.sweep_stale()
        assert dead in removed and not os.path.exists(dead) and os.path.isdir(alive)
    finally:
        child.kill()
        child.wait()
        os.rmdir(alive)


# -- 11: workers die with their parent ---------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_11_pool_workers_exit_when_their_parent_is_killed() -> None:
    """A real SIGKILL of the parent while two workers each sleep 60 s in a task."""
    script = (
        "import time; from profview.jobs.executors import map_ranks; "
        "map_ranks(time.sleep, [60, 60], workers=2)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while time.monotonic() < deadline:
            workers = [p for p in _children(parent.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
            if len(workers) >= 2:
                break
            time.sleep(0.2)
        assert len(workers) >= 2, "the pool's workers did not start"
        time.sleep(1.0)  # the workers are in their tasks
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.1)
    left = [p for p in workers if _alive(p)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


# -- 14 and Low: the rank-summary cache heals itself ------------------------------------------------


def test_14_a_wrong_typed_cache_entry_is_replaced(tmp_path: Path) -> None:
    folder = _job_dir(tmp_path)
    with open_job(folder, workers=1) as first:
        expected = first.ranks_view()
    shutil_rmtree(tmp_path / "cache" / job_summaries.FOLDER)  # only the per-rank entries remain
    entries = list((tmp_path / "cache" / rank_summaries.FOLDER).iterdir())
    assert len(entries) == 2
    info = entries[0] / rank_summaries.INFO_FILE
    doc = json.loads(info.read_text())
    doc["facts"] = ["not", "a", "dict"]
    info.write_text(json.dumps(doc))
    (entries[1] / "kernels.arrow").write_bytes(b"damaged")
    for _ in range(2):  # healed by the first re-open, read by the second
        shutil_rmtree(tmp_path / "cache" / job_summaries.FOLDER)
        with open_job(folder, workers=1) as again:
            assert again.ranks_view().equals(expected)
    healed = [json.loads((e / rank_summaries.INFO_FILE).read_text()) for e in (tmp_path / "cache" / "ranks").iterdir()]
    assert all(isinstance(d["facts"], dict) for d in healed) and len(healed) == 2


def test_a_killed_writers_staging_folders_are_swept_from_the_job_caches(tmp_path: Path) -> None:
    """The rank and job caches are pruned as the trace cache is: a staging folder older than an
    hour (a writer killed mid-write) is removed, a fresh one (maybe another process's) is kept,
    and neither counts as an entry (they used to stay for ever, and count against the limit)."""
    cache = tmp_path / "cache"
    hours_ago = time.time() - 2 * staging.STALE_STAGING_S
    left = {}
    for folder in (rank_summaries.FOLDER, job_summaries.FOLDER):
        for age in ("stale", "fresh"):
            path = cache / folder / f"{staging.STAGING_PREFIX}{age}"
            path.mkdir(parents=True)
            (path / rank_summaries.INFO_FILE).write_bytes(b"{half")
            left[folder, age] = path
        os.utime(left[folder, "stale"], (hours_ago, hours_ago))
    with open_job(_job_dir(tmp_path), workers=1) as job:  # saving the ranks and the job prunes both
        assert job.ranks_view().height == 2
    for folder in (rank_summaries.FOLDER, job_summaries.FOLDER):
        assert not left[folder, "stale"].exists() and left[folder, "fresh"].exists()
        entries = [e for e in (cache / folder).iterdir() if not staging.is_staging(e)]
        assert len(entries) == (2 if folder == rank_summaries.FOLDER else 1)


def shutil_rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# -- the job as one unit --------------------------------------------------------------------------------


def test_a_job_reopens_from_one_saved_summary_and_an_archive_without_extracting(tmp_path: Path, monkeypatch) -> None:
    from profview.jobs import job as job_module

    archive = make_tar(tmp_path / "job.tar.gz", {f"rank{r}.json": rank_bytes(r) for r in (0, 1)})
    folder = _job_dir(tmp_path)
    first = {str(p): open_job(p, workers=1) for p in (archive, folder)}
    for job in first.values():
        job.close()

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("re-opened rank by rank")

    monkeypatch.setattr(job_module, "map_ranks", refuse)
    monkeypatch.setattr(job_module, "cached_summary", refuse)
    monkeypatch.setattr(job_module, "find_inputs", refuse)  # no extraction, no per-file sniff
    for path, before in first.items():
        with open_job(path, workers=1) as again:
            assert again.ranks == before.ranks and again.notes == before.notes
            for a, b in zip(again.summaries, before.summaries, strict=True):
                assert a.path == b.path and a.facts == b.facts
                for name in ("steps", "kernels", "calls"):
                    mine, theirs = getattr(a, name), getattr(b, name)
                    assert mine.equals(theirs) and mine.schema == theirs.schema
            assert again.collectives().equals(before.collectives())
            # The views read back equal the views computed again from the ranks read back.
            fresh = Job(again.source, again.ranks, again.summaries, again.world_size)
            assert fresh.collectives().equals(again.collectives()) and fresh.ranks_view().equals(again.ranks_view())
            assert fresh.clock_offsets() == again.clock_offsets()
    monkeypatch.undo()
    os.utime(archive, None)  # a changed archive is summarised again
    with open_job(archive, workers=1) as job:
        assert job.inputs is not None and job.inputs.temp_dir is not None


def test_low_files_in_a_job_folder_that_are_not_traces_are_skipped_with_a_note(tmp_path: Path) -> None:
    folder = _job_dir(tmp_path)
    (folder / "config.json").write_text('{"lr": 0.1, "batch": 32}')
    (folder / "kernels.json").write_text('[{"name":"k","calls":3,"total_us":1.0}]')  # profview's own export
    with open_job(folder, workers=1, use_cache=False) as job:
        assert job.ranks == [0, 1]
        assert job.notes == [f"skipped 2 file(s) in {folder} that are not traces: config.json, kernels.json"]


def test_low_a_fifo_job_member_is_named_as_such(tmp_path: Path) -> None:
    fifo = tmp_path / "rank1.json"
    os.mkfifo(fifo)
    with pytest.raises(ProfviewError, match=r"rank1\.json: is a FIFO \(named pipe\), not a trace file"):
        open_job([str(_job_dir(tmp_path) / "rank0.json"), str(fifo)], workers=1)


def test_cli_quick_runs_leave_nothing(tmp_path: Path) -> None:
    assert run_cli(["summary", str(_job_dir(tmp_path)), "-j", "1"]) == 0


# -- 1, Low: outputs: never an input, checked before the work, FIFOs written into --------------------


def test_1_export_and_diff_never_overwrite_a_job_s_own_traces(tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    rank0 = (job / "rank0.json").read_bytes()
    os.link(job / "rank1.json", tmp_path / "hard.json")
    (tmp_path / "soft.json").symlink_to(job / "rank1.json")
    for target in (job / "rank0.json", tmp_path / "hard.json", tmp_path / "soft.json"):
        code, err, _s = run(["export", str(job), "-v", "ranks", "-o", str(target), "--force", "-j", "1"])
        assert code == 2 and "refusing to overwrite the input profile" in one_line_error(err)
    other = tmp_path / "other"
    other.mkdir()
    for rank in (0, 1):
        (other / f"rank{rank}.json").write_bytes(rank_bytes(rank))
    code, err, _s = run(["diff", str(job), str(other), "-v", "ranks", "-o", str(job / "rank0.json"), "--force"])
    assert code == 2 and "refusing to overwrite the input profile" in one_line_error(err)
    assert (job / "rank0.json").read_bytes() == rank0 and (job / "rank1.json").read_bytes() == rank_bytes(1)


def test_low_an_existing_output_is_refused_before_any_rank_is_read(tmp_path: Path, monkeypatch, capsys) -> None:
    from profview.jobs import job as job_module

    monkeypatch.setattr(job_module, "open_job", lambda *_a, **_k: pytest.fail("the job was opened"))
    existing = tmp_path / "out.csv"
    existing.write_text("keep")
    assert run_cli(["export", str(_job_dir(tmp_path)), "-v", "ranks", "-o", str(existing)]) == 2
    assert "out.csv: already exists (use --force to overwrite)" in capsys.readouterr().err
    assert existing.read_text() == "keep"


def test_low_an_export_into_a_fifo_streams_into_it(tmp_path: Path) -> None:
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, err, _s = run(["export", str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz"), "-o", str(fifo), "--force"])
    reader.join(10)
    assert code == 0 and fifo.is_fifo(), err
    lines = got[0].decode().splitlines()
    assert lines[0].startswith("name,") and len(lines) == 1 + 69  # the trace's 69 kernel names, as exported


_DYING_WRITE = """
import os, signal, sys
import polars as pl
from profview.report.export import write_table

def dying(self, fh, **_kw):
    fh.write(b"name,calls\\n" + b"k,1\\n" * 200_000)
    fh.flush()
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))

pl.DataFrame.write_csv = dying
pl.DataFrame.write_parquet = dying
write_table(pl.DataFrame({"name": ["k"], "calls": [1]}), sys.argv[1])
"""


@pytest.mark.parametrize(("suffix", "how"), [(".csv", "SIGKILL"), (".parquet", "SIGKILL"), (".csv", "SIGINT")])
def test_10_an_export_killed_mid_write_leaves_no_partial_file(tmp_path: Path, suffix: str, how: str) -> None:
    target = tmp_path / f"out{suffix}"
    target.write_text("the old file")
    proc = subprocess.run([sys.executable, "-c", _DYING_WRITE, str(target), how], capture_output=True, timeout=60)
    assert proc.returncode != 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no hidden .out.csv.XXXX.tmp
    assert target.read_text() == "the old file"


# -- 2: trace text is inert in a job's summary -------------------------------------------------------


def test_2_a_backend_with_escape_sequences_is_printed_inert(tmp_path: Path, capsys) -> None:
    hostile = "nccl\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[31m\u202eevil"
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        doc = json.loads(rank_bytes(rank))
        doc["distributedInfo"]["backend"] = hostile
        (folder / f"rank{rank}.json").write_text(json.dumps(doc))
    assert run_cli(["summary", str(folder), "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "nccl␛]52;c;cm0gLXJmIH4=\\x07␛]0;owned\\x07␛[31m\\u202eevil" in out
    assert not any(c in out for c in ("\x1b", "\x07", "\u202e"))


def test_low_summary_into_a_closed_pipe_exits_141(tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    for args in (["summary", str(job), "-j", "1"], ["summary", str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")]):
        proc = subprocess.Popen(PROFVIEW + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()  # | head -1
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 141 and err == b""


def test_low_diff_of_a_job_and_a_missing_path_says_it_is_missing(tmp_path: Path, capsys) -> None:
    assert run_cli(["diff", str(_job_dir(tmp_path)), str(tmp_path / "nonexistent"), "--summary"]) == 2
    assert capsys.readouterr().err == f"profview: error: {tmp_path / 'nonexistent'}: no such file or directory\n"


def test_strict_and_unreadable_ranks_on_the_command_line(tmp_path: Path) -> None:
    job = _job_dir(tmp_path)
    (job / "rank2.json").write_text('{"traceEvents": [')
    code, err, _s = run(["summary", str(job), "-j", "1", "--no-cache"])
    assert code == 0 and "rank2.json: the trace is cut" in err and "left out of the job; --strict fails" in err
    code, err, _s = run(["summary", str(job), "-j", "1", "--strict"])
    assert code == 2 and "rank2.json: the trace is cut" in one_line_error(err)


# -- 16: a table's cut names pair with the trace's whole names --------------------------------------


def _table_name_of(line: str, name: str) -> bool:
    """Whether a table line's Name column is ``name``, whole or cut short with ``...``."""
    shown = line.strip().split("  ")[0]
    return shown == name or (shown.endswith("...") and len(shown) > 20 and name.startswith(shown[:-3]))


def test_16_diff_of_a_trace_and_its_table_pairs_cut_names(tmp_path: Path) -> None:
    from profview.analysis.diff.compare import pair_names

    table_text = (SAMPLES / "gpt2_train_bf16.tables.txt").read_text()
    out = tmp_path / "d.csv"
    trace, table = SAMPLES / "gpt2_train_bf16.pt.trace.json.gz", SAMPLES / "gpt2_train_bf16.tables.txt"
    assert run_cli(["diff", str(trace), str(table), "-v", "kernels", "-o", str(out)]) == 0
    import polars as pl

    diff = pl.read_csv(out)
    paired = diff.filter(pl.col("calls_before").gt(0) & pl.col("calls_after").gt(0))
    assert paired.height == 18  # every kernel row of the table (issue 34; before: 3, and 1 before that)
    for row in paired.iter_rows(named=True):  # a table line whose cut name it starts says the same calls
        cuts = [line for line in table_text.splitlines() if _table_name_of(line, row["name"])]
        assert row["calls_before"] in {int(cut.split()[-2]) for cut in cuts}  # the table's own # of Calls
        assert row["calls_before"] == row["calls_after"]
        assert abs(row["total_us_before"] - row["total_us_after"]) < 1.0  # the table prints whole µs
    # One cut name, several whole names it starts: left unpaired, never guessed.
    pairs = pair_names(["void f<1>(int)", "void f<2>(int)", "void g<1>()"], ["void f<...", "void g<..."])
    assert pairs.rows() == [
        ("void g<1>()", "void g<...", "prefix"), ("void f<1>(int)", None, "unmatched"),
        ("void f<2>(int)", None, "unmatched"), (None, "void f<...", "unmatched"),
    ]


def test_a_large_job_s_summary_shows_the_straggler_and_the_slowest_ranks_not_a_list() -> None:
    import polars as pl

    from profview.report.job_summary import shown_ranks

    ranks = pl.DataFrame(
        {"rank": list(range(12)), "step_us": [5.0, 9.0, None, 7.0, 1.0, 8.0, 2.0, 3.0, 4.0, 6.0, 0.5, 0.7],
         "straggler": [r == 4 for r in range(12)]}
    )
    shown, title = shown_ranks(ranks, 4)
    assert shown["rank"].to_list() == [1, 3, 4, 5]  # the straggler, then steps of 9, 8 and 7 (None last)
    assert title.startswith("Ranks: 4 of 12 (the straggler, then the slowest steps; export --view ranks has all)")
    assert shown_ranks(ranks, 12)[0].equals(ranks) and shown_ranks(ranks, 0)[0].equals(ranks)
