"""JSON nested deeper than a decoder can follow: refused in one line, whatever the depth.

msgspec (both readers' decoder) raises ``RecursionError`` past about 1,000 levels of ``[``/``{``.
No profiler writes that: such a document is refused, naming the file, on every reader.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ..errors import ProfviewError

P = ParamSpec("P")
R = TypeVar("R")
DEEP_NESTING = "JSON nested deeper than profview reads (about 1,000 levels of [ and {): not a profiler's trace"


def refuse_deep_nesting(reader: Callable[P, R]) -> Callable[P, R]:
    """Wrap a reader whose second argument is the file's path: ``RecursionError`` becomes a
    :class:`ProfviewError` naming it."""

    @functools.wraps(reader)
    def read(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return reader(*args, **kwargs)
        except RecursionError:
            path = args[1] if len(args) > 1 else kwargs.get("path")
            raise ProfviewError(str(path) if path is not None else None, DEEP_NESTING) from None

    return read
