"""The gate's noise model: the change of a figure between two sides, the noise it is measured
against, a one-sided p-value against the rule's threshold, Benjamini–Hochberg across tests, and
the one-sided bound the decision uses.

Each side is one or more captures (runs); each capture is a matrix ``names × steps`` of one figure
per step (a kernel's µs in that step, a step's duration).  The statistic of a side is the **mean
per step** (several captures: the mean of the captures' means), so work that runs in some steps
only (an optimizer step every third step) counts as it costs.  The change is ``after / before - 1``
(relative rules), ``after - before`` (absolute rules) or the after side alone (level rules).

Its noise, by what the sides hold (the method, said in the report):

- ``run-to-run``: two captures or more on a side.  The spread of the capture means (pooled over
  both sides, ``captures - 2`` degrees of freedom), never below the spread of the steps within
  them: this is the noise between runs of the same code.
- ``step-to-step``: one capture a side with :data:`MIN_STEPS` steps or more.  A moving-block
  bootstrap over steps (blocks of ⌈N^⅓⌉ steps: a slow step drags its neighbours), seeded, gives the
  spread of each side's mean.  The noise between runs is not measured: a relative change must also
  pass the :data:`NOISE_FLOOR_PCT` floor.
- ``per-call``: too few steps for the bootstrap, where the figure is a sum of calls (a kernel's or
  an operator's µs): the spread of its calls' durations (calls taken as independent, their number
  per step as exact), with the same floor.
- ``too few steps``: fewer than :data:`MIN_STEPS` steps and no per-call evidence (a step's duration,
  MFU, a count of calls): there is no noise estimate; the test is not significant whatever the change.

With ``se`` the standard error of the change on the test's scale (the log ratio for a relative
rule, so that +10% and -9.1% are the same distance), the test statistic ``(change - threshold) /
se`` is read on Student's t with the method's degrees of freedom: a two-sample t-test of "past the
threshold", with the bootstrap (or the calls) supplying the spread.  The same t gives the one-sided
bound printed beside the change (:meth:`Tested.bound`), so the bound and the decision never
disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float64]

#: Bootstrap draws per side.
DRAWS = 2000
#: Fewer steps than this on a side and the step bootstrap cannot estimate the noise (a block is
#: then most of the side: every draw is nearly the sample itself).
MIN_STEPS = 4
#: With one capture a side the noise between runs is not measured: a relative change must pass
#: this much as well as the rule's threshold (nsys-ai's 2%).
NOISE_FLOOR_PCT = 2.0

STEP_TO_STEP = "step-to-step"
RUN_TO_RUN = "run-to-run"
PER_CALL = "per-call"
TOO_FEW = "too few steps"


def block_length(steps: int) -> int:
    """The moving-block length for ``steps`` samples: ``ceil(n ** (1/3))`` (1 for a handful of
    steps, 4 for 40)."""
    length = 1
    while length**3 < steps:
        length += 1
    return length


def _blocks(steps: int) -> int:
    """How many blocks of :func:`block_length` ``steps`` holds (at least 1)."""
    return max(1, math.ceil(steps / block_length(steps)))


def _block_indices(steps: int, rng: np.random.Generator, draws: int) -> npt.NDArray[np.int64]:
    """``draws × steps`` column indices of moving-block resamples of ``steps`` samples."""
    length = block_length(steps)
    blocks = math.ceil(steps / length)
    starts = rng.integers(0, steps - length + 1, size=(draws, blocks))
    indices = (starts[:, :, None] + np.arange(length)[None, None, :]).reshape(draws, -1)
    return indices[:, :steps]


def resampled_means(matrix: Matrix, rng: np.random.Generator, draws: int = DRAWS) -> Matrix:
    """``names × draws`` means of moving-block resamples of ``matrix``'s steps, a few names at a
    time (``names × draws × steps`` at once would be 128 MB for 200 names of 40 steps)."""
    indices = _block_indices(matrix.shape[1], rng, draws)
    out = np.empty((matrix.shape[0], draws), dtype=np.float64)
    chunk = max(1, 2_000_000 // max(1, indices.size))
    for first in range(0, matrix.shape[0], chunk):
        out[first : first + chunk] = matrix[first : first + chunk][:, indices].mean(axis=2)
    return out


def resampled_variance(
    matrix: Matrix, centre: npt.NDArray[np.float64], kind: str, rng: np.random.Generator, draws: int = DRAWS
) -> npt.NDArray[np.float64]:
    """Per name, the variance on the test's scale of its ``draws`` resampled means: the same
    resamples for every name (as :func:`resampled_means`), a few names at a time, so no
    ``names × draws`` matrix is held (16,000 names took 1.42 GB at once, 85 KB a name)."""
    indices = _block_indices(matrix.shape[1], rng, draws)
    out = np.empty(matrix.shape[0], dtype=np.float64)
    chunk = max(1, 2_000_000 // max(1, indices.size))
    for first in range(0, matrix.shape[0], chunk):
        means = matrix[first : first + chunk][:, indices].mean(axis=2)
        out[first : first + chunk] = np.var(_scaled(means, centre[first : first + chunk, None], kind), axis=1)
    return out


def side_mean(captures: list[Matrix]) -> npt.NDArray[np.float64]:
    """Per name: the mean of the captures' means per step (one capture: its mean per step)."""
    means = np.stack([c.mean(axis=1) for c in captures], axis=1)
    result: npt.NDArray[np.float64] = means.mean(axis=1)
    return result


def change_of(before: npt.NDArray[np.float64], after: npt.NDArray[np.float64], kind: str) -> npt.NDArray[np.float64]:
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


# -- Student's t, without SciPy --------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (``df`` at or above 1e7: the normal)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if df >= 1e7:
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t > 0 else 1.0 - tail


@lru_cache(maxsize=4096)
def t_quantile(confidence: float, df: float) -> float:
    """The t with ``P(T <= t) = confidence`` (above one half), by bisection on :func:`t_sf`."""
    alpha = 1.0 - confidence
    high = 1.0
    while t_sf(high, df) > alpha and high < 1e12:
        high *= 2.0
    low = 0.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_sf(middle, df) > alpha:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return high


# -- one rule's tests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calls:
    """One side's per-call evidence for one name: its calls' values, the side's step count, and
    per call its step and position (the k-th call of its name in that step)."""

    values: npt.NDArray[np.float64]
    steps: int
    step: npt.NDArray[np.int64]
    position: npt.NDArray[np.int64]

    def per_step(self) -> tuple[float, float, float] | None:
        """``(sum per step, its variance, degrees of freedom)``: the k-th calls of the steps are
        replicates of one piece of work, so the variance of position k across steps, summed over
        the positions, is that of a step's sum (Welch–Satterthwaite degrees of freedom); with one
        step, the calls taken as independent draws.  None without the evidence."""
        n = len(self.values)
        if n < 2 or self.steps < 1:
            return None
        total = float(self.values.sum()) / self.steps
        if len(np.unique(self.step)) >= 2:
            counts = np.bincount(self.position).astype(np.float64)
            sums = np.bincount(self.position, weights=self.values)
            squares = np.bincount(self.position, weights=self.values**2)
            kept = counts >= 2
            if not kept.any():
                return None
            c, s1, s2 = counts[kept], sums[kept], squares[kept]
            variance_k = np.maximum(s2 - s1**2 / c, 0.0) / (c - 1)
            v = variance_k / c  # the variance of position k's mean over the steps
            whole = float(v.sum())
            terms = float((v**2 / (c - 1)).sum())
            df = whole**2 / terms if terms > 0 else float((c - 1).sum())
            return total, whole, df
        per_step = n / self.steps
        return total, float(np.var(self.values, ddof=1)) / n * per_step**2, float(n - 1)


@dataclass(frozen=True)
class Tested:
    """One rule's tests, name by name.

    ``change`` is the point change in the rule's units; ``estimate``/``se``/``df`` the change, its
    standard error and degrees of freedom on the test's scale (the log ratio for relative rules);
    ``threshold`` the threshold tested, in the rule's units (the rule's, or the noise floor where
    that is stricter); ``p`` one-sided, that the change is not past it; ``method`` per name, which
    noise was measured (the module doc)."""

    change: npt.NDArray[np.float64]
    estimate: npt.NDArray[np.float64]
    se: npt.NDArray[np.float64]
    df: npt.NDArray[np.float64]
    p: npt.NDArray[np.float64]
    method: tuple[str, ...]
    threshold: float
    kind: str
    op: str

    def bound(self, alpha: float) -> npt.NDArray[np.float64]:
        """Per name, :func:`bound_of` at ``alpha``."""
        return np.array([
            bound_of(float(e), float(s), float(d), alpha, self.kind, self.op)
            for e, s, d in zip(self.estimate, self.se, self.df, strict=True)
        ])


def bound_of(estimate: float, se: float, df: float, alpha: float, kind: str, op: str) -> float:
    """The one-sided bound at confidence ``1 - alpha`` in the rule's units: the lower bound of a
    ``>`` rule's change, the upper of a ``<`` rule's; NaN without a noise estimate.  It is past the
    threshold exactly when the p-value is at or below ``alpha``."""
    if math.isnan(se) or math.isnan(estimate):
        return math.nan
    if se == 0 or math.isinf(estimate):
        return _from_scale(estimate, kind)
    sign = 1.0 if op.startswith(">") else -1.0
    return _from_scale(estimate - sign * t_quantile(1.0 - alpha, df) * se, kind)


def _to_scale(value: float, kind: str) -> float:
    """A change in the rule's units on the test's scale (``pct``: the log ratio)."""
    if kind != "pct":
        return value
    return math.log1p(value / 100.0) if value > -100.0 else -math.inf


def _from_scale(value: float, kind: str) -> float:
    return math.expm1(value) * 100.0 if kind == "pct" else value


def _scaled(values: npt.NDArray[np.float64], centre: npt.NDArray[np.float64], kind: str) -> npt.NDArray[np.float64]:
    """``values`` around ``centre`` on the test's scale: relative to it for ``pct`` (the delta
    method of the log), as they are otherwise."""
    if kind != "pct":
        return values
    with np.errstate(divide="ignore", invalid="ignore"):
        result: npt.NDArray[np.float64] = values / centre
    return result


def _step_variance(matrix: Matrix, centre: npt.NDArray[np.float64], kind: str, rng: np.random.Generator,
                   draws: int, counts: Matrix | None = None) -> npt.NDArray[np.float64]:
    """Per name, the variance of one capture's mean per step on the test's scale: the moving-block
    bootstrap's (times n/(n-1), its small-sample bias) with :data:`MIN_STEPS` steps or more, the
    steps' own variance over n with fewer, 0 with one.

    ``counts`` (the name's calls per step): where they differ between steps (work every third
    step), the steps are strata by their count, the count of each step taken as the schedule it
    is: the variance is the strata's, sum of ``(n_h/n)² s_h² / n_h``, so which steps ran the work
    is not mistaken for noise."""
    n = matrix.shape[1]
    if n >= MIN_STEPS:
        variance = resampled_variance(matrix, centre, kind, rng, draws) * n / (n - 1)
    elif n >= 2:
        variance = np.var(_scaled(matrix, centre[:, None], kind), axis=1, ddof=1) / n
    else:
        variance = np.zeros(matrix.shape[0])
    if counts is not None and n >= 2:
        varying = np.nonzero((counts != counts[:, :1]).any(axis=1))[0]
        for i in varying:
            values = _scaled(matrix[i], centre[i : i + 1], kind)
            total = 0.0
            for count in np.unique(counts[i]):
                stratum = values[counts[i] == count]
                if len(stratum) >= 2:
                    total += (len(stratum) / n) ** 2 * float(np.var(stratum, ddof=1)) / len(stratum)
            variance[i] = total
    result: npt.NDArray[np.float64] = np.nan_to_num(variance, nan=0.0)
    return result


def _capture_noise(captures: list[Matrix], centre: npt.NDArray[np.float64], kind: str,
                   rng: np.random.Generator, draws: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """``(sum of squared deviations of the capture means, within-capture variance of the side's
    mean)`` per name, on the test's scale."""
    means = np.stack([c.mean(axis=1) for c in captures], axis=1)
    deviations = _scaled(means - centre[:, None], centre[:, None], kind)
    within = np.mean([_step_variance(c, centre, kind, rng, draws) for c in captures], axis=0) / len(captures)
    return np.nan_to_num((deviations**2).sum(axis=1), nan=0.0), within


def _past(value: float, threshold: float, op: str) -> bool:
    return {">": value > threshold, ">=": value >= threshold, "<": value < threshold}.get(op, value <= threshold)


def _p_value(estimate: float, se: float, df: float, threshold: float, op: str) -> float:
    """One-sided: that the change is not past ``threshold`` (all on the test's scale)."""
    if math.isnan(estimate) or math.isnan(se):
        return 1.0
    if se == 0 or math.isinf(estimate):
        return 0.0 if _past(estimate, threshold, op) else 1.0
    t = (estimate - threshold) / se
    return t_sf(t if op.startswith(">") else -t, df)


def assess_change(
    before: list[Matrix], after: list[Matrix], kind: str, op: str, threshold: float, seed: int, draws: int = DRAWS,
    calls: tuple[list[Calls | None], list[Calls | None]] | None = None, floor: float = NOISE_FLOOR_PCT,
    counts: tuple[list[Matrix], list[Matrix]] | None = None,
) -> Tested:
    """Each name's change, its noise and p-value for one rule (see the module doc).

    ``op`` ``>``/``>=``: a regression is a change above ``threshold``; ``<``/``<=``: below it.
    ``calls``: per name, each side's per-call evidence (None where the figure has none), used when
    a side has too few steps.  ``floor``: the relative floor applied when the noise between runs
    is not measured.  ``counts``: each side's calls per step, beside a time (:func:`_step_variance`)."""
    rng = np.random.default_rng(seed)
    level = kind == "level"
    b_mean, a_mean = side_mean(before), side_mean(after)
    point = change_of(b_mean, a_mean, kind)
    names = len(point)
    runs = len(after) >= 2 if level else max(len(before), len(after)) >= 2
    steps_b = min(c.shape[1] for c in before)
    steps_a = min(c.shape[1] for c in after)
    enough = steps_a >= MIN_STEPS and (level or steps_b >= MIN_STEPS)
    tested_threshold = threshold
    if kind == "pct" and not runs and floor > 0:
        tested_threshold = max(threshold, floor) if op.startswith(">") else min(threshold, -floor)
    scale_threshold = _to_scale(tested_threshold, kind)
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = np.log(a_mean / b_mean) if kind == "pct" else point.copy()
    if kind == "pct":
        estimate = np.where((b_mean == 0) & (a_mean > 0), np.inf, np.where(b_mean == 0, 0.0, estimate))
    se = np.full(names, np.nan)
    df = np.full(names, np.nan)
    methods = [TOO_FEW] * names
    if runs:
        a_ss, a_within = _capture_noise(after, a_mean, kind, rng, draws)
        if level:
            pooled_df = len(after) - 1
            variance = np.maximum(a_ss / pooled_df / len(after), a_within)
        else:
            b_ss, b_within = _capture_noise(before, b_mean, kind, rng, draws)
            pooled_df = len(before) + len(after) - 2
            pooled = (a_ss + b_ss) / pooled_df
            variance = np.maximum(pooled / len(after), a_within) + np.maximum(pooled / len(before), b_within)
        se, df, methods = np.sqrt(variance), np.full(names, float(pooled_df)), [RUN_TO_RUN] * names
    elif enough:
        b_counts, a_counts = counts if counts is not None else ([None], [None])
        variance = _step_variance(after[0], a_mean, kind, rng, draws, a_counts[0])
        if not level:
            variance = variance + _step_variance(before[0], b_mean, kind, rng, draws, b_counts[0])
        se = np.sqrt(variance)
        # A moving-block bootstrap resamples blocks, not steps: its spread has about as many
        # degrees of freedom as there are blocks.
        blocks_a, blocks_b = _blocks(steps_a), _blocks(steps_b)
        df = np.full(names, float(max(1, blocks_a - 1 if level else blocks_a + blocks_b - 2)))
        methods = [STEP_TO_STEP] * names
    elif calls is not None:
        for i in range(names):
            evidence = _per_call(calls[0][i] if not level else None, calls[1][i], kind, level)
            if evidence is not None:
                estimate[i], se[i], df[i] = evidence
                methods[i] = PER_CALL
    p = np.array([
        _p_value(float(estimate[i]), float(se[i]), float(df[i]), scale_threshold, op) for i in range(names)
    ])
    return Tested(point, estimate, se, df, p, tuple(methods), tested_threshold, kind, op)


def _per_call(before: Calls | None, after: Calls | None, kind: str, level: bool) -> tuple[float, float, float] | None:
    """``(estimate, se, df)`` of a sum of calls per step from its calls (:meth:`Calls.per_step`),
    or None without the evidence on a side."""
    sides = [after] if level else [before, after]
    figures = []
    for side in sides:
        figure = side.per_step() if side is not None else None
        if figure is None:
            return None
        total, variance, df = figure
        if kind == "pct":
            if total <= 0:
                return None
            variance = variance / total**2
        figures.append((total, variance, df))
    if level:
        value, variance, df = figures[0]
        return value, math.sqrt(variance), df
    (b, vb, db), (a, va, da) = figures
    terms = (vb**2 / db if db > 0 else 0.0) + (va**2 / da if da > 0 else 0.0)
    df = (vb + va) ** 2 / terms if terms > 0 else db + da
    estimate = math.log(a / b) if kind == "pct" else a - b
    return estimate, math.sqrt(vb + va), max(df, 1.0)


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


def bh_level(discoveries: int, tests: int, q: float) -> float:
    """The one-sided level every test was decided at: ``max(R, 1) q / m`` for R discoveries of m
    tests (each discovery has p at or below it and every other test p above it, so the bound at
    ``1 -`` this level is past the threshold exactly for the discoveries; Benjamini and Yekutieli's
    false-coverage-rate intervals)."""
    return max(discoveries, 1) * q / max(tests, 1)
