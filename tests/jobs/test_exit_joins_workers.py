"""Profview joins its worker processes before it exits: nothing of its own is left
running in its process group when it ends (the job's workers, multiprocessing's resource tracker),
whether the job finished or was interrupted with Ctrl+C.

Each run is a fresh ``profview summary JOB --workers 2`` in its own session (so its process group
is its own); the group's members are read from ``/proc`` while it runs and the moment it has ended.
The job: copies of ``samples/gloo_2rank/rank0`` with their rank rewritten (as benchmarks/jobs.py
makes them), enough that Ctrl+C lands while the workers summarise ranks.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from support import SAMPLES

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc")


def make_job(folder: Path, ranks: int) -> None:
    doc = orjson.loads(gzip.decompress((SAMPLES / "gloo_2rank" / "rank0.pt.trace.json.gz").read_bytes()))
    for rank in range(ranks):
        doc["distributedInfo"] = {**doc["distributedInfo"], "rank": rank, "world_size": ranks}
        (folder / f"rank{rank}.json").write_bytes(orjson.dumps(doc))


def group_members(group: int) -> list[tuple[int, str]]:
    """(pid, command) of the live processes of process group ``group``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == group and fields[0] not in ("Z", "X"):
            found.append((int(entry), stat.split("(", 1)[1].rsplit(")", 1)[0]))
    return found


def run_summary(folder: Path, cache: Path, interrupt: bool) -> tuple[int, int, list[tuple[int, str]]]:
    """(exit code, most processes seen in the group, members left when it ended)."""
    command = [sys.executable, "-m", "profview", "summary", str(folder), "--workers", "2", "--no-cache"]
    env = {**os.environ, "PROFVIEW_CACHE_DIR": str(cache)}
    proc = subprocess.Popen(
        command, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    most, sent = 0, False
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        members = group_members(proc.pid)
        most = max(most, len(members))
        if interrupt and not sent and len(members) >= 3:  # profview and its two workers
            time.sleep(0.3)
            os.kill(proc.pid, signal.SIGINT)  # as Ctrl+C, to profview itself
            sent = True
        time.sleep(0.01)
    code = proc.wait(timeout=30)
    return code, most, group_members(proc.pid)


@pytest.mark.parametrize("interrupt", [False, True])
def test_no_process_of_profview_outlives_it(tmp_path: Path, interrupt: bool) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    make_job(folder, 96)
    code, most, left = run_summary(folder, tmp_path / "cache", interrupt)
    assert most >= 3  # the workers did run (and the tracker with them)
    assert code == (130 if interrupt else 0)
    assert left == []
