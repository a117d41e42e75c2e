"""The gate's run: both sides loaded, the comparability block, every rule's tests, the
false-discovery correction, accepted regressions, and the verdict.

Verdicts, by precedence: ``incomparable`` (the comparability block refuses), ``regression`` (a
test is a regression not accepted), ``inconclusive`` (only when the gate is told
``inconclusive = "fail"``: a test is past its threshold within the noise, or a rule found nothing
to test; with ``strict``: a rule's selector matches no name on either side), ``pass``.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass, field

import polars as pl

from ..analysis.diff.gate_rules import Finding, Rule, RuleResult, decide, evaluate, parse_rule
from ..analysis.diff.gate_samples import OUTSIDE, new_kernel_samples
from ..analysis.diff.gate_stats import MIN_STEPS
from ..errors import ProfviewError
from ..profiles.trace_profile import Profile
from .comparability import MAX_ONE_SIDE_PCT, Comparability, compare_sides
from .inputs import capture_paths, load_side

VERDICTS = ("pass", "regression", "inconclusive", "incomparable")


@dataclass(frozen=True)
class Accepted:
    """Regressions accepted until a date: a bound ``VIEW[SELECTOR].METRIC <= CHANGE`` (the names
    its selector finds, of the rules over that view and metric, up to that change), why, and the
    last day it holds."""

    rule: str
    reason: str
    until: dt.date

    def holds(self, today: dt.date) -> bool:
        return today <= self.until

    def covers(self, finding: Finding) -> bool:
        """Whether ``finding`` (a regression) is within this bound."""
        bound, rule = parse_rule(self.rule), finding.rule
        if (bound.view, bound.metric, bound.kind) != (rule.view, rule.metric, rule.kind):
            return False
        if bound.op[0] == rule.op[0] or (bound.selector is not None and not re.search(bound.selector, finding.name)):
            return False
        change = finding.change
        return {"<": change < bound.threshold, "<=": change <= bound.threshold,
                ">": change > bound.threshold, ">=": change >= bound.threshold}[bound.op]


def check_accepted(accepted: Accepted, rules: list[Rule]) -> None:
    """A one-line error unless ``accepted`` is a bound on some rule of the gate (the other
    direction, the same view, metric and kind of threshold)."""
    bound = parse_rule(accepted.rule)
    same = [r for r in rules if (r.view, r.metric, r.kind) == (bound.view, bound.metric, bound.kind)]
    if not same:
        raise ProfviewError(None, f"--accept {accepted.rule!r} names no rule of this gate (no rule over "
                            f"{bound.view}.{bound.metric} with a {bound.kind} threshold)")
    if all(r.op[0] == bound.op[0] for r in same):
        flipped = "<=" if bound.op[0] == ">" else ">="
        raise ProfviewError(None, f"--accept {accepted.rule!r} is a rule, not a bound: accept up to a change, "
                            f"e.g. '{bound.view}{_selector(bound)}.{bound.metric} {flipped} {_threshold_text(bound)}'")


def _selector(rule: Rule) -> str:
    return "" if rule.selector is None else f"[{rule.selector!r}]"


def _threshold_text(rule: Rule) -> str:
    text = rule.text.split(rule.op, 1)[-1].strip()
    return text or f"{rule.threshold:+g}"


def parse_date(text: str, what: str = "--until") -> dt.date:
    """An ISO date (YYYY-MM-DD), or a one-line error naming it."""
    stripped = text.strip()
    # fromisoformat also takes ISO week dates (2026-W05-1) and compact forms (20260126): not YYYY-MM-DD
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", stripped, flags=re.ASCII):
        raise ProfviewError(None, f"{what} must be a date YYYY-MM-DD, not {text!r}")
    try:
        return dt.date.fromisoformat(stripped)
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
    inconclusive: str = "pass"
    max_one_side_pct: float = MAX_ONE_SIDE_PCT
    use_cache: bool = True
    comm_pattern: str | None = None
    #: ``--step-range``: the NVTX ranges of an Nsight Systems export that are its steps.
    step_range: str | None = None
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
    seconds: float = 0.0

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
    if options.inconclusive not in ("pass", "fail"):
        raise ProfviewError(None, f"--inconclusive must be pass or fail, not {options.inconclusive!r}")
    rules = [parse_rule(text) for text in options.rules]
    for accepted in options.accepted:
        check_accepted(accepted, rules)
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
    if "step" in frame.columns and not frame.schema["step"].is_integer():
        raise ProfviewError(
            None, f"sql: the query {query!r} returns a step column of {frame.schema['step']}, not whole numbers"
        )
    if name is not None and frame.schema[name] not in (pl.String, pl.Categorical, pl.Enum):
        raise ProfviewError(None, f"sql: the query {query!r} returns a name column of {frame.schema[name]}, not text")
    return frame.select(
        (pl.col(name).cast(pl.String) if name else pl.lit("sql")).alias("name"),
        (pl.col("step").cast(pl.Int64, strict=False) if "step" in frame.columns else pl.lit(0, dtype=pl.Int64))
        .alias("step"),
        # NaN or ±inf is no measurement: unknown (was NaN, then 0 in the matrices: "0 -> 0")
        pl.when(pl.col(numeric[-1]).cast(pl.Float64).is_finite()).then(pl.col(numeric[-1]).cast(pl.Float64))
        .alias("value"),
    )


def _steps_of(frames: list[pl.DataFrame]) -> int:
    """The fewest steps (samples) of any capture's frame."""
    counts = [f.filter(pl.col("step") != OUTSIDE)["step"].n_unique() if "step" in f.columns else 1 for f in frames]
    return min(counts) if counts else 0


def _calls(profiles: list[Profile], rule: Rule) -> list[pl.DataFrame] | None:
    """Each capture's per-call frame for ``rule``'s view, where it has one."""
    frames = [p.gate_calls(rule.view) for p in profiles]
    return None if any(f is None for f in frames) else [f for f in frames if f is not None]


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
        started = time.perf_counter()
        try:
            b = [] if rule.kind == "level" else _samples(before, rule)
            a = _samples(after, rule, names_before)
        except ProfviewError as error:
            if rule.view != "phases":
                raise
            # a trace without iterations has no phase to test: this rule is untested, the others run
            results.append(RuleResult(rule, note=f"{error.path}: {error.problem}" if error.path else error.problem))
            continue
        calls = None
        few = min(_steps_of(a), _steps_of(b) if b else MIN_STEPS) < MIN_STEPS
        if few and len(before) == 1 and len(after) == 1 and rule.view in ("kernels", "ops"):
            calls_a = _calls(after, rule)
            calls_b = _calls(before, rule) if b else calls_a
            if calls_a is not None and calls_b is not None:
                calls = (calls_b, calls_a)
        result = evaluate(rule, b or a, a, min_share=options.min_share, seed=options.seed + index, calls=calls)
        result.seconds = time.perf_counter() - started
        results.append(result)
    return results, decide(results, options.fdr, strict=options.strict)


def run_gate(before_side: str, after_side: str, options: GateOptions) -> GateResult:
    """The gate of ``before_side`` against ``after_side`` (see the module doc); every capture of
    both sides is held at once, so each one's memory check counts the others'."""
    from ..parsers.source import held_together

    with held_together():
        return _run_gate(before_side, after_side, options)


def _run_gate(before_side: str, after_side: str, options: GateOptions) -> GateResult:
    started = time.perf_counter()
    rules = check_options(options)
    before_paths, after_paths = capture_paths(before_side), capture_paths(after_side)
    before, after = (
        load_side(paths, use_cache=options.use_cache, comm_pattern=options.comm_pattern, step_range=options.step_range)
        for paths in (before_paths, after_paths)
    )
    kernels_before = pl.concat([p.gate_samples("kernels") for p in before])
    kernels_after = pl.concat([p.gate_samples("kernels") for p in after])
    block = compare_sides(before, after, kernels_before, kernels_after, max_one_side_pct=options.max_one_side_pct)
    results, tested = evaluate_sides(before, after, rules, options)
    result = GateResult(before_paths, after_paths, block, results, tested, "pass", options)
    for accepted in options.accepted:
        if not accepted.holds(options.today):
            result.expired.append(accepted)
            continue
        covered = [t for r in results for t in r.tests if t.status == "regression" and accepted.covers(t)]
        for finding in covered:
            finding.status = "accepted"
        result.accepted_used.append((accepted, covered))
    if not block.comparable:
        result.verdict = "incomparable"
    elif result.findings("regression"):
        result.verdict = "regression"
    elif options.inconclusive == "fail" and (
        result.findings("not significant") or any(not r.tests for r in results)
    ):
        result.verdict = "inconclusive"
    elif options.strict and any(r.matched_nothing for r in results):
        result.verdict = "inconclusive"  # a selector that finds no name (a typo) tested nothing
    from ..profiles.loading import remember_views

    for profile in (*before, *after):
        remember_views(profile)  # the samples are cached: the next gate over these traces reads them
    result.seconds = time.perf_counter() - started
    return result
