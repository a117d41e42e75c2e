"""Linear or not: the same work at two sizes, timed, compared by ratio (issue 35).

A ratio, not a time: a loaded machine slows both sizes alike.  Work that is linear in its input
takes about ``factor`` times longer on ``factor`` times the input; quadratic work ``factor**2``
times.  The bound sits between the two, and each size is timed at its best of ``repeat`` runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: Allowed growth over linear before work counts as quadratic (quadratic is ``factor`` times more).
SLACK = 2.5
#: Seconds of fixed cost (imports, thread start-up) forgiven at the larger size.
FIXED_S = 0.05


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    """The shortest of ``repeat`` timed runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def assert_linear(run: Callable[[int], object], small: int, *, factor: int = 8, repeat: int = 2) -> None:
    """``run(size)`` at ``small`` and ``factor * small`` grows like the size, not its square."""
    run(small)  # warm: imports and first-use compilation are not the work
    little = best_seconds(lambda: run(small), repeat)
    big = best_seconds(lambda: run(factor * small), repeat)
    assert big <= SLACK * factor * little + FIXED_S, (
        f"{factor}x the input took {big / max(little, 1e-9):.0f}x the time ({little:.3f} s -> {big:.3f} s): "
        "not linear"
    )
