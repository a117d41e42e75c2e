"""Run one function over many rank traces: serially, on a local process pool, or on Dask.

:func:`map_ranks` is the one entry point; every engine calls the same picklable function on each
path and hands each result to ``progress`` as it arrives, so the local pool and a Dask cluster
give identical results.  Local workers use the ``spawn`` start method (no fork of a parent that
may hold threads or a terminal).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import ProfviewError
from ..parsers.resources import KEEP_FREED_MEMORY

T = TypeVar("T")
#: Called after each finished rank: (done, total, seconds elapsed).
Progress = Callable[[int, int, float], None]
DASK_ENV = "DASK_SCHEDULER_ADDRESS"


def default_workers() -> int:
    """All cores this process may use."""
    from ..parsers.resources import usable_cpus

    return usable_cpus()


def map_ranks(
    function: Callable[..., T],
    paths: Sequence[str],
    *args: Any,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
    notes: list[str] | None = None,
    keep: Callable[[int, T], T] | None = None,
) -> list[T]:
    """``[function(path, *args) for path in paths]``, in the order of ``paths``.

    ``keep(index, result)``, where given, is what is kept of each result, called as it arrives (a
    job compacts each rank's frames then, so that the parent never holds every rank's as the
    workers sent them).

    ``dask``: a scheduler address (else ``$DASK_SCHEDULER_ADDRESS``) runs the calls on that Dask
    cluster; else ``workers`` local processes (default: all cores; 1 runs in this process), no
    more than the memory holds (:func:`workers_that_fit`; ``notes`` gets why, when fewer run).
    A :class:`ProfviewError` raised for one path is raised here unchanged.
    """
    address = dask or os.environ.get(DASK_ENV) or None
    started = time.monotonic()
    results: dict[int, T] = {}

    def finished(index: int, value: T) -> None:
        results[index] = value if keep is None else keep(index, value)
        if progress:
            progress(len(results), len(paths), time.monotonic() - started)

    if address:
        from .dask_run import on_dask

        on_dask(address, function, paths, args, finished)
    else:
        count, note = workers_that_fit(min(workers or default_workers(), len(paths)), paths)
        if note and notes is not None:
            notes.append(note)
        if count <= 1:
            for index, path in enumerate(paths):
                finished(index, function(path, *args))
        else:
            _on_pool(count, function, paths, args, finished)
    return [results[i] for i in range(len(paths))]


#: What a worker process holds before it reads a rank (the interpreter, Polars, NumPy: about
#: 110 MB measured on 16 workers of 16 ranks, issue 35), with room to spare.
WORKER_BASE_MEMORY = 160 * 2**20


def workers_that_fit(count: int, paths: Sequence[str]) -> tuple[int, str | None]:
    """``count`` workers, or as many as the memory holds (at least 1) with a note saying so: each
    may hold :data:`WORKER_BASE_MEMORY` and the largest rank's load at once (``--workers 16`` on
    16 ranks started 16 processes with no look at the memory)."""
    from ..parsers.source import GZIP_MAGIC, memory_budget, memory_factor

    budget = memory_budget()
    if count <= 1 or budget is None:
        return count, None
    largest = 0
    for path in paths:
        try:
            with open(path, "rb") as fh:
                gzipped = fh.read(2) == GZIP_MAGIC
            size = os.path.getsize(path) * (4 if gzipped else 1)  # a gzip trace as the load guesses it
        except OSError:
            continue
        largest = max(largest, size)
    each = WORKER_BASE_MEMORY + int(largest * memory_factor(chunked=True))
    fit = max(1, budget[0] // each)
    if fit >= count:
        return count, None
    return int(fit), (
        f"{count} workers would need about {count * each / 2**30:.1f} GiB of memory, {budget[1]} leaves "
        f"{budget[0] / 2**30:.1f} GiB: {fit} read ranks at once"
    )


#: Thread settings each worker starts with: its share of the cores, so that N workers with their
#: own Polars and scanner threads do not oversubscribe them (a user's own setting is kept).
THREAD_VARIABLES = ("POLARS_MAX_THREADS", "PROFVIEW_THREADS")


#: glibc's allocator in each worker (a user's own setting is kept): the buffers of one rank's read
#: (its JSON, the scanner's columns, 10-30 MB) are taken from the heap and kept there for the next
#: rank, not mapped and unmapped per rank (:data:`~profview.parsers.resources.KEEP_FREED_MEMORY`).
#: Measured on 40 ranks of gpt2_train_bf16 in one process: 0.37 million page faults and 0.80 s of
#: system time before, 0.07 million and 0.23 s with these, peak RSS 163 -> 167 MB.
WORKER_ALLOCATOR = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(128 * 2**20),
    KEEP_FREED_MEMORY: "1",
}


#: Pools running now (so that a viewer quitting mid-job can stop their workers).
_ACTIVE: set[Any] = set()


def stop_workers(join: bool = False) -> None:
    """Terminate the worker processes of every pool running in this process (a quit mid-job);
    ``join``: and wait for each to end (at most :data:`JOIN_S` seconds each)."""
    for pool in list(_ACTIVE):
        processes = list(getattr(pool, "_processes", {}).values())  # no public way before 3.14
        for process in processes:
            process.terminate()
        for process in processes if join else []:
            process.join(JOIN_S)


#: Seconds to wait for one terminated worker to end before profview exits.
JOIN_S = 5.0


def end_children() -> None:
    """Before profview exits: every worker process stopped and joined, and multiprocessing's
    resource tracker (started with the first pool) stopped and joined too, so that nothing of
    profview's is left running in its process group (issue 32)."""
    import sys

    stop_workers(join=True)
    tracker_module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(tracker_module, "_resource_tracker", None)
    stop = getattr(tracker, "_stop", None)  # closes its pipe and waits for it (no public way)
    if callable(stop):
        try:
            stop()
        except Exception:  # at exit: a tracker that cannot be stopped ends with us anyway
            return


def _worker_threads(count: int) -> dict[str, str]:
    """Each worker's thread settings: the user's, else its share of the cores (a setting that
    profview made for this process, :data:`SET_BY_PROFVIEW`, is not the user's)."""
    from ..parsers.source import SET_BY_PROFVIEW

    share = str(max(1, default_workers() // count))
    return {name: (None if name in SET_BY_PROFVIEW else os.environ.get(name)) or share for name in THREAD_VARIABLES}


def die_with_parent(parent: int) -> None:
    """Make this (worker) process end when ``parent`` does, even by SIGKILL or the OOM killer.

    Linux: the kernel sends SIGKILL on the parent's death (``prctl(PR_SET_PDEATHSIG)``);
    elsewhere a daemon thread polls the parent id.  Either way, a parent already gone by the time
    this runs ends the worker at once.
    """
    import signal
    import threading

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        armed = False
    if os.getppid() != parent:
        os._exit(1)
    if not armed:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="profview-parent-watch").start()


PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 1.0


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(1)


def quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker with its stderr on ``/dev/null``.

    The pool's queues make semaphores the tracker watches; the tracker outlives a SIGKILLed
    profview, frees them, and printed ``resource_tracker: There appear to be 5 leaked semaphore
    objects to clean up at shutdown`` onto the user's terminal after the kill (issue 35).  It is
    started once per process (a running one is left as it is)."""
    from multiprocessing import resource_tracker

    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(2)
    try:
        os.dup2(devnull, 2)  # the tracker inherits fd 2 as it is now
        resource_tracker.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _on_pool(count: int, function: Callable[..., T], paths: Sequence[str], args: tuple, finished: Callable) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    quiet_resource_tracker()
    allocator = {name: os.environ.get(name) or value for name, value in WORKER_ALLOCATOR.items()}
    settings = _worker_threads(count) | allocator
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)  # spawned workers read these when they start
    pool = ProcessPoolExecutor(
        count,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        futures = {pool.submit(function, path, *args): i for i, path in enumerate(paths)}  # starts the workers
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    _ACTIVE.add(pool)
    with pool:
        try:
            for future in as_completed(futures):
                # Taken out of the map: a finished rank's result is held by ``finished`` alone.
                finished(futures.pop(future), future.result())
        except BrokenProcessPool:
            raise ProfviewError(
                None,
                "a worker process died (killed, or out of memory) while reading the ranks; "
                "--workers 1 reads them one at a time",
            ) from None
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        finally:
            _ACTIVE.discard(pool)
