"""A trace load started before the viewer's own imports, so that the parse overlaps them.

The viewer needs Textual (about a third of a second to import) before it can show anything;
the parse needs Polars and the file.  ``profview TRACE`` starts the load here first, on a daemon
thread (the scanner, the decompressor and Polars run without the GIL), then imports the viewer,
which takes the result with :meth:`BackgroundLoad.result` (issue 13: the first screen).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .trace_profile import Profile


class BackgroundLoad:
    """``loading.load(path, ...)`` running on a daemon thread from construction on; then ``then(profile)``
    on the same thread, if given (the viewer's preparation of its first screen: True once done,
    kept as :attr:`prepared`), so that a cached re-open's tables are built while Textual imports."""

    def __init__(
        self,
        path: str,
        *,
        use_cache: bool = True,
        run: str | None = None,
        comm_pattern: str | None = None,
        step_range: str | None = None,
        then: Callable[[Profile], bool] | None = None,
    ) -> None:
        self.path = path
        self.then = then
        #: Whether ``then`` prepared the profile (False: the viewer's load thread does it).
        self.prepared = False
        self._options = {"use_cache": use_cache, "run": run, "comm_pattern": comm_pattern, "step_range": step_range}
        self._profile: Profile | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._work, name="profview-early-load", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            from .loading import load

            self._profile = load(self.path, **self._options)  # type: ignore[arg-type]
            if self.then is not None:
                self.prepared = self.then(self._profile)
        except BaseException as exc:  # handed to the waiting thread as it is
            self._error = exc
        finally:
            self._done.set()

    def done(self) -> bool:
        """Whether the load has finished (either way)."""
        return self._done.is_set()

    def result(self) -> Profile:
        """The loaded profile (waits for it); raises what the load raised."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._profile is not None
        return self._profile
