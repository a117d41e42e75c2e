"""``profview diff BEFORE AFTER``: two profiles (or two jobs) compared: the viewer, --summary, or --view -o."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import ProfviewError
from ..sanitize import clean
from .diff_output import DiffOutput, check_diff_target, summary_then_view
from .options import (
    AscOption,
    CaptureOption,
    CommPattern,
    FilterOption,
    ForceOption,
    NoCache,
    RawFormulas,
    SortOption,
    StepRange,
    TopOption,
    Workers,
)
from .output import stdout_closed

if TYPE_CHECKING:
    from .job_diff import JobDiffOptions


def _is_snapshot(path: str) -> bool:
    from ..parsers.snapshot.reader import looks_like_snapshot

    return looks_like_snapshot(path)


def _refuse_ignored_by_gate(given: dict[str, bool]) -> None:
    """One line naming the options the gate does not read, rather than a gate that silently ignores them."""
    ignored = [option for option, used in given.items() if used]
    if ignored:
        which = "them" if len(ignored) > 1 else "it"
        raise ProfviewError(
            None,
            f"{', '.join(ignored)}: not an option of the gate (--fail-if/--gate), which would ignore {which}: "
            f"leave {which} out",
        )


def _diff_processes(before: str, after: str, options: JobDiffOptions, given: dict[str, bool]) -> None:
    """``diff --as-job A.sqlite B.sqlite``: each export a job of its processes, the two compared as
    two jobs are (:func:`profview.cli.job_diff.diff_jobs`); what two such jobs do not take, one line."""
    refused = [option for option, used in given.items() if used]
    if refused:
        raise ProfviewError(None, f"{', '.join(refused)}: not with --as-job (two exports compared as jobs: "
                            "--summary, --view ranks|stragglers|kernels -o OUT, or the viewer)")
    from .job_diff import diff_jobs

    try:
        diff_jobs(before, after, options)
    except BrokenPipeError:
        raise stdout_closed() from None


def diff(
    before: Annotated[
        str, typer.Argument(help="The profile before the change (trace or table; or a job: directory, glob, archive).")
    ],
    after: Annotated[str, typer.Argument(help="The profile after the change.")],
    out: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--out", "-o", help="Export the --view to .csv, .parquet or .json (- for CSV on stdout)."),
    ] = None,
    view: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--view", "-v",
            help="kernels, ops, steps; align or moved: one step aligned by operator; efficiency: TFLOP/s per "
            "operator and shapes; phases: serving runs per phase (GPU us per token). Two jobs: ranks, stragglers, "
            "kernels.",
        ),
    ] = None,
    step: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--step", help="align/moved: this ProfilerStep on both sides (default: each side's median step)."),
    ] = None,
    summary_: Annotated[
        bool, typer.Option("--summary", help="Print the biggest regressions and improvements.")
    ] = False,
    per_step: Annotated[
        bool, typer.Option("--per-step", help="Divide each side by its own number of steps.")
    ] = False,
    match: Annotated[
        str, typer.Option("--match", help="exact, or normalized: also pair names differing by arch/tile/template.")
    ] = "exact",
    tolerance: Annotated[
        float, typer.Option("--tolerance", help="Percent of change still counted unchanged.")
    ] = 5.0,
    filter_: FilterOption = None,
    sort: SortOption = None,
    asc: AscOption = False,
    top: TopOption = None,
    force: ForceOption = False,
    raw_formulas: RawFormulas = False,
    no_cache: NoCache = False,
    comm_pattern: CommPattern = None,
    step_range: StepRange = None,
    workers: Workers = None,
    fail_if: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--fail-if",
            help="A gate rule, VIEW[SELECTOR].METRIC OP THRESHOLD, e.g. 'kernels.total_us > +5%' (repeatable; "
            "docs/gate.md). BEFORE and AFTER may each be a folder, glob or comma list of captures.",
        ),
    ] = None,
    gate_file: Annotated[
        Optional[str], typer.Option("--gate", help="A gate file (TOML): rules, fdr, min_share, accept.")  # noqa: UP045
    ] = None,
    gate_format: Annotated[
        str, typer.Option("--format", help="The gate's output: text, json, markdown, github or junit.")
    ] = "text",
    inconclusive: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--inconclusive",
            help="pass (default): a change within the noise passes, said as not significant; fail: it, and a "
            "rule with nothing to test, exit 3.",
        ),
    ] = None,
    accept: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--accept",
            help="A bound, e.g. 'kernels[\"gemm_a\"].total_us <= +12%': regressions of the names it selects, up to "
            "that change, pass until --until (with --reason).",
        ),
    ] = None,
    reason: Annotated[Optional[list[str]], typer.Option("--reason", help="Why --accept.")] = None,  # noqa: UP045
    until: Annotated[
        Optional[list[str]], typer.Option("--until", help="--accept holds until this date (YYYY-MM-DD).")  # noqa: UP045
    ] = None,
    fdr: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--fdr", help="Gate: false-discovery rate across all tests (default 0.05)."),
    ] = None,
    min_share: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--min-share", help="Gate: kernels/ops under this % of the time are not tested (default 0.5)."),
    ] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Gate: the bootstrap's seed (default 0).")] = None,  # noqa: UP045
    strict: Annotated[
        bool, typer.Option("--strict", help="Gate: an interval straddling a threshold is inconclusive.")
    ] = False,
    capture: CaptureOption = None,
    as_job: Annotated[
        bool,
        typer.Option(
            "--as-job",
            help="BEFORE and AFTER each one Nsight Systems export: its processes that launched GPU work as the "
            "ranks of a job (numbered by pid), the two jobs compared as two directories of rank traces are.",
        ),
    ] = False,
) -> None:
    """Compare two profiles: the viewer in compare mode, --summary, or --view V -o OUT; with
    --fail-if or --gate, a CI gate (exit 0 pass, 1 regression, 2 usage error, 3 not comparable or not enough
    evidence with --inconclusive fail, 4 internal error)."""
    if as_job:
        from .job_diff import JobDiffOptions

        _diff_processes(before, after, JobDiffOptions(
            out, view, summary_, match, tolerance, filter_, sort, asc, top, force, raw_formulas, no_cache,
            comm_pattern, workers, as_job=True, step_range=step_range,
        ), given={"--fail-if": bool(fail_if), "--gate": gate_file is not None, "--capture": bool(capture),
                  "--per-step": per_step, "--step": step is not None})
        return
    if fail_if or gate_file is not None:
        _refuse_ignored_by_gate(
            {
                "--capture": bool(capture), "--match": match != "exact", "--filter": filter_ is not None,
                "--top": top is not None, "--sort": sort is not None, "--asc": asc, "--step": step is not None,
                "--workers": workers is not None, "--per-step": per_step, "--tolerance": tolerance != 5.0,
                "--raw-formulas": raw_formulas,
            }
        )
    if step_range is not None and any(_is_snapshot(side) for side in (before, after)):
        raise ProfviewError(None, "--step-range: one Nsight Systems export's option, not a memory snapshot's")
    if fail_if and gate_file is None and all(_is_snapshot(side) for side in (before, after)):
        from .snapshot_diff import gate_snapshots

        if view is not None or summary_ or gate_format not in ("text", "json"):
            raise ProfviewError(None, "the gate on two memory snapshots: --fail-if rules only (text or json output)")
        gate_snapshots(before, after, fail_if, as_json=gate_format == "json")
        return
    if fail_if or gate_file is not None:
        from .gate_command import GateArgs, gate

        if view is not None or summary_:
            raise ProfviewError(None, "--fail-if/--gate cannot be combined with --view or --summary")
        gate(
            before, after,
            GateArgs(
                fail_if or [], gate_file, gate_format, out, force, inconclusive, accept or [], reason or [],
                until or [], fdr, min_share, seed, strict, no_cache, comm_pattern, step_range,
            ),
        )
        return
    if any(x for x in (accept, reason, until, inconclusive, fdr, min_share, seed, strict)) or gate_format != "text":
        raise ProfviewError(None, "--format, --accept, --inconclusive, --fdr, --min-share, --seed and --strict "
                            "are gate options: add --fail-if RULE or --gate FILE.toml")
    from ..parsers.snapshot.reader import looks_like_snapshot

    snapshots = [looks_like_snapshot(side) for side in (before, after)]
    if any(snapshots):
        if not all(snapshots):
            raise ProfviewError(None, "a memory snapshot compares with another memory snapshot, not with a trace")
        from .snapshot_diff import diff_snapshots

        diff_snapshots(before, after, out, view, summary_, filter_, sort, asc, top, force, raw_formulas)
        return
    from ..diff.comparison import check_inputs, load_comparison, remember

    # two jobs (cli/job_diff.py); a job and a single profile is a one-line error
    from ..diff.job_comparison import diff_kind

    if capture:
        from ..profiles.graph_views import check_capture_paths

        check_capture_paths(capture)
    if diff_kind(before, after) == "jobs":
        if capture or step_range is not None:
            raise ProfviewError(None, "--capture and --step-range: one trace's options, not a job's")
        from .job_diff import JobDiffOptions, check_job_options, diff_jobs

        check_job_options(per_step, step)
        options = JobDiffOptions(
            out, view, summary_, match, tolerance, filter_, sort, asc, top, force, raw_formulas, no_cache,
            comm_pattern, workers,
        )
        try:
            diff_jobs(before, after, options)
        except BrokenPipeError:
            raise stdout_closed() from None
        return
    if view is not None and out is None and not summary_:
        raise ProfviewError(None, "--view needs -o OUT (or use --summary, or neither for the viewer)")
    if out is None and not summary_:
        if capture:
            raise ProfviewError(
                None, "--capture: with --summary or --view V -o OUT (the compare viewer does not take it)"
            )
        check_inputs(before, after)
        from ..tui.launch import run_compare

        raise typer.Exit(
            run_compare(
                before, after, no_cache=no_cache, comm_pattern=comm_pattern, step_range=step_range,
                per_step=per_step, match=match, tolerance_pct=tolerance,
            )
        )
    if out is not None:
        if out != "-":
            from ..reads import note as note_input

            note_input(before, after, *(capture or []))
        check_diff_target(out, (before, after), force)  # said before the work, not after it
    from ..parsers.source import held_together

    with held_together():  # both sides are held at once: each one's memory check counts the other's
        comparison = load_comparison(
            before, after, use_cache=not no_cache, comm_pattern=comm_pattern, per_step=per_step, match=match,
            tolerance_pct=tolerance, capture=capture, step_range=step_range,
        )
        comparison.step = step
        for side in (comparison.before, comparison.after):
            for warning in side.warnings:
                typer.echo(f"profview: warning: {clean(side.path)}: {clean(warning)}", err=True)
        noted = [view or "kernels"] if out is not None else ["kernels", "ops"]
        for note in (line for v in noted for line in comparison.notes(v)):
            typer.echo(f"profview: note: {clean(note)}", err=True)
        explained = [view or "kernels"] if out is not None else ["kernels", "steps"]  # as the viewer's note line
        for note in dict.fromkeys(line for v in explained for line in comparison.explanations(v)):
            typer.echo(f"profview: note: {clean(note)}", err=True)
        from ..report.diff_summary import print_diff_summary

        output = DiffOutput(out, (before, after), filter_, sort, asc, top, force, raw_formulas)
        summary_then_view(
            (lambda: print_diff_summary(comparison, top if top is not None else 10)) if summary_ else None,
            lambda: comparison.view(view or "kernels"),
            output,
        )
        remember(comparison)
