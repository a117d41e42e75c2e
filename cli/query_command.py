"""``profview query TRACE [TRACE ...] -q SQL``: Polars SQL over every table profview exports.

Each argument is one trace, or one job (a directory, glob or archive of rank traces); every table
holds the rows of all of them, told apart by ``trace`` (and ``rank`` in a job's per-rank tables).
The answer goes to a file through the export writer (atomic, never over an input) or, without
``-o``, onto the terminal as an aligned table of sanitised text.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import ProfviewError
from .options import (
    AsJob,
    CaptureOption,
    CommPattern,
    DaskOption,
    ForceOption,
    NoCache,
    RawFormulas,
    StepRange,
    StrictOption,
    Workers,
)
from .output import say_written, stdout_closed

if TYPE_CHECKING:
    import polars as pl

    from ..profiles.trace_profile import Profile
    from ..query.tables import Tables


def query(
    paths: Annotated[
        list[str],
        typer.Argument(help="Traces (.json, .json.gz), or jobs (a directory, glob or archive of rank traces)."),
    ],
    sql: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--query", "-q", help="One SQL statement over the tables (see --tables), e.g. "
                     "\"SELECT name, total_us FROM kernels ORDER BY total_us DESC LIMIT 5\"."),
    ] = None,
    out: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--out", "-o", help="Write the answer to .csv, .parquet or .json (- for CSV on stdout)."),
    ] = None,
    list_tables: Annotated[
        bool, typer.Option("--tables", help="List the tables, their columns and units, and exit.")
    ] = False,
    force: ForceOption = False,
    raw_formulas: RawFormulas = False,
    no_cache: NoCache = False,
    comm_pattern: CommPattern = None,
    step_range: StepRange = None,
    workers: Workers = None,
    dask: DaskOption = None,
    strict: StrictOption = False,
    as_job: AsJob = False,
    capture: CaptureOption = None,
) -> None:
    """Answer an SQL query over the tables of one or more traces or jobs."""
    from ..jobs.inputs import is_job

    if not list_tables and sql is None:
        raise ProfviewError(None, "query needs -q 'SQL' (or --tables to list the tables)")
    from ..report.export import check_target, export_format

    if out is not None:
        export_format(out)
    if out not in (None, "-"):  # an output that cannot be written is said before the work, not after it
        from ..reads import note

        note(*paths, *(capture or []))
        check_target(out, inputs=tuple(paths), overwrite=force)
    jobs = list(paths) if as_job else [p for p in paths if is_job([p])]
    if capture and (jobs or len(paths) > 1):
        raise ProfviewError(None, "--capture: one trace's option, not a job's or several traces'")
    with contextlib.ExitStack() as stack:
        sources, inputs, profiles = _open(
            paths, jobs, stack, no_cache, comm_pattern, workers, dask, strict, capture, step_range, as_job
        )
        if out not in (None, "-"):  # and never over a job's own traces or archives
            check_target(out, inputs=inputs, overwrite=force)
        from ..query.tables import stacked

        tables = stacked(sources)
        if list_tables:
            _print_tables(tables)
            return
        assert sql is not None
        from ..profiles.views import EVENT_VIEWS
        from ..query.engine import named_tables, run_sql

        if not set(named_tables(sql, list(tables))) & {"events", *EVENT_VIEWS}:
            for profile in profiles:  # as a one-shot export: the events go once the model is linked
                profile.release_events_after_link = True

        answer = run_sql(tables, sql)
        _write(answer, out, inputs, force, raw_formulas)
        from ..profiles.loading import remember_views

        for profile in profiles:  # the tables computed here are read from the cache next time
            remember_views(profile)


def _open(
    paths: list[str], jobs: list[str], stack: contextlib.ExitStack, no_cache: bool, comm_pattern: str | None,
    workers: int | None, dask: str | None, strict: bool, capture: list[str] | None, step_range: str | None = None,
    as_job: bool = False,
) -> tuple[list[Tables], tuple[str, ...], list[Profile]]:
    """Each input's tables (a job's kept open by ``stack``), the files never to write over, and
    the trace profiles (whose views are cached once the query has run); ``step_range``: each
    Nsight Systems export's ``--step-range`` (a job of traces or a memory snapshot refuses it);
    ``as_job``: each input is an Nsight Systems export, a job of its processes."""
    from ..query.tables import job_tables, snapshot_job_tables, snapshot_tables, trace_tables
    from .target import Target

    sources: list[Tables] = []
    inputs: list[str] = list(paths)
    profiles: list[Profile] = []
    for path in paths:
        target = Target.of([path], as_job)
        target.refuse_step_range(step_range)
        if target.snapshots:
            if capture:
                raise ProfviewError(path, "--capture: a trace's option, not a memory snapshot's")
            inputs += target.snapshots
            sources.append(snapshot_job_tables(list(target.snapshots), label=path))
            continue
        if path in jobs:
            job = stack.enter_context(target.open_job(no_cache, comm_pattern, workers, dask, strict, step_range))
            inputs += job.input_files()
            sources.append(job_tables(job, label=path, use_cache=not no_cache))
            continue
        if target.is_snapshot:
            if capture:
                raise ProfviewError(path, "--capture: a trace's option, not a memory snapshot's")
            sources.append(snapshot_tables(target.load_snapshot(), label=path))
            continue
        if len(paths) == 1:
            target.start_reading(no_cache)
        profile = target.load(no_cache, None, comm_pattern, step_range)
        if capture:
            profile.use_capture(capture, use_cache=not no_cache)
        profiles.append(profile)
        sources.append(trace_tables(profile, label=path))
    return sources, tuple(inputs), profiles


def _print_tables(tables: Tables) -> None:
    """Each table: what a row is, then its columns with type and unit (a table the inputs cannot
    give says why instead)."""
    from ..query.tables import unit_of
    from ..sanitize import clean

    lines: list[str] = []
    for name in tables:
        lines.append(f"{name}: {tables.about.get(name, '')}")
        try:
            frame = tables[name]
        except ProfviewError as exc:
            lines.append(f"  (not in these inputs: {clean(exc.problem)})")
            continue
        width = max((len(c) for c in frame.columns), default=0)
        for column, dtype in frame.schema.items():
            unit = unit_of(column)
            lines.append(f"  {clean(column):<{width}}  {dtype!s}{f'  [{unit}]' if unit else ''}")
    try:
        typer.echo("\n".join(lines))
        sys.stdout.flush()
    except BrokenPipeError:
        raise stdout_closed() from None


def _write(answer: pl.DataFrame, out: str | None, inputs: tuple[str, ...], force: bool, raw_formulas: bool) -> None:
    """The answer to ``out`` (the export writer), or onto the terminal as an aligned table."""
    try:
        if out is None:
            from ..report.frame_text import print_frame

            print_frame(answer)
            sys.stdout.flush()
            return
        from ..report.export import write_table

        written = write_table(answer, out, inputs=inputs, overwrite=force, raw_formulas=raw_formulas)
        sys.stdout.flush()
    except BrokenPipeError:
        raise stdout_closed() from None
    say_written(written, answer.height, answer.width)
