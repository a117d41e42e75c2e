"""The gate's result in the format a CI reads: ``text`` (a person), ``json`` (scripts and agents,
with a ``schema`` version), ``markdown`` (a job summary or a PR comment), ``github`` (workflow
commands: an ``::error`` per regression, a ``::warning`` per name not significant), ``junit`` (a
``<testcase>`` per rule: a ``<failure>`` for its regressions; not significant and untested as
``<skipped>``, or ``<failure>`` with ``--inconclusive fail``).

Every name from a trace passes :func:`profview.sanitize.clean`, and then each format's own
escaping: Markdown's HTML and table characters, GitHub's workflow-command encoding (``%``, CR, LF
in a message; also ``:`` and ``,`` in a property), XML's by the encoder.  JSON keeps the names
exact, written by the one JSON writer, :func:`profview.sanitize.json_text` (ASCII, every other
code point an escape, no NaN or huge number).  A name too long for a line is cut with ``…``,
never silently.
"""

from __future__ import annotations

import html
import math
from typing import Any
from xml.etree import ElementTree as ET

from ..analysis.diff.gate_rules import Finding, RuleResult
from ..analysis.diff.gate_stats import NOISE_FLOOR_PCT, PER_CALL, RUN_TO_RUN, STEP_TO_STEP, TOO_FEW
from ..sanitize import clean, json_text
from .run import GateResult

FORMATS = ("text", "json", "markdown", "github", "junit")
#: The JSON output's schema version: bumped when a field changes meaning or goes.
SCHEMA = "profview.gate/2"
#: Findings listed per rule in text and Markdown (JSON and JUnit list all).
SHOWN = 10
#: GitHub shows at most this many annotations of each level (error, warning, notice) per step.
GITHUB_CAP = 10
#: The longest name shown whole on a line of text, Markdown or an annotation.
NAME_WIDTH = 120

#: What each noise method measured, in one phrase.
NOISE = {
    RUN_TO_RUN: "run-to-run (the spread between captures)",
    STEP_TO_STEP: f"step-to-step (one capture a side: run-to-run noise not measured, a {NOISE_FLOOR_PCT:g}% floor)",
    PER_CALL: f"per-call (too few steps for the bootstrap: the spread of the calls, a {NOISE_FLOOR_PCT:g}% floor)",
    TOO_FEW: "none (too few steps to measure noise, and no per-call evidence)",
}


def cut(name: object, width: int = NAME_WIDTH) -> str:
    """``name`` cleaned, and cut to ``width`` characters with ``…`` when it is longer."""
    text = clean(name)
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 rule``, ``2 rules``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def _num(value: float) -> float | None:
    """A figure for JSON: a number, or null where it is no finite number (a JSON number field is a
    number or null; an infinite one is said by :func:`_infinite`, never as the text ``"inf"``)."""
    return round(value, 6) if math.isfinite(value) else None


#: The figures of a result that are numbers (or null) in the JSON.
_FIGURES = ("before", "after", "change", "threshold", "bound", "confidence", "p")


def _infinite(finding: Finding) -> dict[str, str]:
    """The figures of ``finding`` that are infinite, each with its sign (``{"change": "+inf"}``: a
    relative change from 0 to more than 0), which the JSON gives as null."""
    values = {name: getattr(finding, name) for name in _FIGURES}
    return {name: "+inf" if value > 0 else "-inf" for name, value in values.items() if math.isinf(value)}


def _fmt(finding: Finding, value: float) -> str:
    kind = finding.rule.kind
    if kind == "level":
        return f"{value:.4g}"
    unit = {"pct": "%", "pt": "pt", "abs": ""}[kind]
    return f"{value:+.2f}{unit}"


def bound_text(finding: Finding) -> str:
    """The one-sided bound the decision used: ``≥ +4.98% at 99.9%`` (a ``>`` rule's lower bound),
    or why there is none."""
    if not finding.measured:
        return "no noise estimate: too few steps"
    if math.isnan(finding.bound):
        return "no bound"
    side = "≥" if finding.rule.op.startswith(">") else "≤"
    confidence = finding.confidence * 100
    shown = f"{confidence:.3g}" if confidence < 99.9 else f"{confidence:.4g}"
    return f"{side} {_fmt(finding, finding.bound)} at {shown}%"


def change_text(finding: Finding) -> str:
    """``+5.00% (≥ +4.98% at 99.9%)``."""
    return f"{_fmt(finding, finding.change)} ({bound_text(finding)})"


def _listed(result: RuleResult) -> list[Finding]:
    return [t for t in result.tests if t.status in ("regression", "not significant", "accepted")]


def rule_status(result: RuleResult) -> str:
    """A rule's status: its worst test's, or ``untested``."""
    statuses = {t.status for t in result.tests}
    for status in ("regression", "not significant", "accepted"):
        if status in statuses:
            return status
    return "pass" if result.tests else "untested"


def _threshold_note(result: RuleResult) -> str | None:
    floored = next((t for t in result.tests if t.threshold != result.rule.threshold), None)
    if floored is None:
        return None
    return f"tested against {floored.threshold:+g}%: the {NOISE_FLOOR_PCT:g}% floor of one capture a side"


def _notes(gate: GateResult, result: RuleResult) -> list[str]:
    extra = []
    share = f"under min_share {gate.options.min_share:g}% of the time"
    if result.below_share and result.summed_small:
        extra.append(f"all {result.below_share} {share}: tested as one sum")
    elif result.below_share:
        extra.append(f"{result.below_share} more {share}, not tested")
    if result.one_side:
        extra.append(f"{len(result.one_side)} on one side only, not tested")
    outside_us, outside_calls = result.outside
    if outside_us:
        extra.append(
            f"{outside_us / 1000:.3f} ms in {plural(int(outside_calls), 'call')} outside every step (launched "
            "before the profiling window or outside the steps): their own sample, not compared"
        )
    if result.note:
        extra.append(result.note)
    floor = _threshold_note(result)
    if floor:
        extra.append(floor)
    return extra


def _noise(result: RuleResult) -> str:
    return "; ".join(NOISE[m] for m in result.methods) if result.tests else "none"


def counts(gate: GateResult) -> dict[str, int]:
    """Tests per status, and rules untested."""
    found = {s: len(gate.findings(s)) for s in ("regression", "not significant", "accepted", "pass")}
    found["untested rules"] = sum(1 for r in gate.results if not r.tests)
    return found


def to_json(gate: GateResult) -> dict[str, Any]:
    """The result as plain data (see :data:`SCHEMA`)."""
    return {
        "schema": SCHEMA,
        "verdict": gate.verdict,
        "tested": gate.tested,
        "counts": counts(gate),
        "fdr": gate.options.fdr,
        "min_share_pct": gate.options.min_share,
        "seed": gate.options.seed,
        "inconclusive": gate.options.inconclusive,
        "seconds": round(gate.seconds, 3),
        "before": gate.before,
        "after": gate.after,
        "comparability": {
            "comparable": gate.comparability.comparable,
            "reasons": gate.comparability.reasons,
            "checks": [vars(c) for c in gate.comparability.checks],
        },
        "rules": [
            {
                "rule": r.rule.text,
                "status": rule_status(r),
                "tested": len(r.tests),
                "noise": r.methods,
                "below_min_share": r.below_share,
                "one_side_only": r.one_side,
                "outside_steps": {"us": _num(r.outside[0]), "calls": int(r.outside[1])},
                "note": r.note,
                "failed": [t.name for t in r.tests if t.status == "regression"],
                "results": [
                    {
                        "name": t.name, "status": t.status, "before": _num(t.before), "after": _num(t.after),
                        "change": _num(t.change), "threshold": _num(t.threshold),
                        "bound": _num(t.bound), "bound_side": "lower" if t.rule.op.startswith(">") else "upper",
                        "confidence": _num(t.confidence), "p": _num(t.p), "infinite": _infinite(t),
                        "noise": t.method, "samples": list(t.samples),
                    }
                    for t in r.tests
                ],
            }
            for r in gate.results
        ],
        "accepted": [
            {"bound": a.rule, "reason": a.reason, "until": a.until.isoformat(), "covers": [t.name for t in ts]}
            for a, ts in gate.accepted_used
        ],
        "expired": [{"bound": a.rule, "reason": a.reason, "until": a.until.isoformat()} for a in gate.expired],
    }


def summary_line(gate: GateResult) -> str:
    """``verdict: pass — 39 tests over 3 rules (…): 0 regressions, 1 not significant, …``."""
    found = counts(gate)
    line = (
        f"verdict: {gate.verdict} — {plural(gate.tested, 'test')} over {plural(len(gate.results), 'rule')} "
        f"(false-discovery rate {gate.options.fdr:g}, Benjamini–Hochberg): "
        f"{plural(found['regression'], 'regression')}, {found['not significant']} not significant, "
        f"{found['accepted']} accepted"
    )
    if found["untested rules"]:
        line += f", {plural(found['untested rules'], 'rule')} untested"
    if found["not significant"] or found["untested rules"]:
        line += " (--inconclusive fail makes these fail)" if gate.options.inconclusive == "pass" else " (failing: --inconclusive fail)"  # noqa: E501
    return line


def to_text(gate: GateResult) -> str:
    lines = ["comparability:"]
    for c in gate.comparability.checks:
        mark = "DIFFERS (blocks)" if c.blocking else ("same" if c.same else "differs")
        lines.append(f"  {c.what}: {clean(c.before)} | {clean(c.after)}  [{mark}]")
    lines += [f"  incomparable: {clean(r)}" for r in gate.comparability.reasons]
    for r in gate.results:
        extra = _notes(gate, r)
        tail = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"{rule_status(r).upper():16} {clean(r.rule.text)}: {len(r.tests)} tested{tail}")
        if r.tests:
            lines.append(f"    noise: {_noise(r)}")
        shown = _listed(r) or sorted(r.tests, key=lambda t: -abs(t.change) if math.isfinite(t.change) else 0)[:1]
        for t in shown[:SHOWN]:
            lines.append(f"    {t.status:16} {cut(t.name)}: {t.before:.6g} -> {t.after:.6g}, change {change_text(t)}")
        if len(shown) > SHOWN:
            lines.append(f"    … {len(shown) - SHOWN} more (--format json lists all)")
    for a, ts in gate.accepted_used:
        lines.append(f"accepted until {a.until}: {clean(a.rule)} ({clean(a.reason)}): {plural(len(ts), 'regression')} covered")  # noqa: E501
    for a in gate.expired:
        lines.append(f"expired on {a.until}: accepted {clean(a.rule)} ({clean(a.reason)}) no longer applies")
    lines.append(summary_line(gate))
    return "\n".join(lines) + "\n"


def md(text: object) -> str:
    """Text for a Markdown table cell: cleaned, HTML escaped (a template's ``<float>`` stays
    visible), pipes and backticks made inert."""
    return html.escape(clean(text), quote=False).replace("|", "\\|").replace("`", "&#96;")


def to_markdown(gate: GateResult) -> str:
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️", "incomparable": "⛔"}[gate.verdict]
    lines = [f"## profview gate: {icon} {gate.verdict}", "", md(summary_line(gate)), ""]
    lines += ["| check | before | after | |", "|---|---|---|---|"]
    for c in gate.comparability.checks:
        lines.append(f"| {md(c.what)} | {md(c.before)} | {md(c.after)} | {'blocks' if c.blocking else ''} |")
    lines += ["", "| rule | status | tested | name | before | after | change (one-sided bound) |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in gate.results:
        listed = _listed(r)[:SHOWN]
        if not listed:
            lines.append(f"| {md(r.rule.text)} | {rule_status(r)} | {len(r.tests)} | | | | |")
        for t in listed:
            lines.append(
                f"| {md(r.rule.text)} | {t.status} | {len(r.tests)} | {md(cut(t.name))} | {t.before:.6g} | "
                f"{t.after:.6g} | {md(change_text(t))} |"
            )
    lines.append("")
    for r in gate.results:
        notes = _notes(gate, r)
        lines.append(f"- {md(r.rule.text)}: noise {md(_noise(r))}" + (f"; {md('; '.join(notes))}" if notes else ""))
    for a, ts in gate.accepted_used:
        lines.append(f"\nAccepted until {a.until}: {md(a.rule)} — {md(a.reason)} ({len(ts)} covered)")
    return "\n".join(lines) + "\n"


def gh_message(text: object) -> str:
    """A workflow command's message: cleaned; ``%``, CR and LF encoded as GitHub decodes them."""
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: object) -> str:
    """A workflow command's property value (``title=``): a message's encoding, and ``:`` and ``,``."""
    return gh_message(text).replace(":", "%3A").replace(",", "%2C")


def to_github(gate: GateResult) -> str:
    levels: dict[str, list[tuple[str, str]]] = {"error": [], "warning": [], "notice": []}
    for reason in gate.comparability.reasons:
        levels["error"].append(("profview gate: incomparable", reason))
    for r in gate.results:
        for t in _listed(r):
            level = {"regression": "error", "not significant": "warning"}.get(t.status, "notice")
            levels[level].append((f"profview gate: {t.status}", f"{r.rule.text}: {cut(t.name)} change {change_text(t)}"))  # noqa: E501
        if not r.tests and gate.options.inconclusive == "fail":
            levels["warning"].append(("profview gate: untested", f"{r.rule.text}: {r.note or 'nothing to test'}"))
    lines = []
    for level, entries in levels.items():
        room = GITHUB_CAP - (1 if level == "notice" else 0)  # the verdict is the last notice
        if len(entries) > room:
            hidden = len(entries) - (room - 1)
            entries = [*entries[: room - 1], (
                "profview gate: more", f"{hidden} more {level} annotations than GitHub shows in a step "
                "(the job summary, --format markdown or json, lists all)",
            )]
        lines += [f"::{level} title={gh_property(title)}::{gh_message(message)}" for title, message in entries]
    lines.append(f"::notice title={gh_property('profview gate')}::{gh_message(summary_line(gate))}")
    return "\n".join(lines) + "\n"


def _junit_lines(tests: list[Finding]) -> str:
    return "\n".join(
        f"{t.status}: {cut(t.name, 400)}: {t.before:.6g} -> {t.after:.6g}, change {change_text(t)}" for t in tests
    )


def to_junit(gate: GateResult) -> str:
    fail_inconclusive = gate.options.inconclusive == "fail"
    suite = ET.Element("testsuite", name="profview gate", time=f"{gate.seconds:.3f}")
    failures = skipped = errors = 0
    if not gate.comparability.comparable:
        case = ET.SubElement(suite, "testcase", classname="profview.gate", name="comparability", time="0")
        ET.SubElement(case, "error", message="incomparable").text = clean("; ".join(gate.comparability.reasons))
        errors += 1
    for r in gate.results:
        case = ET.SubElement(
            suite, "testcase", classname="profview.gate", name=clean(r.rule.text), time=f"{r.seconds:.3f}"
        )
        regressions = [t for t in r.tests if t.status == "regression"]
        unsure = [t for t in r.tests if t.status == "not significant"]
        accepted = [t for t in r.tests if t.status == "accepted"]
        if regressions or (fail_inconclusive and (unsure or not r.tests)):
            failed = regressions + (unsure if fail_inconclusive else [])
            first = failed[0] if failed else None
            message = (
                f"{plural(len(regressions), 'regression')}, {len(unsure)} not significant"
                + (f"; {cut(first.name)}: {change_text(first)}" if first else f"; untested: {r.note or 'nothing to test'}")  # noqa: E501
            )
            ET.SubElement(case, "failure", message=clean(message), type="regression" if regressions else "inconclusive").text = (  # noqa: E501
                _junit_lines(failed) or clean(r.note or "nothing to test")
            )
            failures += 1
        elif unsure or not r.tests:
            first = unsure[0] if unsure else None
            message = (
                f"{len(unsure)} not significant (within the noise); {cut(first.name)}: {change_text(first)}"
                if first else f"untested: {clean(r.note or 'nothing to test')}"
            )
            ET.SubElement(case, "skipped", message=clean(message)).text = _junit_lines(unsure) or None
            skipped += 1
        lines = [f"noise: {_noise(r)}", *_notes(gate, r)]
        if accepted:
            lines.append(_junit_lines(accepted))
        ET.SubElement(case, "system-out").text = "\n".join(clean(x) for x in lines)
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def render(gate: GateResult, fmt: str) -> str:
    """``gate`` in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return json_text(to_json(gate))
    return {"text": to_text, "markdown": to_markdown, "github": to_github, "junit": to_junit}[fmt](gate)
