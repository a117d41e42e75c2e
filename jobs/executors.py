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

T = TypeVar("T")
#: Called after each finished rank: (done, total, seconds elapsed).
Progress = Callable[[int, int, float], None]
DASK_ENV = "DASK_SCHEDULER_ADDRESS"


def default_workers() -> int:
    """All cores this process may use."""
    from ..parsers.source import usable_cpus

    return usable_cpus()


def map_ranks(
    function: Callable[..., T],
    paths: Sequence[str],
    *args: Any,
    workers: int | None = None,
    dask: str | None = None,
    progress: Progress | None = None,
) -> list[T]:
    """``[function(path, *args) for path in paths]``, in the order of ``paths``.

    ``dask``: a scheduler address (else ``$DASK_SCHEDULER_ADDRESS``) runs the calls on that Dask
    cluster; else ``workers`` local processes (default: all cores; 1 runs in this process).
    A :class:`ProfviewError` raised for one path is raised here unchanged.
    """
    address = dask or os.environ.get(DASK_ENV) or None
    started = time.monotonic()
    results: dict[int, T] = {}

    def finished(index: int, value: T) -> None:
        results[index] = value
        if progress:
            progress(len(results), len(paths), time.monotonic() - started)

    if address:
        _on_dask(address, function, paths, args, finished)
    else:
        count = min(workers or default_workers(), len(paths))
        if count <= 1:
            for index, path in enumerate(paths):
                finished(index, function(path, *args))
        else:
            _on_pool(count, function, paths, args, finished)
    return [results[i] for i in range(len(paths))]


#: Thread settings each worker starts with: its share of the cores, so that N workers with their
#: own Polars and scanner threads do not oversubscribe them (a user's own setting is kept).
THREAD_VARIABLES = ("POLARS_MAX_THREADS", "PROFVIEW_THREADS")


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


def _on_pool(count: int, function: Callable[..., T], paths: Sequence[str], args: tuple, finished: Callable) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update(_worker_threads(count))  # spawned workers read these when they start
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
                finished(futures[future], future.result())
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


#: Seconds to reach a Dask scheduler and finish its handshake (``$PROFVIEW_DASK_TIMEOUT``).
DASK_TIMEOUT_S = 10.0
#: Seconds the job waits with no Dask worker to take its tasks (``$PROFVIEW_DASK_WORKER_WAIT``).
DASK_WORKER_WAIT_S = 60.0
DASK_SCHEMES = ("tcp", "tls", "inproc")


def _seconds(variable: str, default: float) -> float:
    try:
        value = float(os.environ.get(variable) or default)
    except ValueError:
        return default
    return value if value > 0 else default


def check_dask_address(address: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a scheduler address, or a one-line error for anything else."""
    from urllib.parse import urlsplit

    text = address.strip()
    if "://" not in text:
        text = "tcp://" + text
    problem = f"{address!r} is not a Dask scheduler address (expected tcp://HOST:PORT)"
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ProfviewError(None, problem) from None
    if parts.scheme not in DASK_SCHEMES:
        raise ProfviewError(None, f"{problem}; {parts.scheme}:// is not supported")
    if parts.scheme == "inproc":  # a cluster inside this process (tests, notebooks)
        return parts.scheme, host or "", 0
    if not host or port is None or parts.path or parts.query or any(c.isspace() for c in text):
        raise ProfviewError(None, problem)
    return parts.scheme, host, port


def probe_dask(address: str, host: str, port: int, timeout: float) -> None:
    """Connect to ``host:port`` and read the first bytes a Dask scheduler sends on its own
    (its handshake): a one-line error, within ``timeout``, for nothing there, no answer, or a
    server that speaks another protocol (HTTP)."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            head = b""
            while len(head) < 8:
                piece = sock.recv(8 - len(head))
                if not piece:
                    break
                head += piece
    except ConnectionRefusedError:
        raise ProfviewError(None, f"cannot reach the Dask scheduler at {address} (connection refused)") from None
    except socket.gaierror as exc:
        raise ProfviewError(None, f"cannot reach the Dask scheduler at {address} ({exc.strerror})") from None
    except TimeoutError:
        raise ProfviewError(
            None, f"no Dask scheduler answered at {address} within {timeout:g} s (PROFVIEW_DASK_TIMEOUT)"
        ) from None
    except OSError as exc:
        raise ProfviewError(None, f"cannot reach the Dask scheduler at {address} ({exc.strerror or exc})") from None
    frames = int.from_bytes(head, "little") if len(head) == 8 else -1
    if head.startswith(b"HTTP") or not 0 < frames < 1024:
        other = "HTTP" if head.startswith(b"HTTP") else "another protocol"
        raise ProfviewError(None, f"{address} answers in {other}, not as a Dask scheduler")


def _on_dask(address: str, function: Callable[..., T], paths: Sequence[str], args: tuple, finished: Callable) -> None:
    try:
        from distributed import Client
    except ImportError:
        raise ProfviewError(None, "--dask needs Dask: pip install 'profview[dask]'") from None
    scheme, host, port = check_dask_address(address)
    timeout = _seconds("PROFVIEW_DASK_TIMEOUT", DASK_TIMEOUT_S)
    worker_wait = _seconds("PROFVIEW_DASK_WORKER_WAIT", DASK_WORKER_WAIT_S)
    if scheme == "tcp":
        probe_dask(address, host, port, timeout)
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ProfviewError(None, f"cannot reach the Dask scheduler at {address} ({exc})") from None
    try:
        futures = client.map(function, list(paths), *[[a] * len(paths) for a in args], pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        with client.as_current():
            _collect(client, futures, index, finished, address, worker_wait)
    finally:
        client.close(timeout=timeout)


def _collect(
    client: Any, futures: list[Any], index: dict[Any, int], finished: Callable, address: str, limit: float
) -> None:
    """Hand each finished task to ``finished``; a one-line error when no worker takes them for ``limit`` s."""
    from distributed import wait

    pending = set(futures)
    idle_since = time.monotonic()
    while pending:
        try:
            done, pending = wait(pending, timeout=min(1.0, limit), return_when="FIRST_COMPLETED")
        except TimeoutError:  # nothing finished in this round
            done = set()
        for future in done:
            finished(index[future.key], future.result())
        if done or client.scheduler_info(n_workers=1).get("workers"):
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > limit:
            raise ProfviewError(
                None,
                f"no Dask worker took the tasks at {address} within {limit:g} s "
                "(the scheduler has no workers; PROFVIEW_DASK_WORKER_WAIT)",
            )
