"""``profview export PATH -o OUT``: a view of a trace or a job, filtered, sorted and cut, to a file.

No ``from __future__ import annotations`` here: typer reads the command's signature on every run,
and string annotations are compiled and evaluated each time (136 of them), where evaluated ones
come with the module's bytecode (a cached export's floor is ``import polars``, issue 42).
"""

import sys
from typing import Annotated, Optional

import typer

from ..errors import ProfviewError
from ..sanitize import clean
from .options import (
    AscOption,
    AsJob,
    CaptureOption,
    CommPattern,
    DaskOption,
    FilterOption,
    ForceOption,
    IterationOption,
    NoCache,
    OnPathOption,
    PathArg,
    RawFormulas,
    RunOption,
    SortOption,
    StepRange,
    StrictOption,
    TopOption,
    Workers,
)
from .output import say_written, stdout_closed
from .target import Target


def export(
    path: PathArg,
    out: Annotated[str, typer.Option("--out", "-o", help="Output .csv, .parquet or .json; - for CSV on stdout.")],
    view: Annotated[
        str,
        typer.Option(
            "--view",
            "-v",
            help="kernels, ops, steps, launches, memory, memory_ops, memory_peaks, modules, sources, gpu_idle, "
            "gaps, critical_path, critical_path_events, critical_path_names, efficiency, categories, iterations, "
            "phases, launch_stats, launch_names, queue_length, queue_series, tensor_cores; "
            "a job: ranks, collectives, steps, kernels, straggler_path, rank_paths; graph replays: graphs, "
            "graph_nodes, graph_ops; a memory snapshot: segments, blocks, events, sites (the default), peak, "
            "timeline, ooms, annotations, stacks; a directory of memory snapshots: ranks; a time range's "
            "per-name aggregates: range (with --range).",
        ),
    ] = "kernels",
    op: Annotated[Optional[str], typer.Option(help="launches: the operator to drill into.")] = None,  # noqa: UP045
    kernel: Annotated[Optional[str], typer.Option(help="launches: the kernel to trace back.")] = None,  # noqa: UP045
    module: Annotated[Optional[str], typer.Option(help="launches: the module path to drill into.")] = None,  # noqa: UP045
    source: Annotated[Optional[str], typer.Option(help="launches: the source line to drill into.")] = None,  # noqa: UP045
    filter_: FilterOption = None,
    sort: SortOption = None,
    asc: AscOption = False,
    top: TopOption = None,
    by_shape: Annotated[
        bool, typer.Option("--by-shape", help="Group kernels by launch shape, ops by input shapes.")
    ] = False,
    step: Annotated[Optional[int], typer.Option(help="Only this ProfilerStep number.")] = None,  # noqa: UP045
    what_if: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--what-if",
            help="critical_path: scale the kernels and operators matching REGEX by FACTOR ('REGEX=FACTOR', "
            "repeatable) and show the path before and after (a model).",
        ),
    ] = None,
    rules: Annotated[
        str,
        typer.Option("--rules", help="Critical path: profview (exact times, inferred waits) or hta (HTA 0.5's rules)."),
    ] = "profview",
    category: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Only this kernel category (gemm, attention, elementwise ...): kernels, ops, efficiency."),
    ] = None,
    peak_tflops: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--peak-tflops", min=0.0, help="efficiency, steps: this compute peak instead of the device's."),
    ] = None,
    peak_tbs: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--peak-tbs", min=0.0, help="efficiency: this memory bandwidth (TB/s) instead of the device's."),
    ] = None,
    on_path: OnPathOption = False,
    iteration: IterationOption = None,
    force: ForceOption = False,
    raw_formulas: RawFormulas = False,
    no_cache: NoCache = False,
    run: RunOption = None,
    comm_pattern: CommPattern = None,
    step_range: StepRange = None,
    workers: Workers = None,
    dask: DaskOption = None,
    strict: StrictOption = False,
    as_job: AsJob = False,
    capture: CaptureOption = None,
    graph: Annotated[Optional[int], typer.Option("--graph", help="graph_nodes: only this graph.")] = None,  # noqa: UP045
    time_range: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--range", help="range: START:END in µs from the trace's start (the Timeline's { and }).",
                     metavar="START:END"),
    ] = None,
) -> None:
    """Write a view (with filter, sort and top applied) to a file."""
    target = Target.of(path, as_job)
    target.refuse_step_range(step_range)
    target.start_reading(no_cache)
    from ..profiles.views import DRILL_VIEWS, EVENT_VIEWS, PATH_VIEWS, refine, view_frame
    from ..report.export import check_target, export_format, write_table

    export_format(out)
    from ..profiles.graph_views import capture_inputs

    if out != "-":  # an output that cannot be written is said before the work, not after it
        check_target(out, inputs=(*target.paths, *target.snapshots, *capture_inputs(capture)), overwrite=force)
    trace_options = (  # one trace's options: a job or a memory snapshot refuses them
        ("--op", op),
        ("--kernel", kernel),
        ("--step", step),
        ("--module", module),
        ("--source", source),
        ("--what-if", what_if or None),
        ("--category", category),
        ("--peak-tflops", peak_tflops),
        ("--peak-tbs", peak_tbs),
        ("--on-path", on_path or None),
        ("--capture", capture or None),
        ("--graph", graph),
        ("--iteration", iteration),
        ("--range", time_range),
    )
    trace_only = [name for name, given in trace_options if given is not None]
    if target.is_job:
        from ..jobs.job import JOB_VIEWS

        if view not in JOB_VIEWS:
            raise ProfviewError(None, f"a job has no {view!r} view: choose one of {', '.join(JOB_VIEWS)}")
        single = trace_only
        if single or by_shape:
            raise ProfviewError(None, f"{', '.join(single or ['--by-shape'])}: one trace's option, not a job's")
        with target.open_job(no_cache, comm_pattern, workers, dask, strict, step_range) as job:
            frame = refine(job.view(view), pattern=filter_, sort=sort, ascending=asc, top=top)
            inputs = (*target.paths, *job.input_files())  # the job's own traces are inputs too
            try:
                written = write_table(frame, out, inputs=inputs, overwrite=force, raw_formulas=raw_formulas)
                sys.stdout.flush()
            except BrokenPipeError:
                raise stdout_closed() from None
        say_written(written, frame.height, frame.width)
        return
    if target.is_snapshot or target.snapshots:
        single = [*trace_only, *(["--run"] if run is not None else [])]
        if single or by_shape:
            named = ", ".join(single or ["--by-shape"])
            raise ProfviewError(None, f"{named}: a trace's option, not a memory snapshot's")
        if target.snapshots:
            from ..jobs.snapshot_job import SNAPSHOT_JOB_VIEWS, rank_rows, ranks_frame

            if view not in ("kernels", *SNAPSHOT_JOB_VIEWS):
                raise ProfviewError(None, f"a directory of memory snapshots has one view, ranks, not {view!r}")
            table = ranks_frame(rank_rows(list(target.snapshots)))
        else:
            table = target.load_snapshot().view(view if view != "kernels" else "sites")
        frame = refine(table, pattern=filter_, sort=sort, ascending=asc, top=top)
        try:
            written = write_table(
                frame, out, inputs=(*target.paths, *target.snapshots), overwrite=force, raw_formulas=raw_formulas
            )
            sys.stdout.flush()
        except BrokenPipeError:
            raise stdout_closed() from None
        say_written(written, frame.height, frame.width)
        return
    profile = target.load(no_cache, run, comm_pattern, step_range)
    if capture:
        profile.use_capture(capture, use_cache=not no_cache)
        profile.check_captures()  # a bad capture is refused before any work
    profile.release_events_after_link = view not in EVENT_VIEWS  # issue 25: less memory once linked
    frame = view_frame(
        profile,
        view,
        op=op,
        kernel=kernel,
        by_shape=by_shape,
        step=step,
        module=module,
        source=source,
        what_if=what_if,
        rules=rules,
        category=category,
        peak_tflops=peak_tflops,
        peak_tb_s=peak_tbs,
        on_path=on_path,
        graph=graph,
        iteration=iteration,
        time_range=parse_range(time_range),
    )
    if what_if:
        typer.echo(
            "profview: note: what-if is a model: the same dependencies with the chosen events' own time scaled, "
            "not a measurement (docs/critical_path.md)",
            err=True,
        )
    if view in PATH_VIEWS or on_path:  # a step whose events are out of order has no path: said, not hidden
        for number, why in profile.step_paths(step, rules).refused.items():
            typer.echo(f"profview: warning: {clean(profile.path)}: step {number}: {clean(why)}", err=True)
    frame = refine(frame, pattern=filter_, sort=sort, ascending=asc, top=top)
    try:
        written = write_table(
            frame, out, inputs=(profile.path, *capture_inputs(capture)), overwrite=force, raw_formulas=raw_formulas
        )
        sys.stdout.flush()
    except BrokenPipeError:
        raise stdout_closed() from None
    from ..profiles.loading import remember_views

    remember_views(profile, model=view in DRILL_VIEWS)  # a drill-down re-uses the linked model
    say_written(written, frame.height, frame.width)


def parse_range(text: str | None) -> tuple[float, float] | None:
    """``--range START:END`` (µs from the trace's start, each a finite number) as ``(start, end)``."""
    import math

    if text is None:
        return None
    start, colon, end = text.partition(":")
    try:
        window = (float(start), float(end))
    except ValueError:
        window = None
    if not colon or window is None or not all(math.isfinite(v) for v in window):
        raise ProfviewError(None, f"--range {text[:40]!r}: give START:END in µs from the trace's start, e.g. 0:1500")
    return window
