"""The gate's result in the format a CI reads: ``text`` (a person), ``json`` (scripts and agents,
with a ``schema`` version), ``markdown`` (a job summary or a PR comment), ``github`` (workflow
commands: an ``::error`` per regression), ``junit`` (a ``<testcase>`` per rule, a ``<failure>``
for each failed one).  Every name from a trace passes :func:`profview.sanitize.clean` (JSON keeps
the names exact, written by the one JSON writer, :func:`profview.sanitize.json_text`: ASCII, every
other code point an escape, no NaN or huge number)."""

from __future__ import annotations

import math
from typing import Any
from xml.etree import ElementTree as ET

from ..analysis.diff.gate_rules import Finding, RuleResult
from ..sanitize import clean, json_text
from .run import GateResult

FORMATS = ("text", "json", "markdown", "github", "junit")
#: The JSON output's schema version: bumped when a field changes meaning or goes.
SCHEMA = "profview.gate/1"
#: Findings listed per rule in text and Markdown (JSON and JUnit list all).
SHOWN = 10


def _num(value: float) -> float | str | None:
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return round(value, 6)


def _change(finding: Finding) -> str:
    unit = {"pct": "%", "pt": "pt", "abs": "", "level": ""}[finding.rule.kind]
    def fmt(v: float) -> str:
        return f"{v:+.2f}{unit}" if finding.rule.kind != "level" else f"{v:.4g}"
    if finding.exact:
        return f"{fmt(finding.change)} (exact: one sample a side)"
    return f"{fmt(finding.change)} [{fmt(finding.low)}, {fmt(finding.high)}]"


def _failed(result: RuleResult) -> list[Finding]:
    return [t for t in result.tests if t.status in ("regression", "inconclusive", "accepted")]


def _rule_status(result: RuleResult) -> str:
    statuses = {t.status for t in result.tests}
    for status in ("regression", "inconclusive", "accepted"):
        if status in statuses:
            return status
    return "pass" if result.tests else "untested"


def to_json(gate: GateResult) -> dict[str, Any]:
    """The result as plain data (see :data:`SCHEMA`)."""
    return {
        "schema": SCHEMA,
        "verdict": gate.verdict,
        "tested": gate.tested,
        "fdr": gate.options.fdr,
        "min_share_pct": gate.options.min_share,
        "seed": gate.options.seed,
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
                "status": _rule_status(r),
                "tested": len(r.tests),
                "below_min_share": r.below_share,
                "one_side_only": r.one_side,
                "note": r.note,
                "failed": [t.name for t in r.tests if t.status == "regression"],
                "results": [
                    {
                        "name": t.name, "status": t.status, "before": _num(t.before), "after": _num(t.after),
                        "change": _num(t.change), "interval": [_num(t.low), _num(t.high)], "p": _num(t.p),
                        "samples": list(t.samples), "exact": t.exact,
                    }
                    for t in r.tests
                ],
            }
            for r in gate.results
        ],
        "accepted": [
            {"rule": a.rule, "reason": a.reason, "until": a.until.isoformat(), "covers": [t.name for t in ts]}
            for a, ts in gate.accepted_used
        ],
        "expired": [{"rule": a.rule, "reason": a.reason, "until": a.until.isoformat()} for a in gate.expired],
    }


def _summary_line(gate: GateResult) -> str:
    counts = {s: len(gate.findings(s)) for s in ("regression", "inconclusive", "accepted")}
    return (
        f"verdict: {gate.verdict} — {gate.tested} tests over {len(gate.results)} rules "
        f"(false-discovery rate {gate.options.fdr:g}, Benjamini–Hochberg): {counts['regression']} regression(s), "
        f"{counts['inconclusive']} inconclusive, {counts['accepted']} accepted"
    )


def to_text(gate: GateResult) -> str:
    lines = ["comparability:"]
    for c in gate.comparability.checks:
        mark = "DIFFERS (blocks)" if c.blocking else ("same" if c.same else "differs")
        lines.append(f"  {c.what}: {clean(c.before)} | {clean(c.after)}  [{mark}]")
    lines += [f"  incomparable: {clean(r)}" for r in gate.comparability.reasons]
    for r in gate.results:
        extra = []
        if r.below_share:
            extra.append(f"{r.below_share} under min_share {gate.options.min_share:g}%")
        if r.one_side:
            extra.append(f"{len(r.one_side)} on one side only, not tested")
        if r.note:
            extra.append(r.note)
        tail = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"{_rule_status(r).upper():12} {clean(r.rule.text)}: {len(r.tests)} tested{tail}")
        shown = _failed(r) or sorted(r.tests, key=lambda t: -abs(t.change) if math.isfinite(t.change) else 0)[:1]
        for t in shown[:SHOWN]:
            lines.append(
                f"    {t.status:12} {clean(t.name)[:90]}: {t.before:.6g} -> {t.after:.6g}, change {_change(t)}"
            )
        if len(shown) > SHOWN:
            lines.append(f"    … {len(shown) - SHOWN} more (--format json lists all)")
    for a, ts in gate.accepted_used:
        lines.append(f"accepted until {a.until}: {clean(a.rule)} ({clean(a.reason)}): {len(ts)} regression(s) covered")
    for a in gate.expired:
        lines.append(f"expired on {a.until}: accepted {clean(a.rule)} ({clean(a.reason)}) no longer applies")
    lines.append(_summary_line(gate))
    return "\n".join(lines) + "\n"


def _md(text: object) -> str:
    return clean(text).replace("|", "\\|").replace("`", "'")


def to_markdown(gate: GateResult) -> str:
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️", "incomparable": "⛔"}[gate.verdict]
    lines = [f"## profview gate: {icon} {gate.verdict}", "", _summary_line(gate), ""]
    lines += ["| check | before | after | |", "|---|---|---|---|"]
    for c in gate.comparability.checks:
        lines.append(f"| {_md(c.what)} | {_md(c.before)} | {_md(c.after)} | {'blocks' if c.blocking else ''} |")
    lines += ["", "| rule | status | tested | name | before | after | change [95% interval] |"]
    lines += ["|---|---|---|---|---|---|---|"]
    for r in gate.results:
        failed = _failed(r)[:SHOWN]
        if not failed:
            lines.append(f"| `{_md(r.rule.text)}` | {_rule_status(r)} | {len(r.tests)} | | | | |")
        for t in failed:
            lines.append(
                f"| `{_md(r.rule.text)}` | {t.status} | {len(r.tests)} | {_md(t.name)[:80]} | {t.before:.6g} | "
                f"{t.after:.6g} | {_md(_change(t))} |"
            )
    for a, ts in gate.accepted_used:
        lines.append(f"\nAccepted until {a.until}: `{_md(a.rule)}` — {_md(a.reason)} ({len(ts)} covered)")
    return "\n".join(lines) + "\n"


def _gh(text: str) -> str:
    """A workflow command's message: % and newlines escaped as GitHub reads them."""
    return clean(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def to_github(gate: GateResult) -> str:
    lines = []
    for reason in gate.comparability.reasons:
        lines.append(f"::error title=profview gate: incomparable::{_gh(reason)}")
    for r in gate.results:
        for t in _failed(r):
            level = "error" if t.status == "regression" else ("warning" if t.status == "inconclusive" else "notice")
            title = _gh(f"profview gate: {t.status}").replace(",", "%2C").replace(":", "%3A")
            lines.append(f"::{level} title={title}::{_gh(r.rule.text)}: {_gh(t.name[:200])} change {_gh(_change(t))}")
    lines.append(f"::notice title=profview gate::{_gh(_summary_line(gate))}")
    return "\n".join(lines) + "\n"


def to_junit(gate: GateResult) -> str:
    failures = sum(1 for r in gate.results if _rule_status(r) == "regression")
    suite = ET.Element(
        "testsuite", name="profview gate", tests=str(len(gate.results)), failures=str(failures),
        errors="1" if not gate.comparability.comparable else "0",
    )
    if not gate.comparability.comparable:
        case = ET.SubElement(suite, "testcase", classname="profview.gate", name="comparability")
        ET.SubElement(case, "error", message="incomparable").text = clean("; ".join(gate.comparability.reasons))
    for r in gate.results:
        case = ET.SubElement(suite, "testcase", classname="profview.gate", name=clean(r.rule.text))
        for t in r.tests:
            if t.status == "regression":
                ET.SubElement(case, "failure", message=clean(f"{t.name[:200]}: {_change(t)}")).text = clean(
                    f"{r.rule.text}: {t.name}: {t.before:.6g} -> {t.after:.6g}"
                )
        status = _rule_status(r)
        if status in ("inconclusive", "accepted", "untested"):
            ET.SubElement(case, "system-out").text = clean(
                f"{status}: " + ", ".join(t.name[:100] for t in _failed(r)[:SHOWN]) if _failed(r) else status
            )
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def render(gate: GateResult, fmt: str) -> str:
    """``gate`` in ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "json":
        return json_text(to_json(gate))
    return {"text": to_text, "markdown": to_markdown, "github": to_github, "junit": to_junit}[fmt](gate)
