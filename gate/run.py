"""The gate's run: both sides loaded, the comparability block, every rule's tests, the
false-discovery correction, accepted regressions, and the verdict.

Verdicts, by precedence: ``incomparable`` (the comparability block refuses), ``regression`` (a
test is a regression not accepted), ``inconclusive`` (a test is past its threshold within the
noise), ``pass``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import polars as pl

from ..analysis.diff.gate_rules import Finding, Rule, RuleResult, decide, evaluate, parse_rule
from ..analysis.diff.gate_samples import new_kernel_samples
from ..errors import ProfviewError
from ..profiles.trace_profile import Profile
from .comparability import MAX_ONE_SIDE_PCT, Comparability, compare_sides
from .inputs import capture_paths, load_side

VERDICTS = ("pass", "regression", "inconclusive", "incomparable")


@dataclass(frozen=True)
class Accepted:
    """A regression accepted until a date: its rule's text, why, and the last day it holds."""

    rule: str
    reason: str
    until: dt.date

    def holds(self, today: dt.date) -> bool:
        return today <= self.until


def parse_date(text: str, what: str = "--until") -> dt.date:
    """An ISO date (YYYY-MM-DD), or a one-line error naming it."""
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ProfviewError(None, f"{what} must be a date YYYY-MM-DD, not {text!r}") from None


@dataclass
class GateOptions:
    """What a gate runs: its rules, the FDR level, ``min_share`` (%), the bootstrap seed, accepted
    regressions, whether straddling intervals count as inconclusive (``strict``)."""

    rules: list[str]
    fdr: float = 0.05
    min_share: float = 0.5
    seed: int = 0
    accepted: list[Accepted] = field(default_factory=list)
    strict: bool = False
    max_one_side_pct: float = MAX_ONE_SIDE_PCT
    use_cache: bool = True
    comm_pattern: str | None = None
    today: dt.date = field(default_factory=dt.date.today)


@dataclass
class GateResult:
    """A finished gate: its inputs, the block, each rule's result, the count tested and the verdict."""

    before: list[str]
    after: list[str]
    comparability: Comparability
    results: list[RuleResult]
    tested: int
    verdict: str
    options: GateOptions
    accepted_used: list[tuple[Accepted, list[Finding]]] = field(default_factory=list)
    expired: list[Accepted] = field(default_factory=list)

    def findings(self, status: str) -> list[Finding]:
        return [t for r in self.results for t in r.tests if t.status == status]


def check_options(options: GateOptions) -> list[Rule]:
    """The rules parsed, and the options checked, before anything is loaded (one-line errors)."""
    if not options.rules:
        raise ProfviewError(None, "no rules: give --fail-if RULE or --gate FILE.toml")
    if not 0 < options.fdr < 1:
        raise ProfviewError(None, f"--fdr must be between 0 and 1, not {options.fdr}")
    if not 0 <= options.min_share < 100:
        raise ProfviewError(None, f"--min-share must be 0 or more and under 100, not {options.min_share}")
    rules = [parse_rule(text) for text in options.rules]
    known = {r.text for r in rules}
    for accepted in options.accepted:
        if parse_rule(accepted.rule).text not in known:
            raise ProfviewError(None, f"--accept {accepted.rule!r} names no rule of this gate")
    return rules


def _sql_samples(profile: Profile, query: str) -> pl.DataFrame:
    """A query rule's samples from one capture: the query's last numeric column is the value; a
    ``step`` column makes one sample per step (without one, each name is one sample of the whole
    trace), a ``name`` (else the first text) column one test per name (profview.query's engine
    over the same tables the exports write)."""
    from ..query.engine import run_sql
    from ..query.tables import trace_tables

    frame = run_sql(trace_tables(profile), query)
    numeric = [c for c, t in frame.schema.items() if t.is_numeric() and c != "step"]
    if not numeric:
        raise ProfviewError(None, f"sql: the query {query!r} returns no numeric column")
    texts = [c for c, t in frame.schema.items() if t in (pl.String, pl.Categorical)]
    name = "name" if "name" in frame.columns else (texts[0] if texts else None)
    return frame.select(
        (pl.col(name).cast(pl.String) if name else pl.lit("sql")).alias("name"),
        (pl.col("step").cast(pl.Int64) if "step" in frame.columns else pl.lit(0, dtype=pl.Int64))
        .alias("step"),
        pl.col(numeric[-1]).cast(pl.Float64).alias("value"),
    )


def _samples(profiles: list[Profile], rule: Rule, before_names: set[str] | None = None) -> list[pl.DataFrame]:
    if rule.view == "sql":
        return [_sql_samples(p, rule.sql or "") for p in profiles]
    if rule.view == "new_kernels":
        return [new_kernel_samples(p.gate_samples("kernels"), before_names or set()) for p in profiles]
    return [p.gate_samples(rule.view) for p in profiles]


def evaluate_sides(
    before: list[Profile], after: list[Profile], rules: list[Rule], options: GateOptions
) -> tuple[list[RuleResult], int]:
    """Every rule over both sides, then the false-discovery correction across all their tests."""
    names_before: set[str] = set()
    for p in before:
        names_before |= set(p.gate_samples("kernels")["name"].to_list())
    results = []
    for index, rule in enumerate(rules):
        b = [] if rule.kind == "level" else _samples(before, rule)
        a = _samples(after, rule, names_before)
        results.append(evaluate(rule, b or a, a, min_share=options.min_share, seed=options.seed + index))
    return results, decide(results, options.fdr, strict=options.strict)


def run_gate(before_side: str, after_side: str, options: GateOptions) -> GateResult:
    """The gate of ``before_side`` against ``after_side`` (see the module doc)."""
    rules = check_options(options)
    before_paths, after_paths = capture_paths(before_side), capture_paths(after_side)
    before = load_side(before_paths, use_cache=options.use_cache, comm_pattern=options.comm_pattern)
    after = load_side(after_paths, use_cache=options.use_cache, comm_pattern=options.comm_pattern)
    kernels_before = pl.concat([p.gate_samples("kernels") for p in before])
    kernels_after = pl.concat([p.gate_samples("kernels") for p in after])
    block = compare_sides(before, after, kernels_before, kernels_after, max_one_side_pct=options.max_one_side_pct)
    results, tested = evaluate_sides(before, after, rules, options)
    result = GateResult(before_paths, after_paths, block, results, tested, "pass", options)
    for accepted in options.accepted:
        text = parse_rule(accepted.rule).text
        if not accepted.holds(options.today):
            result.expired.append(accepted)
            continue
        covered = [t for r in results if r.rule.text == text for t in r.tests if t.status == "regression"]
        for finding in covered:
            finding.status = "accepted"
        result.accepted_used.append((accepted, covered))
    if not block.comparable:
        result.verdict = "incomparable"
    elif result.findings("regression"):
        result.verdict = "regression"
    elif result.findings("inconclusive"):
        result.verdict = "inconclusive"
    from ..profiles.loading import remember_views

    for profile in (*before, *after):
        remember_views(profile)  # the samples are cached: the next gate over these traces reads them
    return result
