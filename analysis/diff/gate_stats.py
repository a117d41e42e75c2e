"""The gate's noise model: a robust change between two sides' per-step samples, its bootstrap
interval, a one-sided p-value against the rule's threshold, and Benjamini–Hochberg across tests.

Each side is one or more captures (runs); each capture is a matrix ``names × steps`` of one figure
per step (a kernel's µs in that step, a step's duration).  The statistic of a side is the median
of its pooled samples; the change is ``after / before - 1`` (relative rules) or ``after - before``
(absolute rules), or the after side alone (level rules).  Its interval comes from a *moving-block*
bootstrap over steps (steps are autocorrelated: a slow step drags its neighbours), and where a
side has several captures, from a two-level bootstrap that first draws captures, then blocks
within each, so the spread between runs widens the interval.  Every draw comes from one seeded
generator, so a gate gives the same answer on every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]

#: Bootstrap draws per test; p-values resolve to 1/DRAWS.
DRAWS = 2000
#: The interval's coverage (two-sided).
LEVEL = 0.95


def block_length(steps: int) -> int:
    """The moving-block length for ``steps`` samples: ``ceil(n ** (1/3))``, the usual rate for a
    median under short-range dependence (1 for a handful of steps, 4 for 40)."""
    length = 1
    while length**3 < steps:
        length += 1
    return length


def _block_indices(steps: int, rng: np.random.Generator, draws: int) -> npt.NDArray[np.int64]:
    """``draws × steps`` column indices of moving-block resamples of ``steps`` samples."""
    length = block_length(steps)
    blocks = math.ceil(steps / length)
    starts = rng.integers(0, steps - length + 1, size=(draws, blocks))
    indices = (starts[:, :, None] + np.arange(length)[None, None, :]).reshape(draws, -1)
    return indices[:, :steps]


def _block_medians(matrix: Matrix, indices: npt.NDArray[np.int64]) -> Matrix:
    """``names × draws`` medians of ``matrix`` resampled by ``indices``, a few names at a time (a
    ``names × draws × steps`` array at once would be 128 MB for 200 names of 40 steps)."""
    out = np.empty((matrix.shape[0], indices.shape[0]), dtype=np.float64)
    chunk = max(1, 2_000_000 // max(1, indices.size))
    for first in range(0, matrix.shape[0], chunk):
        out[first : first + chunk] = np.median(matrix[first : first + chunk][:, indices], axis=2)
    return out


def resampled_medians(captures: list[Matrix], rng: np.random.Generator, draws: int = DRAWS) -> Matrix:
    """``names × draws`` medians of bootstrap resamples of one side (see the module doc).

    One capture: moving blocks over its steps.  Several: each draw picks as many captures as there
    are, with replacement, and block-resamples the steps of each; the pooled samples' median."""
    names = captures[0].shape[0]
    out = np.empty((names, draws), dtype=np.float64)
    if len(captures) == 1:
        matrix = captures[0]
        if matrix.shape[1] == 1:
            out[:] = matrix[:, :1]
            return out
        return _block_medians(matrix, _block_indices(matrix.shape[1], rng, draws))
    picks = rng.integers(0, len(captures), size=(draws, len(captures)))
    per_capture = [
        _block_medians(c, _block_indices(c.shape[1], rng, draws)) if c.shape[1] > 1 else np.repeat(c, draws, 1)
        for c in captures
    ]
    # Pooled median ≈ the median of the drawn captures' medians, weighting captures equally: a
    # long capture must not hide the spread between runs.
    stacked = np.stack(per_capture, axis=2)  # names × draws × captures
    chosen = np.take_along_axis(stacked, picks[None, :, :].repeat(names, 0), axis=2)
    out[:] = np.median(chosen, axis=2)
    return out


def side_median(captures: list[Matrix]) -> npt.NDArray[np.float64]:
    """Per name: the median of the captures' medians (one capture: the median of its steps)."""
    medians = np.stack([np.median(c, axis=1) for c in captures], axis=1)
    result: npt.NDArray[np.float64] = np.median(medians, axis=1)
    return result


def change_of(before: Matrix, after: Matrix, kind: str) -> Matrix:
    """The change for ``kind``: ``pct`` (after/before - 1, in %), ``abs``/``pt`` (after - before), or
    ``level`` (after).  A relative change from 0 is +inf when after is above 0, else 0."""
    if kind == "level":
        return after.astype(np.float64)
    if kind == "pct":
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = (after / before - 1.0) * 100.0
        zero = before == 0
        return np.where(zero, np.where(after > 0, np.inf, 0.0), ratio)
    return (after - before).astype(np.float64)


@dataclass(frozen=True)
class Tested:
    """One test's figures: ``change`` (point), ``low``/``high`` (the interval), ``p`` (one-sided,
    that the change is not past the threshold), ``exact`` (no bootstrap: one sample a side)."""

    change: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    p: npt.NDArray[np.float64]
    exact: bool


def assess_change(
    before: list[Matrix], after: list[Matrix], kind: str, op: str, threshold: float, seed: int, draws: int = DRAWS
) -> Tested:
    """Point change, bootstrap interval and p-value per name of one rule (see the module doc).

    ``op`` ``>``/``>=``: a regression is a change above ``threshold``; ``<``/``<=``: below it.  The
    p-value is the share of draws whose change is not past the threshold (0 when none are; the
    resolution is ``1/draws``).  With one sample on each side there is nothing to resample: the
    change is exact and its p-value 0 or 1."""
    rng = np.random.default_rng(seed)
    point = change_of(side_median(before)[:, None], side_median(after)[:, None], kind)[:, 0]
    exact = all(c.shape[1] == 1 for c in before) and all(c.shape[1] == 1 for c in after) and (
        len(before) == 1 and len(after) == 1
    )
    if exact:
        past = point > threshold if op.startswith(">") else point < threshold
        if op in (">=", "<="):
            past = past | (point == threshold)
        return Tested(point, point.copy(), point.copy(), np.where(past, 0.0, 1.0), True)
    drawn = change_of(resampled_medians(before, rng, draws), resampled_medians(after, rng, draws), kind)
    tail = (1.0 - LEVEL) / 2 * 100
    finite = np.where(np.isfinite(drawn), drawn, np.sign(drawn) * 1e300)
    low = np.percentile(finite, tail, axis=1)
    high = np.percentile(finite, 100 - tail, axis=1)
    if op.startswith(">"):
        not_past = (drawn < threshold) if op == ">=" else (drawn <= threshold)
    else:
        not_past = (drawn > threshold) if op == "<=" else (drawn >= threshold)
    return Tested(point, low, high, not_past.mean(axis=1), False)


def benjamini_hochberg(p_values: npt.NDArray[np.float64], q: float) -> npt.NDArray[np.bool_]:
    """Which of ``p_values`` are discoveries at false-discovery rate ``q`` (Benjamini–Hochberg:
    the largest k with p_(k) <= k q / m, and every p at or below it)."""
    m = len(p_values)
    if m == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(p_values, kind="stable")
    ranked = p_values[order]
    below = ranked <= (np.arange(1, m + 1) / m) * q
    rejected = np.zeros(m, dtype=bool)
    if below.any():
        k = int(np.nonzero(below)[0].max())
        rejected[order[: k + 1]] = True
    return rejected
