"""The ranks on a Dask cluster: the scheduler reached and checked before Dask is trusted with it.

Every failure is one line that names the address and what went wrong, within
``PROFVIEW_DASK_TIMEOUT`` seconds, with nothing printed after it (issue 35):

* **tcp://**: before any Dask client exists, profview connects and reads the scheduler's whole
  handshake itself (:func:`read_handshake`): the 8-byte size of its frames, the frames, and the
  message they decode to, which must be Dask's (``compression``, ``python``).  A silent port, a
  server that greets in another protocol, one that sends a plausible size and then nothing, a
  frame header then garbage, or an endless stream are each named here, bounded in time and in
  bytes read (a Dask client would wait on them for minutes, or decode garbage into an internal
  error and a ``Client.__del__`` traceback).
* **tls://** needs Dask's TLS settings (``distributed.comm.tls.*`` in the Dask configuration);
  without them it is one line before connecting.
* **inproc://** names a scheduler inside this process (a notebook's, a test's): one line when
  this process has none.
* The Dask client itself is made on a thread given the same time; whatever it raises, or its not
  finishing, is one line.  Once a client was tried, the error asks the process to end at once
  (:attr:`ProfviewError.leave_now`), so that Dask's own threads print nothing after the line.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ProfviewError

#: Seconds to reach a Dask scheduler and finish its handshake (``$PROFVIEW_DASK_TIMEOUT``).
DASK_TIMEOUT_S = 10.0
#: Seconds the job waits with no Dask worker to take its tasks (``$PROFVIEW_DASK_WORKER_WAIT``).
DASK_WORKER_WAIT_S = 60.0
DASK_SCHEMES = ("tcp", "tls", "inproc")
#: A Dask handshake is a small msgpack dict (58 bytes from distributed 2026.8): more is not one.
HANDSHAKE_MAX_BYTES = 64 * 1024


def dask_seconds(variable: str, default: float) -> float:
    """A number of seconds from the environment: a finite number above 0, else a one-line error."""
    text = os.environ.get(variable)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ProfviewError(None, f"{variable}={text!r} is not a number of seconds above 0")
    return value


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


def probe_dask(address: str, host: str, port: int, timeout: float) -> dict[str, Any]:
    """Connect to ``host:port`` and read the handshake a Dask scheduler sends on its own: a
    one-line error, within ``timeout``, for nothing there, no answer, or anything but Dask's
    handshake."""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            return read_handshake(sock, address, deadline, timeout)
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


def read_handshake(sock: socket.socket, address: str, deadline: float, timeout: float) -> dict[str, Any]:
    """The scheduler's handshake message, read whole from ``sock`` by ``deadline``; a one-line
    error for anything else (TimeoutError when nothing at all came)."""
    foreign = ProfviewError(None, f"{address} answers in another protocol, not as a Dask scheduler")
    head = _read_exactly(sock, 8, deadline)
    if head is None:
        raise TimeoutError
    if head.startswith(b"HTTP"):
        raise ProfviewError(None, f"{address} answers in HTTP, not as a Dask scheduler")
    size = int.from_bytes(head, "little")
    if not 0 < size <= HANDSHAKE_MAX_BYTES:
        raise foreign
    body = _read_exactly(sock, size, deadline)
    if body is None:
        raise ProfviewError(
            None,
            f"{address} sent the start of a Dask handshake and then nothing within {timeout:g} s "
            "(PROFVIEW_DASK_TIMEOUT)",
        )
    try:
        from distributed.protocol import loads
        from distributed.protocol.utils import unpack_frames

        frames, buffers = unpack_frames(memoryview(body), partial=True)
        message = None if buffers else loads([bytes(frame) for frame in frames], deserialize=False)
    except Exception:  # garbage: whatever the decoder raises
        raise foreign from None
    if not is_handshake(message):
        raise foreign
    return message  # type: ignore[return-value]


def is_handshake(message: object) -> bool:
    """Whether ``message`` is a Dask handshake: ``compression`` (a name or None), ``python`` (its
    version numbers) and, where given, ``pickle-protocol`` (a number)."""
    if not isinstance(message, dict):
        return False
    python, compression = message.get("python"), message.get("compression", 0)
    protocol = message.get("pickle-protocol", 0)
    return (
        isinstance(python, (list, tuple))
        and len(python) >= 2
        and all(isinstance(part, int) for part in python)
        and (compression is None or isinstance(compression, str))
        and isinstance(protocol, int)
    )


def _read_exactly(sock: socket.socket, count: int, deadline: float) -> bytes | None:
    """``count`` bytes, or None if the peer stopped sending (closed, or silent until ``deadline``)."""
    data = bytearray()
    while len(data) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            piece = sock.recv(count - len(data))
        except TimeoutError:
            return None
        if not piece:
            return None
        data += piece
    return bytes(data)


def _check_reachable(address: str, scheme: str, host: str, port: int, timeout: float) -> None:
    """Before a Dask client: the scheme's own check (see the module's list)."""
    if scheme == "tcp":
        probe_dask(address, host, port, timeout)
    elif scheme == "tls":
        from distributed.security import Security

        if Security().get_connection_args("client")["ssl_context"] is None:
            raise ProfviewError(
                None,
                f"cannot reach the Dask scheduler at {address}: tls:// needs Dask's TLS settings "
                "(distributed.comm.tls.ca-file, .client.cert and .client.key in the Dask configuration)",
            )
    else:
        from distributed.comm.inproc import global_manager

        try:
            here = global_manager.get_listener_for(address.removeprefix("inproc://")) is not None
        except ValueError:
            here = False
        if not here:
            raise ProfviewError(
                None,
                f"no Dask scheduler at {address}: an inproc:// address names a scheduler inside this "
                "process (a notebook's or a test's), and this process has none",
            )


def dask_failure(address: str, what: str) -> ProfviewError:
    """A failure once a Dask client was tried: one line, and the process ends at once after it."""
    return ProfviewError(None, f"the Dask scheduler at {address} failed: {what}", leave_now=True)


def _connect(address: str, timeout: float) -> Any:
    """A Dask client of ``address``, made on a thread that is given ``timeout`` seconds (twice,
    for its own retries) to finish."""
    from distributed import Client

    made: dict[str, Any] = {}

    def connect() -> None:
        try:
            made["client"] = Client(address, timeout=timeout, set_as_default=False)
        except BaseException as exc:  # handed to the caller
            made["error"] = exc

    thread = threading.Thread(target=connect, name="profview-dask-connect", daemon=True)
    thread.start()
    thread.join(2 * timeout + 1)
    if thread.is_alive():
        raise dask_failure(address, f"it did not finish connecting within {timeout:g} s (PROFVIEW_DASK_TIMEOUT)")
    if "error" in made:
        error = made["error"]
        raise dask_failure(address, f"{type(error).__name__}: {error}")
    return made["client"]


def on_dask(address: str, function: Callable[..., Any], paths: Sequence[str], args: tuple, finished: Callable) -> None:
    """``function(path, *args)`` for each path on the cluster at ``address``; each result to ``finished``."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ProfviewError(None, "--dask needs Dask: pip install 'profview[dask]'") from None
    scheme, host, port = check_dask_address(address)
    timeout = dask_seconds("PROFVIEW_DASK_TIMEOUT", DASK_TIMEOUT_S)
    worker_wait = dask_seconds("PROFVIEW_DASK_WORKER_WAIT", DASK_WORKER_WAIT_S)
    _check_reachable(address, scheme, host, port, timeout)
    client = _connect(address, timeout)
    try:
        futures = client.map(function, list(paths), *[[a] * len(paths) for a in args], pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        with client.as_current():
            _collect(client, futures, index, finished, address, worker_wait)
    except ProfviewError as exc:
        raise ProfviewError(exc.path, exc.problem, out_of_memory=exc.out_of_memory, leave_now=True) from None
    except Exception as exc:  # the cluster, not the traces: a rank's problems come back as values
        raise dask_failure(address, f"{type(exc).__name__}: {exc}") from None
    finally:
        with contextlib.suppress(Exception):  # closing a failed client: the error above is the news
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
