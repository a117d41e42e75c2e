"""The gate on two memory snapshots: rules over their figures, each change compared once.

A snapshot is one measurement, with no repeats to model noise on, so each rule is a plain
comparison of A and B: ``sites["REGEX"].bytes > +10%`` (the sites whose name matches, summed;
without a selector each site alone), ``peak[...]`` the same over what was live at the peak,
``totals.METRIC`` for the summary's figures (``reserved_bytes``, ``allocated_bytes``,
``requested_bytes``, ``free_internal_bytes``, ``free_external_bytes``, ``peak_active_bytes``: the
largest of the devices').  A threshold with a sign is a change (``+10%`` of A, ``+256MiB``), one
without is a level B must not pass (``> 20GiB``).  The verdict: ``regression`` (exit 1) when a
rule is past its threshold, else ``pass``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from ..analysis.diff.gate_rules import Rule, bad_rule, parse_threshold, split_rule
from ..analysis.trace.name_rules import pattern_problem
from ..errors import ProfviewError
from ..profiles.snapshot_profile import SnapshotProfile

SNAPSHOT_VIEWS = {
    "sites": ("bytes", "count"),
    "peak": ("bytes", "count"),
    "totals": (
        "reserved_bytes",
        "allocated_bytes",
        "requested_bytes",
        "free_internal_bytes",
        "free_external_bytes",
        "peak_active_bytes",
    ),
}
#: The snapshot metrics a byte unit (``+256MiB``) fits.
BYTE_METRICS = frozenset(m for metrics in SNAPSHOT_VIEWS.values() for m in metrics if m.endswith("bytes"))


@dataclass(frozen=True)
class SnapshotFinding:
    """One tested name of a rule: A's and B's values, the change, and whether it is past the threshold."""

    rule: Rule
    name: str
    before: float
    after: float
    past: bool
    #: How many sites a selector matched on either side (None: a total, or one site alone).
    matched: int | None = None

    @property
    def note(self) -> str | None:
        """What a selector that matches no site means, said (a typo passes nothing silently)."""
        if self.matched == 0:
            return f"the selector {self.rule.selector!r} matches no site on either side (a typo?)"
        return None

    @property
    def change_pct(self) -> float | None:
        return None if not self.before else 100.0 * (self.after - self.before) / self.before


def parse_snapshot_rule(text: str) -> Rule:
    """A rule from its text, read as every gate rule is (:func:`~profview.analysis.diff.gate_rules.split_rule`,
    :func:`~profview.analysis.diff.gate_rules.parse_threshold`) over a snapshot's views; a one-line
    :class:`ProfviewError` saying what is wrong."""
    stripped = text.strip()
    if stripped.startswith("sql:"):
        raise bad_rule(text, "sql:", "a memory snapshot's gate has no sql: rules (views: sites, peak, totals)")
    view, selector, found = split_rule(text, stripped)
    metric = found["metric"]
    if view not in SNAPSHOT_VIEWS or metric not in SNAPSHOT_VIEWS[view]:
        known = "; ".join(f"{v}: {', '.join(m)}" for v, m in SNAPSHOT_VIEWS.items())
        raise bad_rule(text, f"{view}.{metric}", f"a memory snapshot's rules name {known}")
    if view == "totals" and selector is not None:
        raise bad_rule(text, selector, "totals take no selector")
    if selector is not None:
        problem = pattern_problem(selector)  # Polars' engine runs it (linear in the names), so it checks it
        if problem:
            raise bad_rule(text, selector, f"not a regular expression the engine can run: {problem}")
    value, kind = parse_threshold(text, found["threshold"], metric, byte_metrics=BYTE_METRICS)
    if kind == "pt":
        raise bad_rule(text, found["threshold"], f"pt (percentage points) is for a percentage metric, not {metric}")
    return Rule(stripped, view, selector, metric, found["op"], value, kind)


def _past(rule: Rule, before: float, after: float) -> bool:
    if rule.kind == "level":
        value = after
    elif rule.kind == "abs":
        value = after - before
    else:
        value = float("inf") if not before and after > 0 else 0.0 if not before else 100.0 * (after - before) / before
    return {
        ">": value > rule.threshold,
        ">=": value >= rule.threshold,
        "<": value < rule.threshold,
        "<=": value <= rule.threshold,
    }[rule.op]


def _by_name(profile: SnapshotProfile, view: str, metric: str) -> dict[str, float]:
    frame = profile.view(view).group_by("site").agg(pl.col(metric).sum())
    return {str(site): float(value) for site, value in frame.iter_rows()}


def _totals(profile: SnapshotProfile) -> dict[str, float | None]:
    figures = profile.summary(0)
    out: dict[str, float | None] = {
        k: None if figures[k] is None else float(figures[k]) for k in SNAPSHOT_VIEWS["totals"] if k in figures
    }
    known = [d["peak_active_bytes"] for d in figures["devices"] if d["peak_active_bytes"] is not None]
    out["peak_active_bytes"] = float(max(known)) if known else None  # no device recorded a peak: unknown
    return out


def _known_total(profile: SnapshotProfile, rule: Rule) -> float:
    """The total a rule tests, or one line where the snapshot cannot give it (no rule on an unknown)."""
    value = _totals(profile)[rule.metric]
    if value is None:
        problem = f"{rule.metric} is unknown in this snapshot (see its warnings): rule {rule.text!r}"
        raise ProfviewError(profile.path, problem)
    return value


def evaluate_snapshot_rules(
    before: SnapshotProfile, after: SnapshotProfile, rules: list[Rule]
) -> list[SnapshotFinding]:
    """Every rule's findings: one per site (or the matching sites summed), one per total."""
    findings = []
    for rule in rules:
        if rule.view == "totals":
            a, b = (_known_total(side, rule) for side in (before, after))
            findings.append(SnapshotFinding(rule, rule.metric, a, b, _past(rule, a, b)))
            continue
        sides = _by_name(before, rule.view, rule.metric), _by_name(after, rule.view, rule.metric)
        names = sorted({*sides[0], *sides[1]})
        if rule.selector is not None:
            listed = pl.Series("name", names, dtype=pl.String)
            chosen = listed.filter(listed.str.contains(rule.selector)).to_list()
            a, b = (sum(side.get(n, 0.0) for n in chosen) for side in sides)
            label = f"{rule.selector} ({len(chosen)} sites)"
            findings.append(SnapshotFinding(rule, label, a, b, _past(rule, a, b), matched=len(chosen)))
            continue
        for name in names:
            a, b = sides[0].get(name, 0.0), sides[1].get(name, 0.0)
            findings.append(SnapshotFinding(rule, name, a, b, _past(rule, a, b)))
    return findings


#: The schema of :func:`snapshot_gate_document`.
GATE_SCHEMA = "profview.snapshot-gate/1"


def snapshot_gate_document(before: str, after: str, findings: list[SnapshotFinding]) -> dict[str, Any]:
    """The gate's answer as numbers: the verdict, and each finding with A's and B's values and
    the change (``change_pct`` null where A is 0: no percentage of nothing)."""
    past = [f for f in findings if f.past]
    return {
        "schema": GATE_SCHEMA,
        "verdict": "regression" if past else "pass",
        "tested": len(findings),
        "past_threshold": len(past),
        "noise": "none: a snapshot is one measurement",
        "before": before,
        "after": after,
        "findings": [
            {
                "rule": f.rule.text,
                "name": f.name,
                "before": f.before,
                "after": f.after,
                "change_pct": f.change_pct,
                "past": f.past,
                "note": f.note,
            }
            for f in findings
        ],
    }
