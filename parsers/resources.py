"""The machine's share of this process, for the readers: the CPUs it may use, the threads the
scanner runs on, and giving freed C-heap pages back.  Both :mod:`.source` (the memory guard counts
the scanner's threads) and :mod:`.fast_chrome` (the scanner) import it; it imports neither, so the
two never import each other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache


def usable_cpus() -> int:
    """The CPUs this process may use (``taskset`` and container limits count), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


#: Threads that scan, at most, unless ``PROFVIEW_THREADS`` says otherwise.  More threads cut each
#: window into more ranges, and every range costs the frame's building its own pieces: on a 16-core
#: node a read of gpt2_train_big took 0.93 s with 4, 1.10 s with 8 and 1.13 s with 16 (Polars on
#: 4; benchmarks/threads.py --vary scan), though the scan alone gains to 8.
SCAN_THREADS = 4


def scan_threads() -> int:
    """Threads for scanning: ``PROFVIEW_THREADS``, else the CPUs this process may use, at most
    :data:`SCAN_THREADS`."""
    return thread_count(os.environ.get("PROFVIEW_THREADS", "")) or min(usable_cpus(), SCAN_THREADS)


def thread_count(text: str) -> int:
    """A thread setting's count: an ASCII whole number from 1 to 1024, else 0."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and 0 < int(text) <= 1024 else 0


#: Set (to 1) in the environment of a job's worker processes (:mod:`profview.jobs.executors`): they
#: read rank after rank, and the pages one rank freed are the next one's, so they are kept.
KEEP_FREED_MEMORY = "PROFVIEW_KEEP_FREED_MEMORY"


def give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system (glibc ``malloc_trim``; elsewhere nothing).

    The scanner's column buffers and the chunked read's windows are freed to glibc's heap, while
    Polars allocates from its own: without this the freed pages would stay in the peak RSS.
    Not in a job's worker (:data:`KEEP_FREED_MEMORY`): there the next rank would fault every page
    in again (a 128-rank job's workers took 1.3 million page faults, 729457a's 0.1 million).
    """
    if os.environ.get(KEEP_FREED_MEMORY) == "1":
        return
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim  # type: ignore[no-any-return]
    except (ImportError, OSError, AttributeError):  # not glibc
        return None


__all__ = ["KEEP_FREED_MEMORY", "SCAN_THREADS", "give_back_freed_memory", "scan_threads", "thread_count", "usable_cpus"]
