"""The one way the viewer does something slow: a Textual thread worker that posts a message.

Every slow action (loading a trace, two traces compared, a job, two jobs, a rank of a job, a
drill-down) is a ``@work(thread=True, exit_on_error=False)`` method of the app that ends by posting
one of the small dataclass messages of :mod:`profview.tui.messages`, as Harlequin and Toolong do.

Parsing and building tables cannot be interrupted, and Textual's thread workers run on asyncio's
executor, whose threads ``App.run`` waits for when the app exits.  So the worker hands the
uninterruptible part to :func:`detached`: a daemon thread the worker waits on, giving up as soon
as it is cancelled (Esc, quitting).  Quitting never waits for it: :func:`profview.tui.launch.finish_run`
leaves the process at once while such a thread still runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, TypeVar

from textual.message import Message
from textual.worker import get_current_worker

from ..errors import ProfviewError
from .messages import LoadFailed

T = TypeVar("T")


class Cancelled(Exception):
    """The worker waiting on a detached thread was cancelled; its result is dropped."""


class DetachedThreads:
    """The daemon threads the viewer started (see :func:`detached`), newest last."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def add(self, thread: threading.Thread) -> None:
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]

    @property
    def newest(self) -> threading.Thread | None:
        return self.threads[-1] if self.threads else None

    def busy(self) -> bool:
        """Whether one of them is still running (quitting then leaves without waiting for it)."""
        return any(t.is_alive() for t in self.threads)


def detached(threads: DetachedThreads, work: Callable[[], T], name: str = "profview-work") -> T:
    """From inside a thread worker: run ``work`` on a daemon thread and return its result (or raise
    its exception); raise :class:`Cancelled` as soon as the worker is cancelled, leaving the thread
    to end on its own."""
    worker = get_current_worker()
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the worker, which decides what it means
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    threads.add(thread)
    thread.start()
    while thread.is_alive():
        thread.join(0.05)
        if worker.is_cancelled:
            raise Cancelled
    if worker.is_cancelled:
        raise Cancelled
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


def load_failed(exc: Exception, subject: str, what: str, doing: str) -> LoadFailed:
    """The one line a failed load ends the viewer with: a bad input's own, or a bug's, never a
    traceback.  ``subject``: the file (or job) named; ``what``: "load this trace"; ``doing``: "loading"."""
    if isinstance(exc, ProfviewError):
        return LoadFailed(str(exc))
    if isinstance(exc, MemoryError):
        return LoadFailed(f"{subject}: not enough memory to {what}")
    return LoadFailed(f"{subject}: internal error while {doing}: {type(exc).__name__}: {exc}")


class OpeningApp(Protocol):
    """What :func:`open_detached` needs of the app: its detached threads and its message queue."""

    threads: DetachedThreads

    def post_message(self, message: Message) -> bool: ...


def open_detached(
    app: OpeningApp, work: Callable[[], T], opened: Callable[[T], Message], subject: str, what: str, doing: str
) -> None:
    """From inside a thread worker: run the open ``work`` detached and post ``opened(result)``, or the
    one line of why it failed (:func:`load_failed`); nothing once the worker is cancelled.  Every
    screen that opens something (a trace, a job, two jobs, snapshots) ends its worker this way."""
    try:
        result = detached(app.threads, work, "profview-open")
    except Cancelled:
        return
    except Exception as exc:
        app.post_message(load_failed(exc, subject, what, doing))
        return
    app.post_message(opened(result))


__all__ = ["Cancelled", "DetachedThreads", "OpeningApp", "detached", "load_failed", "open_detached"]
