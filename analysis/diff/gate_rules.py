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
test of every rule (Benjamini–Hochberg) and gives each test a status: ``regression`` (a discovery
past the threshold), ``inconclusive`` (past it, but not a discovery after the correction: within
the noise), ``pass`` (within the threshold; with ``strict``, the whole interval too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from ...errors import ProfviewError
from ..trace.name_rules import pattern_problem
from .gate_samples import EFFICIENCY_METRICS, KERNEL_METRICS, OP_METRICS, PHASE_METRICS
from .gate_stats import DRAWS, Tested, assess_change, benjamini_hochberg

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


def _bad(text: str, token: str, why: str) -> ProfviewError:
    return ProfviewError(None, f"bad rule {_short(text, 120)!r}: {why} ({_short(token)!r})")


def parse_threshold(text: str, token: str, metric: str) -> tuple[float, str]:
    """``(value, kind)`` of a threshold token for ``metric`` (see the module doc)."""
    found = _THRESHOLD.match(token)
    if found is None:
        raise _bad(text, token, "a threshold is a number with an optional sign and unit, e.g. +5% or +256MiB")
    value = float(found["number"])
    sign, unit = found["sign"], found["unit"].lower()
    if sign == "-":
        value = -value
    if unit == "%":
        return value, ("pct" if sign else "level")
    if unit == "pt":
        if metric not in PERCENT_METRICS:
            raise _bad(text, token, f"pt (percentage points) is for a percentage metric, not {metric}")
        return value, ("pt" if sign else "level")
    kind = "abs" if sign else "level"
    if unit == "":
        return value, kind
    if unit not in _UNITS:
        raise _bad(text, token, "unknown unit (%, pt, us, ms, s, B, KB, MB, GB, KiB, MiB, GiB)")
    family, scale = _UNITS[unit]
    wanted = "bytes" if metric in BYTE_METRICS else ("time" if metric.endswith("_us") else None)
    if wanted != family:
        raise _bad(text, token, f"a {family} unit does not fit {metric}")
    return value * scale, kind


def parse_rule(text: str) -> Rule:
    """A :class:`Rule` from its text; a :class:`ProfviewError` naming the bad token otherwise."""
    stripped = text.strip()
    if stripped.startswith("sql:"):
        tail = _SQL_TAIL.search(stripped)
        if tail is None:
            raise _bad(text, stripped[-20:], "a sql: rule ends with an operator and a threshold, e.g. > +5%")
        query = stripped[4 : tail.start()].strip().strip("'\"").strip()
        if not query:
            raise _bad(text, "sql:", "an empty query")
        value, kind = parse_threshold(text, tail["threshold"], "value")
        return Rule(stripped, "sql", None, "value", tail["op"], value, kind, sql=query)
    view, selector, found = _split_rule(text, stripped)
    metric = found["metric"]
    if view not in VIEWS:
        raise _bad(text, view, f"unknown view (views: {', '.join(VIEWS)}, sql:)")
    if metric not in VIEWS[view]:
        raise _bad(text, metric, f"{view} has no metric of that name (metrics: {', '.join(VIEWS[view])})")
    if selector is not None:
        problem = pattern_problem(selector)  # Polars' engine runs it, so Polars' engine checks it
        if problem is not None:
            raise _bad(text, _short(selector), f"not a regular expression the engine can run: {problem}")
    value, kind = parse_threshold(text, found["threshold"], metric)
    return Rule(stripped, view, selector, metric, found["op"], value, kind)


def _short(token: str, most: int = 60) -> str:
    return token if len(token) <= most else token[: most - 1] + "…"


def _split_rule(text: str, stripped: str) -> tuple[str, str | None, re.Match[str]]:
    """A rule's view, selector and the match of the rest (metric, operator, threshold), read left
    to right in time linear in the rule: the selector runs from its opening quote to the same
    quote before the rule's last ``]`` (a threshold or metric never holds one)."""
    head = _VIEW.match(stripped)
    if head is None:
        raise _bad(text, _short(stripped.split()[0] if stripped.split() else text), _EXPECTED)
    view, position, selector = head.group(1), head.end(), None
    if stripped.startswith("[", position):
        close = stripped.rfind("]")
        inner = stripped[position + 1 : close].strip() if close > position else ""
        if len(inner) < 2 or inner[0] not in "\"'" or inner[-1] != inner[0]:
            raise _bad(text, _short(stripped[position:close + 1] or stripped[position:]),
                       'a selector is a quoted regex in brackets, e.g. kernels["gemm"]')
        selector, position = inner[1:-1], close + 1
    found = _TAIL.fullmatch(stripped, position)
    if found is None:
        rest = stripped[position:].split()
        token = rest[0] if rest else stripped.split()[-1]
        if not re.search(r"(>=|<=|>|<)", stripped[position:]):
            token = rest[-1] if rest else stripped.split()[-1]
        raise _bad(text, _short(token), _EXPECTED)
    return view, selector, found


@dataclass
class Finding:
    """One name of one rule: its figures and, after :func:`decide`, its ``status``."""

    rule: Rule
    name: str
    before: float
    after: float
    change: float
    low: float
    high: float
    p: float
    samples: tuple[int, int]
    exact: bool
    status: str = "pass"


@dataclass
class RuleResult:
    """A rule's tests, and what it did not test: names on one side only, names under ``min_share``."""

    rule: Rule
    tests: list[Finding] = field(default_factory=list)
    one_side: list[str] = field(default_factory=list)
    below_share: int = 0
    note: str | None = None


def _matrices(
    captures: list[pl.DataFrame], names: list[str], metric: str, fill: float | None
) -> list[np.ndarray]:
    """Per capture: ``names × steps`` of ``metric`` (a missing name/step: ``fill``; None: the
    name's own median in that capture, so it neither adds nor moves the median).  Built by one
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
            medians = np.nanmedian(np.where(np.isnan(matrix).all(axis=1, keepdims=True), 0.0, matrix), axis=1)
            matrix = np.where(np.isnan(matrix), medians[:, None], matrix)
        out.append(matrix)
    return out


def evaluate(
    rule: Rule, before: list[pl.DataFrame], after: list[pl.DataFrame], *, min_share: float = 0.0, seed: int = 0,
    draws: int = DRAWS,
) -> RuleResult:
    """The tests of ``rule`` over per-step sample frames (``name``, ``step``, the metric) of each
    side's captures.  Names present on one side only are not tested by a relative or level rule
    (a change from nothing has no ratio): they are listed.  Additive views ignore names whose share
    of the view's time is under ``min_share`` % on both sides."""
    result = RuleResult(rule)
    metric = rule.metric

    def selected(frames: list[pl.DataFrame]) -> dict[str, float]:
        totals: dict[str, float] = {}
        for frame in frames:
            rows = frame.filter(pl.col(metric).is_not_null())
            if rule.selector is not None:  # Polars' engine: linear in the names, whatever the pattern
                rows = rows.filter(pl.col("name").cast(pl.String).str.contains(rule.selector))
            weight = VIEWS[rule.view][0] if rule.view in ADDITIVE else metric
            for name, total in rows.group_by("name").agg(pl.col(weight).sum()).iter_rows():
                totals[name] = totals.get(name, 0.0) + float(total or 0.0)
        return totals

    names_before, names_after = selected(before), selected(after)
    if rule.kind == "level":
        names = sorted(names_after)
    else:
        both = set(names_before) & set(names_after)
        additive_abs = rule.view in ADDITIVE and rule.kind == "abs"
        names = sorted(set(names_before) | set(names_after)) if additive_abs else sorted(both)
        result.one_side = [] if additive_abs else sorted(set(names_before) ^ set(names_after))
    if rule.view in ADDITIVE and min_share > 0:
        wholes = {id(names_before): sum(names_before.values()), id(names_after): sum(names_after.values())}

        def share(totals: dict[str, float], name: str) -> float:
            whole = wholes[id(totals)]  # each side's whole summed once, not once per name
            return totals.get(name, 0.0) / whole * 100 if whole > 0 else 0.0

        kept = [n for n in names if max(share(names_before, n), share(names_after, n)) >= min_share]
        result.below_share = len(names) - len(kept)
        result.one_side = [
            n for n in result.one_side
            if max(share(names_before, n), share(names_after, n)) >= min_share
        ]
        names = kept
    if not names:
        if not names_before and not names_after:
            result.note = "no samples on either side"
        return result
    fill = 0.0 if rule.view in ADDITIVE else None
    after_m = _matrices(after, names, metric, fill)
    before_m = _matrices(before, names, metric, fill) if rule.kind != "level" else [np.zeros_like(m) for m in after_m]
    tested: Tested = assess_change(before_m, after_m, rule.kind, rule.op, rule.threshold, seed, draws)
    from .gate_stats import side_median

    b_med, a_med = side_median(before_m), side_median(after_m)
    samples = (sum(m.shape[1] for m in before_m), sum(m.shape[1] for m in after_m))
    for i, name in enumerate(names):
        result.tests.append(
            Finding(
                rule, name, float(b_med[i]), float(a_med[i]), float(tested.change[i]), float(tested.low[i]),
                float(tested.high[i]), float(tested.p[i]), samples, tested.exact,
            )
        )
    return result


def _past(rule: Rule, value: float) -> bool:
    if rule.op == ">":
        return value > rule.threshold
    if rule.op == ">=":
        return value >= rule.threshold
    if rule.op == "<":
        return value < rule.threshold
    return value <= rule.threshold


def decide(results: list[RuleResult], q: float = 0.05, *, strict: bool = False) -> int:
    """Each test's status, the false-discovery rate controlled at ``q`` across every test of every
    rule; returns the number of tests.

    ``regression``: a discovery whose change is past the threshold.  ``inconclusive``: the change
    is past the threshold but not a discovery (within the noise).  ``pass``: the change is within
    the threshold; ``strict``: and so is the whole interval (an interval straddling the threshold
    is then ``inconclusive`` too: a trace too noisy to certify the threshold fails to pass)."""
    tests = [t for r in results for t in r.tests]
    if not tests:
        return 0
    discovered = benjamini_hochberg(np.array([t.p for t in tests], dtype=np.float64), q)
    for test, found in zip(tests, discovered, strict=True):
        rule = test.rule
        worst = test.high if rule.op.startswith(">") else test.low
        if found and _past(rule, test.change):
            test.status = "regression"
        elif _past(rule, test.change) or (strict and _past(rule, worst)):
            test.status = "inconclusive"
        else:
            test.status = "pass"
    return len(tests)


def with_status(test: Finding, status: str) -> Finding:
    """A copy of ``test`` with another status (an accepted regression)."""
    return replace(test, status=status)
