"""Thread caps on many-core nodes: the scanner on at most SCAN_THREADS threads, the frame's columns
built on at most COLUMN_THREADS, a command's Polars on at most POLARS_THREADS (each measured on a
16-core node, docs/performance.md); the user's own settings win, and a job's workers still get
their share of the cores rather than profview's cap."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import sample

import profview
from profview.parsers import fast_chrome, resources
from profview.parsers.source import POLARS_THREADS

SIXTEEN_CORES = "import os; os.sched_getaffinity = lambda pid: set(range(16)); "


def test_scan_threads_are_capped_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROFVIEW_THREADS", raising=False)
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda _pid: set(range(16)))
    assert resources.scan_threads() == resources.SCAN_THREADS == 4
    monkeypatch.setattr(resources.os, "sched_getaffinity", lambda _pid: {0, 1})
    assert resources.scan_threads() == 2
    monkeypatch.setenv("PROFVIEW_THREADS", "16")
    assert resources.scan_threads() == 16


def test_frame_columns_are_built_on_at_most_column_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 scan threads, yet the columns' builders stay at COLUMN_THREADS; the frame is the same."""
    made: list[int] = []
    original = fast_chrome.ThreadPoolExecutor

    def recording(workers: int, **kwargs: object) -> object:
        if kwargs.get("thread_name_prefix") == "profview-columns":
            made.append(workers)
        return original(workers, **kwargs)  # type: ignore[arg-type]

    trace = sample("ddp_nccl_streams.pt.trace.json.gz")
    expected = profview.load(trace, use_cache=False).events
    monkeypatch.setenv("PROFVIEW_THREADS", "16")
    monkeypatch.setattr(fast_chrome, "ThreadPoolExecutor", recording)
    events = profview.load(trace, use_cache=False).events
    assert made == [fast_chrome.COLUMN_THREADS]
    assert events.equals(expected)


def _command_threads(env_setting: str = "") -> list[str]:
    """POLARS_MAX_THREADS and Polars' pool size in a `profview summary` on a 16-core machine, and
    the settings a job of 8 workers would give each worker."""
    code = (
        SIXTEEN_CORES + env_setting + "import sys, atexit; "
        "from profview.jobs.executors import _worker_threads; "
        "atexit.register(lambda: print(os.environ['POLARS_MAX_THREADS'], __import__('polars').thread_pool_size(), "
        "_worker_threads(8)['POLARS_MAX_THREADS'], file=sys.stderr)); "
        "from profview.cli import main; main(['summary', sys.argv[1]])"
    )
    trace = str(sample("ddp_nccl_streams.pt.trace.json.gz"))
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("POLARS_MAX_THREADS", "PROFVIEW_THREADS")}
    done = subprocess.run([sys.executable, "-c", code, trace], capture_output=True, text=True, env=env)
    return done.stderr.split()[-3:]


def test_a_command_caps_polars_threads_but_workers_get_their_share() -> None:
    # 16 cores: Polars on 4; a job of 8 workers gives each 16 // 8 = 2, not profview's 4
    assert _command_threads() == [str(POLARS_THREADS), str(POLARS_THREADS), "2"]


def test_the_users_polars_threads_win() -> None:
    assert _command_threads("os.environ['POLARS_MAX_THREADS'] = '12'; ") == ["12", "12", "12"]
