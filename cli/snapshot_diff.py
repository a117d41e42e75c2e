"""``profview diff A B`` for two memory snapshots: ``--summary``, or ``--view sites|segments -o OUT``."""

from __future__ import annotations

import sys

from ..errors import ProfviewError
from .diff_output import DiffOutput, check_diff_target, summary_then_view


def diff_snapshots(
    before: str, after: str, out: str | None, view: str | None, summary: bool, filter_: str | None,
    sort: str | None, asc: bool, top: int | None, force: bool, raw_formulas: bool,
) -> None:
    """Print the summary and/or write the view; the viewer does not compare snapshots (said)."""
    from ..diff.snapshot_comparison import SNAPSHOT_DIFF_VIEWS, load_snapshot_comparison

    if out is None and not summary:
        raise ProfviewError(None, "two memory snapshots: use --summary, or --view sites|peak|segments -o OUT")
    if view is not None and view not in SNAPSHOT_DIFF_VIEWS:
        raise ProfviewError(None, f"two memory snapshots compare by {', '.join(SNAPSHOT_DIFF_VIEWS)}, not {view!r}")
    if out is not None:
        check_diff_target(out, (before, after), force)
    comparison = load_snapshot_comparison(before, after)
    from ..report.snapshot_diff_summary import print_snapshot_diff_summary

    summary_then_view(
        (lambda: print_snapshot_diff_summary(comparison, top if top is not None else 10)) if summary else None,
        lambda: comparison.view(view or "sites"),
        DiffOutput(out, (before, after), filter_, sort, asc, top, force, raw_formulas),
    )


def gate_snapshots(before: str, after: str, rules: list[str], as_json: bool = False) -> None:
    """The gate's rules on two snapshots (:mod:`profview.gate.snapshot_gate`): a line per finding
    past its threshold and the verdict (``as_json``: the gate's document), and exit 1 on a regression."""
    import typer

    from ..frames import fmt_bytes
    from ..gate.snapshot_gate import evaluate_snapshot_rules, parse_snapshot_rule, snapshot_gate_document
    from ..profiles.snapshot_profile import load_snapshot
    from ..sanitize import clean, json_text

    parsed = [parse_snapshot_rule(rule) for rule in rules]  # a bad rule is said before a file is read
    findings = evaluate_snapshot_rules(load_snapshot(before), load_snapshot(after), parsed)
    past = [f for f in findings if f.past]
    if as_json:
        sys.stdout.write(json_text(snapshot_gate_document(before, after, findings)))
        sys.stdout.flush()
        if past:
            raise typer.Exit(1)
        return
    for finding in findings:
        if finding.note:
            typer.echo(f"note: {clean(finding.note)}")
    for finding in past:
        size = (lambda v: fmt_bytes(v)) if finding.rule.metric != "count" else (lambda v: f"{v:,.0f}")
        change = f" ({finding.change_pct:+.1f}%)" if finding.change_pct is not None else " (new)"
        typer.echo(f"regression: {clean(finding.rule.text)}: {clean(finding.name)}: {size(finding.before)} -> "
                   f"{size(finding.after)}{change}")
    verdict = "regression" if past else "pass"
    typer.echo(f"gate: {verdict} ({len(findings)} tested, {len(past)} past their threshold; a snapshot is one "
               "measurement: no noise model)")
    sys.stdout.flush()
    if past:
        raise typer.Exit(1)
