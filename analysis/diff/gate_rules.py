"""The gate's rules: ``VIEW[SELECTOR].METRIC OP THRESHOLD`` parsed, and evaluated over per-step samples.

A rule names a view (``kernels``, ``ops``, ``steps``, ``phases``, ``memory``, ``efficiency``,
``categories``, ``collectives``, ``new_kernels``), optionally a regex selector over its names
(``kernels["gemm|xmma"]``), a metric, an operator (``>``, ``>=``, ``<``, ``<=``) and a threshold.
A *signed* threshold is a change: ``+5%`` relative (after / before - 1), ``-2pt`` in percentage
points, ``+256MiB``, ``+300us`` or ``+0`` absolute.  An *unsigned* one is a level the after side
must not pass (``new_kernels.share > 1%``).  ``sql:QUERY OP THRESHOLD`` is a query rule (its
samples come from the query's result).

Each name a rule selects is one test (:mod:`.gate_stats`): its per-step samples on each side, the
change, its interval and p-value.  :func:`decide` then controls the false-discovery rate over every
test of every rule (Benjamini–Hochberg) and gives each test a status: ``regression`` (significant
and past the threshold), ``not significant`` (past it by its change, but within the noise: a
pass unless the gate is told otherwise), ``pass`` (within the threshold; with ``strict``,
significantly so).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from ...errors import ProfviewError
from ..trace.name_rules import pattern_problem
from .gate_samples import EFFICIENCY_METRICS, KERNEL_METRICS, OP_METRICS, OUTSIDE, PHASE_METRICS
from .gate_stats import (
    DRAWS,
    TOO_FEW,
    Calls,
    Tested,
    assess_change,
    benjamini_hochberg,
    bh_level,
    bound_of,
    side_mean,
)

STEP_METRICS = (
    "duration_us", "kernel_us", "memcpy_us", "memset_us", "communication_us", "prewindow_us", "runtime_us",
    "dataloader_us", "cpu_exec_us", "other_us",
)
#: Each view's metrics (the first is the one shares are taken over, for ``min_share``).
VIEWS: dict[str, tuple[str, ...]] = {
    "kernels": KERNEL_METRICS,
    "ops": OP_METRICS,
    "steps": STEP_METRICS,
    "phases": PHASE_METRICS,
    "memory": ("peak_bytes",),
    "efficiency": EFFICIENCY_METRICS,
    "new_kernels": ("share",),
    "categories": KERNEL_METRICS,
    "collectives": KERNEL_METRICS,
}
#: Views whose names add up to a whole (a name absent from a step counts 0 there; ``min_share`` applies).
ADDITIVE = frozenset({"kernels", "ops", "categories", "collectives"})
PERCENT_METRICS = frozenset({"mfu", "share", "gpu_busy_pct"})
BYTE_METRICS = frozenset({"peak_bytes"})

_UNITS: dict[str, tuple[str, float]] = {
    "us": ("time", 1.0), "ms": ("time", 1e3), "s": ("time", 1e6),
    "b": ("bytes", 1.0), "kb": ("bytes", 1e3), "mb": ("bytes", 1e6), "gb": ("bytes", 1e9),
    "kib": ("bytes", 2.0**10), "mib": ("bytes", 2.0**20), "gib": ("bytes", 2.0**30),
}
_VIEW = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*")
#: What follows a rule's view (and selector): linear to match, as it has no nested repetition.
_TAIL = re.compile(r"\s*\.\s*(?P<metric>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>>=|<=|>|<)\s*(?P<threshold>\S+)\s*")
_EXPECTED = 'expected VIEW[SELECTOR].METRIC OP THRESHOLD, e.g. kernels["gemm"].total_us > +5%'
_SQL_TAIL = re.compile(r"(?P<op>>=|<=|>|<)\s*(?P<threshold>[+-]?[0-9.]+[A-Za-z%]*)\s*$")
_THRESHOLD = re.compile(r"^(?P<sign>[+-])?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?P<unit>[A-Za-z%]*)$")


@dataclass(frozen=True)
class Rule:
    """One parsed rule. ``kind``: ``pct``, ``pt``, ``abs`` (changes) or ``level``; ``threshold`` in
    the metric's own units (µs, bytes, %, calls), or in % for ``pct``."""

    text: str
    view: str
    selector: str | None
    metric: str
    op: str
    threshold: float
    kind: str
    sql: str | None = None


def bad_rule(text: str, token: str, why: str) -> ProfviewError:
    """The one-line error of a rule: the rule, what is wrong, and the token at fault."""
    return ProfviewError(None, f"bad rule {_short(text, 120)!r}: {why} ({_short(token)!r})")


def parse_threshold(
    text: str, token: str, metric: str, byte_metrics: Collection[str] = BYTE_METRICS
) -> tuple[float, str]:
    """``(value, kind)`` of a threshold token for ``metric`` (see the module doc); a byte unit fits
    the metrics of ``byte_metrics`` (a memory snapshot's gate passes its own)."""
    found = _THRESHOLD.match(token)
    if found is None:
        raise bad_rule(text, token, "a threshold is a number with an optional sign and unit, e.g. +5% or +256MiB")
    value = float(found["number"])
    sign, unit = found["sign"], found["unit"].lower()
    if sign == "-":
        value = -value
    if unit == "%":
        if not sign and metric not in PERCENT_METRICS and metric != "value":  # a query says its own unit
            raise bad_rule(
                text, token, f"an unsigned % is a level of a percentage metric, and {metric} is not one: "
                f"write +{found['number']}% for a change",
            )
        return value, ("pct" if sign else "level")
    if unit == "pt":
        if metric not in PERCENT_METRICS:
            raise bad_rule(text, token, f"pt (percentage points) is for a percentage metric, not {metric}")
        return value, ("pt" if sign else "level")
    kind = "abs" if sign else "level"
    if unit == "":
        return value, kind
    if unit not in _UNITS:
        raise bad_rule(text, token, "unknown unit (%, pt, us, ms, s, B, KB, MB, GB, KiB, MiB, GiB)")
    family, scale = _UNITS[unit]
    wanted = "bytes" if metric in byte_metrics else ("time" if metric.endswith("_us") else None)
    if wanted != family:
        raise bad_rule(text, token, f"a {family} unit does not fit {metric}")
    return value * scale, kind


def parse_rule(text: str) -> Rule:
    """A :class:`Rule` from its text; a :class:`ProfviewError` naming the bad token otherwise."""
    stripped = text.strip()
    if stripped.startswith("sql:"):
        tail = _SQL_TAIL.search(stripped)
        if tail is None:  # the last word is where an operator and a threshold were wanted
            raise bad_rule(text, stripped.split()[-1], "a sql: rule ends with an operator and a threshold, e.g. > +5%")
        query = stripped[4 : tail.start()].strip()
        doubled = re.search(r"[<>=!]+$", query)
        if doubled is not None:  # '>> +5%', '=> +5%': the operator is at fault, not the query
            raise bad_rule(text, doubled.group() + tail["op"], "the operator is one of >, >=, <, <=")
        if len(query) >= 2 and query[0] == query[-1] and query[0] in "'\"":  # sql:'SELECT …' > +5%
            query = query[1:-1].strip()  # one pair, never a quote the query's own text ends with
        if not query:
            raise bad_rule(text, "sql:", "an empty query")
        value, kind = parse_threshold(text, tail["threshold"], "value")
        return Rule(stripped, "sql", None, "value", tail["op"], value, kind, sql=query)
    view, selector, found = split_rule(text, stripped)
    metric = found["metric"]
    if view not in VIEWS:
        raise bad_rule(text, view, f"unknown view (views: {', '.join(VIEWS)}, sql:)")
    if metric not in VIEWS[view]:
        raise bad_rule(text, metric, f"{view} has no metric of that name (metrics: {', '.join(VIEWS[view])})")
    if selector is not None:
        problem = pattern_problem(selector)  # Polars' engine runs it, so Polars' engine checks it
        if problem is not None:
            raise bad_rule(text, _short(selector), f"not a regular expression the engine can run: {problem}")
    value, kind = parse_threshold(text, found["threshold"], metric)
    return Rule(stripped, view, selector, metric, found["op"], value, kind)


def _short(token: str, most: int = 60) -> str:
    return token if len(token) <= most else token[: most - 1] + "…"


def split_rule(text: str, stripped: str) -> tuple[str, str | None, re.Match[str]]:
    """A rule's view, selector and the match of the rest (metric, operator, threshold), read left
    to right in time linear in the rule: the selector runs from its opening quote to the same
    quote before the rule's last ``]`` (a threshold or metric never holds one)."""
    head = _VIEW.match(stripped)
    if head is None:
        raise bad_rule(text, _short(stripped.split()[0] if stripped.split() else text), _EXPECTED)
    view, position, selector = head.group(1), head.end(), None
    if stripped.startswith("[", position):
        close = stripped.rfind("]")
        inner = stripped[position + 1 : close].strip() if close > position else ""
        if len(inner) < 2 or inner[0] not in "\"'" or inner[-1] != inner[0]:
            raise bad_rule(text, _short(stripped[position:close + 1] or stripped[position:]),
                       'a selector is a quoted regex in brackets, e.g. kernels["gemm"]')
        selector, position = inner[1:-1], close + 1
    found = _TAIL.fullmatch(stripped, position)
    if found is None:
        token, why = _tail_fault(stripped, position)
        raise bad_rule(text, _short(token), why)
    return view, selector, found


_DOT = re.compile(r"\s*\.\s*")
_METRIC = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATOR = re.compile(r"\s*(>=|<=|>|<)\s*")
_WORD = re.compile(r"\s*(\S+)")


def _tail_fault(stripped: str, position: int) -> tuple[str, str]:
    """The token at fault in a rule's tail (``.METRIC OP THRESHOLD`` from ``position``) that
    :data:`_TAIL` refused, and what was expected there: read part by part, left to right, so the
    token named is the first one that is wrong (``>>``, ``=<``, a word after the threshold), or the
    last one read when the rule ends too soon."""
    def word(at: int) -> str | None:
        found = _WORD.match(stripped, at)
        return found.group(1) if found else None

    dot = _DOT.match(stripped, position)
    if dot is None:
        return word(position) or stripped.strip(), f"expected .METRIC after the view: {_EXPECTED}"
    metric = _METRIC.match(stripped, dot.end())
    if metric is None:
        return word(dot.end()) or ".", f"expected a metric name after the '.': {_EXPECTED}"
    op = _OPERATOR.match(stripped, metric.end())
    if op is None or stripped[op.end() : op.end() + 1] in ("<", ">", "="):  # '=<', '>>', '=>'
        after = word(metric.end())
        if after is None:
            return metric.group(), f"the rule ends after its metric: expected an operator and a threshold: {_EXPECTED}"
        return after, f"expected an operator (>, >=, <, <=) after the metric: {_EXPECTED}"
    threshold = _WORD.match(stripped, op.end())
    if threshold is None:
        return op.group(1), f"the rule ends after its operator: expected a threshold: {_EXPECTED}"
    extra = word(threshold.end()) or threshold.group(1)
    return extra, f"unexpected text after the threshold {threshold.group(1)!r}: {_EXPECTED}"


@dataclass
class Finding:
    """One name of one rule: its figures and, after :func:`decide`, its ``status``, its one-sided
    ``bound`` at ``confidence`` (the bound the decision used) and, with ``strict``, the other one.

    ``estimate``/``se``/``df`` are the change, its standard error and degrees of freedom on the
    test's scale (:mod:`.gate_stats`); ``method`` the noise measured; ``threshold`` the one tested
    (the rule's, or the noise floor where that is stricter)."""

    rule: Rule
    name: str
    before: float
    after: float
    change: float
    p: float
    samples: tuple[int, int]
    method: str
    threshold: float
    estimate: float
    se: float
    df: float
    bound: float = math.nan
    confidence: float = math.nan
    status: str = "pass"

    @property
    def measured(self) -> bool:
        """Whether the noise was measured (a method other than too few steps)."""
        return self.method != TOO_FEW


@dataclass
class RuleResult:
    """A rule's tests, and what it did not test: names on one side only, names under ``min_share``,
    work outside every step (``outside_us``: launched before the profiling window or between
    steps, its own sample, not compared)."""

    rule: Rule
    tests: list[Finding] = field(default_factory=list)
    one_side: list[str] = field(default_factory=list)
    below_share: int = 0
    #: Every name was under ``min_share``, so their sum was tested as one name.
    summed_small: bool = False
    note: str | None = None
    outside: tuple[float, float] = (0.0, 0.0)
    seconds: float = 0.0
    #: Its selector matches no name on either side (a typo, or the wrong view): said always, and
    #: a failure under ``--strict``.
    matched_nothing: bool = False

    @property
    def methods(self) -> list[str]:
        """The noise methods of its tests, each once, in order."""
        return list(dict.fromkeys(t.method for t in self.tests))


def _matrices(
    captures: list[pl.DataFrame], names: list[str], metric: str, fill: float | None
) -> list[np.ndarray]:
    """Per capture: ``names × steps`` of ``metric`` (a missing name/step: ``fill``; None: the
    name's own mean in that capture, so it neither adds nor moves the mean).  Built by one
    group-by and one scatter per capture: linear in names × steps, never a column at a time."""
    index = pl.DataFrame({"name": names}, schema={"name": pl.String}).with_row_index("_row")
    out = []
    for frame in captures:
        steps = frame["step"].drop_nulls().unique().sort().to_numpy()
        if not len(steps):
            steps = np.zeros(1, dtype=np.int64)
        cells = (
            frame.select(pl.col("name").cast(pl.String), "step", metric)
            .filter(pl.col(metric).is_not_null() & pl.col("step").is_not_null())
            .join(index, on="name", how="inner")
            .group_by("_row", "step")
            .agg(pl.col(metric).cast(pl.Float64).sum())
        )
        matrix = np.full((len(names), len(steps)), np.nan, dtype=np.float64)
        if cells.height:
            columns = np.searchsorted(steps, cells["step"].to_numpy())
            matrix[cells["_row"].to_numpy(), columns] = cells[metric].to_numpy()
        if fill is not None:
            matrix = np.nan_to_num(matrix, nan=fill)
        else:
            means = np.nanmean(np.where(np.isnan(matrix).all(axis=1, keepdims=True), 0.0, matrix), axis=1)
            matrix = np.where(np.isnan(matrix), means[:, None], matrix)
        out.append(matrix)
    return out


def _weights(rule: Rule, frame: pl.DataFrame) -> tuple[dict[str, float], float]:
    """Per name, the time ``min_share`` weighs it by, and the view's whole time: a kernel's µs of
    all kernel µs; an operator's total of all operators' self time (device, or host for a host
    metric; ``calls``: the larger share of the two), so nested operators never pass 100%."""
    if rule.view != "ops":
        totals = frame.group_by("name").agg(pl.col("total_us").sum())
        return dict(totals.iter_rows()), float(frame["total_us"].sum() or 0.0)
    sums = frame.group_by("name").agg(pl.col(c).sum() for c in OP_METRICS)
    pairs = [("host_total_us", "host_self_us")] if rule.metric.startswith("host") else [
        ("device_total_us", "device_self_us")
    ]
    if rule.metric == "calls":
        pairs = [("device_total_us", "device_self_us"), ("host_total_us", "host_self_us")]
    shares: dict[str, float] = {}
    for total, own in pairs:
        whole = float(frame[own].sum() or 0.0)
        for name, value in sums.select("name", total).iter_rows():
            share = float(value or 0.0) / whole if whole > 0 else 0.0
            shares[name] = max(shares.get(name, 0.0), share)
    return shares, 1.0


def _per_call_evidence(
    frames: list[pl.DataFrame] | None, names: list[str], metric: str, steps: int
) -> list[Calls | None]:
    """Per name, one side's calls of ``metric`` (one capture's per-call frame), or None."""
    if not frames or len(frames) != 1 or metric not in frames[0].columns:
        return [None] * len(names)
    frame = frames[0].filter((pl.col("step") != OUTSIDE) & pl.col(metric).is_not_null())
    grouped = {
        name: (values, step, position)
        for name, values, step, position in frame.group_by("name").agg(metric, "step", "position").iter_rows()
    }
    out: list[Calls | None] = []
    for name in names:
        if name not in grouped:
            out.append(None)
            continue
        values, step, position = grouped[name]
        out.append(Calls(
            np.asarray(values, dtype=np.float64), steps, np.asarray(step, dtype=np.int64),
            np.asarray(position, dtype=np.int64),
        ))
    return out


def evaluate(
    rule: Rule, before: list[pl.DataFrame], after: list[pl.DataFrame], *, min_share: float = 0.0, seed: int = 0,
    draws: int = DRAWS, calls: tuple[list[pl.DataFrame], list[pl.DataFrame]] | None = None,
) -> RuleResult:
    """The tests of ``rule`` over per-step sample frames (``name``, ``step``, the metric) of each
    side's captures.  Names present on one side only are not tested by a relative or level rule
    (a change from nothing has no ratio): they are listed.  Additive views ignore names whose
    share of the view's time is under ``min_share`` % on both sides.  Rows of step
    :data:`OUTSIDE` (work outside every step) are no sample: their sum is kept to be said.
    ``calls``: each side's per-call frames (``name``, ``step``, the metric per call), the evidence
    where a side has too few steps."""
    result = RuleResult(rule)
    metric = rule.metric
    outside_us = outside_calls = 0.0

    def chosen(frame: pl.DataFrame) -> pl.DataFrame:
        if rule.selector is None:
            return frame
        # Polars' engine: linear in the names, whatever the pattern (never Python's backtracking re)
        return frame.filter(pl.col("name").cast(pl.String).str.contains(rule.selector))

    def split(frames: list[pl.DataFrame]) -> list[pl.DataFrame]:
        nonlocal outside_us, outside_calls
        inside = []
        for frame in frames:
            if frame.height and "step" in frame.columns:
                out = chosen(frame.filter(pl.col("step") == OUTSIDE))
                if out.height and "total_us" in out.columns:
                    outside_us += float(out["total_us"].sum() or 0.0)
                    outside_calls += float(out["calls"].sum() or 0.0) if "calls" in out.columns else 0.0
                frame = frame.filter(pl.col("step") != OUTSIDE)
            inside.append(frame)
        return inside

    before, after = split(before), split(after)
    result.outside = (outside_us, outside_calls)

    def selected(frames: list[pl.DataFrame]) -> tuple[dict[str, float], dict[str, float]]:
        present: dict[str, float] = {}
        shares: dict[str, float] = {}
        for frame in frames:
            rows = frame.filter(pl.col(metric).is_not_null())
            if rule.view in ADDITIVE and rows.height:
                weights, whole = _weights(rule, frame)
                for name, value in weights.items():
                    shares[name] = max(shares.get(name, 0.0), value / whole * 100 if whole > 0 else 0.0)
            for name in chosen(rows)["name"].unique().to_list():
                present[name] = 1.0
        return present, shares

    (names_before, share_before), (names_after, share_after) = selected(before), selected(after)
    if rule.kind == "level":
        names = sorted(names_after)
    else:
        both = set(names_before) & set(names_after)
        additive_abs = rule.view in ADDITIVE and rule.kind == "abs"
        names = sorted(set(names_before) | set(names_after)) if additive_abs else sorted(both)
        result.one_side = [] if additive_abs else sorted(set(names_before) ^ set(names_after))
    if rule.view in ADDITIVE and min_share > 0:
        def share(name: str) -> float:
            return max(share_before.get(name, 0.0), share_after.get(name, 0.0))

        kept = [n for n in names if share(n) >= min_share]
        result.below_share = len(names) - len(kept)
        result.one_side = [n for n in result.one_side if share(n) >= min_share]
        if not kept and names:  # every name is small: their sum is tested, so +10% of all is seen
            label = f"(all {len(names):,} names, each under min_share {min_share:g}%)"

            def summed(frames: list[pl.DataFrame], chosen_names: list[str] = names) -> list[pl.DataFrame]:
                return [
                    f.filter(pl.col("name").cast(pl.String).is_in(chosen_names)).with_columns(
                        pl.lit(label, dtype=pl.String).alias("name")
                    )
                    for f in frames
                ]

            before, after = summed(before), summed(after)
            kept = [label]
            result.summed_small = True
        names = kept
    if not names:
        if not names_before and not names_after:
            result.matched_nothing = rule.selector is not None and any(f.height for f in (*before, *after))
            result.note = (
                f"the selector {rule.selector!r} matches no name of {rule.view} on either side (a typo?)"
                if result.matched_nothing else "no samples on either side"
            )
        return result
    fill = 0.0 if rule.view in ADDITIVE else None
    after_m = _matrices(after, names, metric, fill)
    before_m = _matrices(before, names, metric, fill) if rule.kind != "level" else [np.zeros_like(m) for m in after_m]
    evidence = None
    if calls is not None:
        evidence = (
            _per_call_evidence(calls[0], names, metric, before_m[0].shape[1]),
            _per_call_evidence(calls[1], names, metric, after_m[0].shape[1]),
        )
    counts = None
    if rule.view in ADDITIVE and metric != "calls" and all("calls" in f.columns for f in (*before, *after)):
        after_c = _matrices(after, names, "calls", 0.0)
        counts = (_matrices(before, names, "calls", 0.0) if rule.kind != "level" else after_c, after_c)
    tested: Tested = assess_change(
        before_m, after_m, rule.kind, rule.op, rule.threshold, seed, draws, calls=evidence, counts=counts
    )
    b_mean, a_mean = side_mean(before_m), side_mean(after_m)
    samples = (sum(m.shape[1] for m in before_m), sum(m.shape[1] for m in after_m))
    for i, name in enumerate(names):
        result.tests.append(
            Finding(
                rule, name, float(b_mean[i]), float(a_mean[i]), float(tested.change[i]), float(tested.p[i]),
                samples, tested.method[i], tested.threshold, float(tested.estimate[i]), float(tested.se[i]),
                float(tested.df[i]),
            )
        )
    return result


def _past(op: str, threshold: float, value: float) -> bool:
    if math.isnan(value):
        return False
    if op == ">":
        return value > threshold
    if op == ">=":
        return value >= threshold
    if op == "<":
        return value < threshold
    return value <= threshold


#: A test's statuses: a regression (significant and past the threshold), accepted (a regression
#: an ``--accept`` bound covers), not significant (past the threshold within the noise), pass.
STATUSES = ("regression", "accepted", "not significant", "pass")


def decide(results: list[RuleResult], q: float = 0.05, *, strict: bool = False) -> int:
    """Each test's status, the false-discovery rate controlled at ``q`` across every test of every
    rule (Benjamini–Hochberg); returns the number of tests.

    ``regression``: a discovery whose change is past the threshold: significant and past it.
    ``not significant``: the change is past the threshold but within the noise (it passes unless
    the gate is told ``--inconclusive fail``).  ``pass``: the change is within the threshold;
    ``strict``: and significantly so (the other one-sided bound within it too), else ``not
    significant``.  Every test gets the one-sided bound at the level BH decided it at
    (:func:`.gate_stats.bh_level`), so the bound is past the threshold exactly for the regressions."""
    tests = [t for r in results for t in r.tests]
    if not tests:
        return 0
    discovered = benjamini_hochberg(np.array([t.p for t in tests], dtype=np.float64), q)
    alpha = bh_level(int(discovered.sum()), len(tests), q)
    for test, found in zip(tests, discovered, strict=True):
        op = test.rule.op
        test.bound = bound_of(test.estimate, test.se, test.df, alpha, test.rule.kind, op)
        test.confidence = 1.0 - alpha
        past = _past(op, test.threshold, test.change)
        if found and past:
            test.status = "regression"
        elif past:
            test.status = "not significant"
        elif strict:
            other = bound_of(test.estimate, test.se, test.df, alpha, test.rule.kind, "<" if op[0] == ">" else ">")
            test.status = "not significant" if (math.isnan(other) or _past(op, test.threshold, other)) else "pass"
        else:
            test.status = "pass"
    return len(tests)


def with_status(test: Finding, status: str) -> Finding:
    """A copy of ``test`` with another status (an accepted regression)."""
    return replace(test, status=status)
