"""Python's cyclic garbage collector held while the command starts, resumed once a trace is read.

Starting the viewer imports Textual, Polars and the viewer's modules: about 56,000 objects, over
which the collector ran 122 young and 12 older collections (about 35 ms of the interpreter's lock,
while the trace is read on other threads) and freed 462 objects. Modules, classes and functions
live as long as the process, so scanning them finds nothing. The command line therefore holds
collection from its first line (:func:`hold`), and the first read of a trace or a job's open
resumes it (:func:`resume`): what exists by then is frozen (``gc.freeze``: never scanned again)
and collection runs as usual for the rest of the session. Measured (fresh processes, medians of
7, interleaved): the viewer's first screen of gpt2_train_big 0.582 → 0.545 s, the cold kernel
export 0.493 → 0.487 s. The viewer imports Textual after its read has begun, so there the first
screen resumes it (:func:`until_first_screen`), or at the latest :data:`VIEWER_LIMIT_S` after the
viewer starts. A program that imports profview as a library never holds it.
"""

from __future__ import annotations

import gc

_held = False
#: The viewer resumes collection at its first screen, not at the end of the first read.
_until_first_screen = False
#: Seconds after the viewer starts when collection resumes even without a first screen (a load
#: that fails, a comparison, a trace that takes minutes to read).
VIEWER_LIMIT_S = 5.0


def hold() -> None:
    """Stop cyclic collection until :func:`resume` (nothing, if the program had already stopped it)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def until_first_screen() -> None:
    """The viewer's start: a read's end leaves collection held (the viewer's own imports go on);
    the first screen, or :data:`VIEWER_LIMIT_S`, resumes it."""
    global _until_first_screen
    _until_first_screen = _held


def resume_after_read() -> None:
    """A trace or job read: the command's start is over, unless the viewer is still starting."""
    if not _until_first_screen:
        resume()


def resume() -> None:
    """Freeze what exists and collect as usual again, if :func:`hold` stopped collection."""
    global _held, _until_first_screen
    _until_first_screen = False
    if _held:
        _held = False
        gc.freeze()
        gc.enable()


class Paused:
    """No cyclic collection from construction until :meth:`end` (collection restored as it was):
    for building many small acyclic objects at once, such as the documents and summaries of a
    re-opened job's 10,000 ranks, over which the collector's older generations would otherwise
    rescan everything built so far (measured: about a fifth of that re-open's time) and find
    nothing to free.  A context manager: its exit ends it."""

    def __init__(self) -> None:
        self._enabled = gc.isenabled()
        gc.disable()

    def end(self) -> None:
        """Collection as it was before (once; again: nothing)."""
        if self._enabled:
            self._enabled = False
            gc.enable()

    def __enter__(self) -> Paused:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.end()
