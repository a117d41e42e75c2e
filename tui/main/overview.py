"""The Overview: trace, devices, span, GPU busy, average step breakdown, hints, top tables."""

from __future__ import annotations

import contextlib
from typing import Any

import polars as pl
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.containers import VerticalScroll
from textual.widgets import Static

from ...errors import ProfviewError
from ...frames import CATEGORIES, busy_text, communication_lines, device_note, fmt_us, rank_line, span_text
from ...profiles.iteration_views import IterationScope
from ...profiles.trace_profile import Profile
from ...report.profile_summary import as_job_hint
from ...report.wording import plural
from ...sanitize import clean
from ..widgets.bars import legend, stacked_bar

TOP = 5  # the top kernels and operators on a 24-line terminal; more on a taller one (issue 22)


def top_rows(height: int) -> int:
    """How many top kernels (and operators) the Overview lists on a pane ``height`` lines tall."""
    return max(TOP, (height - 22) // 2 + TOP)


#: Traces with more events than this get their critical path computed off the UI thread (it takes
#: about a second per 250,000 events); smaller ones on the spot.
PATH_ON_THE_SPOT = 200_000


def path_pending(profile: Profile) -> bool:
    """Whether the critical path still has to be computed off the UI thread (see :func:`path_line`)."""
    return profile.is_trace and not profile.has_step_paths() and profile.event_count > PATH_ON_THE_SPOT


def compute_path(profile: Profile) -> None:
    """Compute the critical path (a worker thread's job); a trace without one is no error here."""
    with contextlib.suppress(ProfviewError):
        profile.step_paths()


def _top_table(title: str, rows: list[tuple[Any, ...]], headers: tuple[str, ...]) -> Table:
    """A top-N table: the name gives way (cut in the middle, both ends kept), the figures stay whole."""
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, expand=True)
    table.add_column(headers[0], ratio=1, no_wrap=True, overflow="ellipsis")
    for header in headers[1:]:
        table.add_column(header, justify="right", no_wrap=True)
    for name, *figures in rows:
        table.add_row(Text(clean(name)), *(Text(f) for f in figures))
    return table


def steps_phrase(steps: int) -> str:
    """'3 steps', or why there are none (a trace recorded without ``profiler.step()``)."""
    return plural(steps, "step") if steps else "no ProfilerStep ranges"


def kernel_figures(row: dict[str, Any]) -> tuple[str, str]:
    """(total, share) of a top kernel; a kernel with a count and no time (some tables) says so."""
    if row.get("total_us") is None:
        calls = row.get("calls")
        return (plural(calls, "call") if isinstance(calls, int) else "-", "no time")
    return fmt_us(row["total_us"]), f"{(row['pct'] or 0):.1f}%"


def title_lines(profile: Profile, title: str | None = None) -> list[RenderableType]:
    """The first lines of either Overview: the file (or ``title``: a rank of a job), its format, its warnings."""
    parts: list[RenderableType] = [Text(f"{clean(title or profile.path)}  ({profile.format})", style="bold")]
    parts += [Text(f"warning: {clean(warning)}", style="yellow") for warning in profile.warnings]
    return parts


def top_kernels(kernels: pl.DataFrame, title: str, top: int = TOP) -> list[RenderableType]:
    """A blank line and the table of the first ``top`` rows of a kernel table."""
    rows = [(r["name"], *kernel_figures(r)) for r in kernels.head(top).iter_rows(named=True)]
    return [Text(""), _top_table(title, rows, ("kernel", "total", "share"))]


def overview_renderable(
    profile: Profile,
    width: int,
    step: int | None = None,
    title: str | None = None,
    top: int = TOP,
    iteration: IterationScope | None = None,
) -> RenderableType:
    """Everything the Overview shows, as inert Rich renderables (``step``: that step's figures too,
    and its top kernels and operators; issue 13; ``iteration``: that iteration's, issue 31)."""
    chosen = step if profile.is_trace else None  # a text format's tables are not per step
    narrow = iteration if iteration is not None and profile.is_trace else chosen
    parts = title_lines(profile, title)
    if profile.is_trace:
        view = profile.overview()
        rank = rank_line(view)
        if rank:
            parts.append(Text(clean(rank), style="bold"))
        for device in view.devices:
            parts.append(Text(f"device {clean(device)}"))
        inferred = profile.device_inference()
        if not view.devices:  # the GPU work's device is not listed: say which one the peaks are from
            parts.append(Text(clean(inferred or "device: not recorded in this trace")))
        note = device_note(view)
        if note:
            parts.append(Text(note, style="dim"))
        # Issue 34: with a step chosen, every line says its scope: the whole trace's, or the step's.
        whole = WHOLE if chosen is not None else ""
        parts.append(
            Text(
                f"{whole}span {span_text(view.span_us)} · {steps_phrase(view.steps)} · GPU busy "
                f"{busy_text(view.gpu_busy_pct)} · {view.gpu_events:,} GPU events · "
                f"kernel time {fmt_us(view.kernel_us)}"
            )
        )
        for line in communication_lines(view):
            parts.append(Text(whole + clean(line)))
        if chosen is None:  # the step's own lines go under its heading, below
            for line in profile.efficiency_lines():  # issue 24: categories, model FLOPs, MFU
                if line != inferred or view.devices:  # said once, as the device line above
                    parts.append(Text(clean(line)))
        for line in profile.graph_lines():  # issue 36: graph replays, attributed or how to be
            parts.append(Text(whole + clean(line)))
        if profile.serving_known():  # issue 31: one line per serving phase (searched off the UI thread)
            parts.extend(Text(whole + clean(line)) for line in profile.phase_lines())
        average = view.average_step
        total = average.get("duration", 0.0)
        heading = f"average step {fmt_us(total)}" if view.steps else f"the whole trace {fmt_us(total)} (no steps)"
        if chosen is not None and view.steps:
            heading = f"{WHOLE}average step of {steps_phrase(view.steps)} {fmt_us(total)}"
        parts.append(Text(f"\n{heading}", style="bold"))
        parts.append(stacked_bar(average, total, max(width - 2, 10)))
        parts.append(legend({c: average[c] for c in CATEGORIES}, total, width - 1))
        parts.append(path_line(profile))
        if chosen is not None:
            parts.extend(step_section(profile, chosen, width))
        if iteration is not None:
            parts.extend(iteration_section(profile, iteration))
        for hint in view.hints:
            parts.append(Text(f"hint{' (whole trace)' if chosen is not None else ''}: {clean(hint)}", style="italic"))
    if not profile.is_trace and profile.metadata.get("average_step"):
        recorded = profile.metadata["average_step"]
        total = recorded.get("duration") or sum(recorded.get(c, 0.0) for c in CATEGORIES)
        parts.append(Text(f"\naverage step {fmt_us(total)} ({clean(profile.format)})", style="bold"))
        parts.append(stacked_bar(recorded, total, max(width - 2, 10)))
        parts.append(legend({c: recorded.get(c, 0.0) for c in CATEGORIES}, total, width - 1))
    for key, value in (profile.metadata.get("environments") or {}).items():
        parts.append(Text(f"{clean(key)}: {clean(value)}"))
    for hint in profile.metadata.get("hints") or []:
        parts.append(Text(f"hint: {clean(hint)}", style="italic"))
    as_job = as_job_hint(profile.metadata, profile.path, "profview") if profile.is_trace else None
    if as_job:  # an export of several processes: the job screen shows them side by side
        parts.append(Text(f"hint: {clean(as_job)}", style="italic"))
    if len(profile.runs) > 1:
        parts.append(Text(f"runs: {', '.join(profile.runs)} (r: next run)", style="dim"))
    for name, reason in profile.missing.items():
        parts.append(Text(f"no {name} view: {clean(reason)}", style="italic"))
    if profile.available("kernels"):
        parts += top_kernels(profile.kernels(step=narrow), f"Top kernels{only(narrow)}", top)
    if profile.available("ops"):
        parts.append(Text(""))
        parts.append(top_operators(profile, narrow, top))
    return Group(*parts)


def top_operators(profile: Profile, narrow: int | IterationScope | None, top: int) -> RenderableType:
    """The top operators, as the Operators tab and ``summary`` rank them: where graphs replay, by the
    GPU time attributed through their capture too (``replayed``), so an operator whose work runs
    in replays (``vllm::moe_forward``) is listed."""
    from ...profiles.views import with_graph_time

    ops = with_graph_time(profile, profile.ops(step=narrow), narrow).head(top)
    rows: list[tuple[Any, ...]]
    if "graph_device_us" in ops.columns:
        headers: tuple[str, ...] = ("operator", "device total", "replayed", "host total")
        rows = [(r["name"], fmt_us(r["device_total_us"]), fmt_us(r["graph_device_us"]), fmt_us(r["host_total_us"]))
                for r in ops.iter_rows(named=True)]
    else:
        headers = ("operator", "device total", "host total")
        rows = [(r["name"], fmt_us(r["device_total_us"]), fmt_us(r["host_total_us"]))
                for r in ops.iter_rows(named=True)]
    return _top_table(f"Top operators{only(narrow)}", rows, headers)


def early_overview_renderable(profile: Profile, width: int, title: str | None = None, top: int = TOP) -> RenderableType:
    """The Overview of a large trace while its model is built: what the kernel table alone tells.

    The top kernels and the GPU totals come from the kernels frame (ready right after the parse);
    devices, steps, GPU busy and the operators follow when the model is linked (issue 13).
    """
    parts = title_lines(profile, title)
    kernels = profile.kernels()
    totals = kernels.select(pl.col("calls").sum(), pl.col("total_us").sum()).row(0)
    launches = plural(totals[0] or 0, "kernel launch", "kernel launches")
    parts.append(Text(f"{plural(profile.event_count, 'event')} · {launches} · kernel time {fmt_us(totals[1] or 0.0)}"))
    parts.append(Text("linking GPU work to operators and steps… (Kernels is ready: 2)", style="italic"))
    parts += top_kernels(kernels, "Top kernels", top)
    return Group(*parts)


#: What a line of the Overview covers when a step is chosen and the line is not that step's (issue 34).
WHOLE = "whole trace · "


def only(step: int | IterationScope | None) -> str:
    if isinstance(step, IterationScope):  # an iteration narrows as a step does
        return f" · iteration {step.iteration} only"
    return "" if step is None else f" · step {step} only"


def iteration_section(profile: Profile, scope: IterationScope) -> list[RenderableType]:
    """The chosen iteration's row of the iterations view, in two lines."""
    rows = profile.iterations(scope.pattern).filter(pl.col("iteration") == scope.iteration)
    if rows.height == 0:
        return []
    row = rows.row(0, named=True)
    tokens = "tokens unknown" if row["tokens"] is None else f"{row['tokens']} tokens ({row['tokens_from']})"
    heading = Text(f"\niteration {scope.iteration} only: {row['phase']}, {tokens}", style="bold")
    heading.append(" · Iterations: a = all", style="dim")
    per_token = "" if row["gpu_us_per_token"] is None else f" ({fmt_us(row['gpu_us_per_token'])} per token)"
    figures = (
        f"{clean(scope.name)}: host {fmt_us(row['host_us'])}, wall {fmt_us(row['wall_us'])}, "
        f"GPU {fmt_us(row['gpu_us'])}{per_token}, GPU busy {row['gpu_busy_pct']:.1f}%, "
        f"{plural(row['kernels'], 'kernel')}, {plural(row['graph_launches'], 'graph launch', 'graph launches')}"
    )
    return [heading, Text(figures)]


def step_section(profile: Profile, step: int, width: int) -> list[RenderableType]:
    """Step ``step``: duration, GPU busy inside it, its breakdown bar and legend (its steps-table row)."""
    row = profile.step_overview(step)
    total = row["duration_us"]
    heading = Text(f"\nstep {step} only: {fmt_us(total)} · GPU busy {row['gpu_busy_pct']:.1f}%", style="bold")
    heading.append(f" ({fmt_us(row['gpu_busy_us'])}) · Steps: a = all steps", style="dim")
    values = {c: row[f"{c}_us"] or 0.0 for c in CATEGORIES}
    own = [Text(clean(line)) for line in profile.efficiency_lines(step)]  # each says "in step N"
    bar = [stacked_bar(values, total, max(width - 2, 10)), legend(values, total, width - 1)]
    return [heading, *bar, *own, path_line(profile, step)]


def path_line(profile: Profile, step: int | None = None, short: bool = False) -> Text:
    """What bounds the steps (``step``: that one): ``critical path (all steps): 64% GPU compute,
    33% CPU, 3% kernel-kernel gaps`` (issue 26), or why the trace has no critical path
    (``short``: ``critical path: …`` without saying which steps)."""
    from ...analysis.critical_path.frames import bound_line

    if not profile.has_step_paths() and profile.event_count > PATH_ON_THE_SPOT:
        return Text("critical path: computing…", style="dim italic")  # the view computes it off the UI thread
    try:
        frame = profile.critical_path()
    except ProfviewError as exc:
        reason = "" if short else f" ({clean(exc.problem)})"
        return Text(f"critical path: not available{reason}", style="dim")
    if step is not None and step not in frame["step"].to_list():
        why = profile.step_paths().refused.get(step)  # events out of order in that step alone
        reason = f" ({clean(why)})" if why and not short else ""
        return Text(f"critical path: not available for this step{reason}", style="dim")
    steps_us = _path_steps_us(profile, frame, step)
    if short:  # a title line: the path's share of the step, then its kinds
        line = bound_line(frame, step)
        rows = frame if step is None else frame.filter(pl.col("step") == step)
        length = float(rows.unique("step")["path_us"].sum())
        if steps_us:
            line = line.replace("critical path:", f"critical path ({length / steps_us * 100:.0f}% of the step):", 1)
        return Text(line)
    line = bound_line(frame, step, steps_us)
    whole = bool((frame["step"] < 0).all())  # no ProfilerStep: one window, the whole trace
    where = "whole trace" if whole else ("all steps" if step is None else f"step {step}")
    return Text(line.replace("critical path:", f"critical path ({where}):", 1))


def _path_steps_us(profile: Profile, frame: pl.DataFrame, step: int | None) -> float | None:
    """The summed duration of the steps the critical path line covers (None where unknown)."""
    covered = frame["step"].unique().to_list() if step is None else [step]
    if any(s is None or s < 0 for s in covered):  # no ProfilerStep: the window is the trace
        return None
    steps = profile.steps().filter(pl.col("step").is_in(covered))
    return float(steps["duration_us"].sum()) if steps.height == len(covered) else None


class OverviewView(VerticalScroll):
    """The Overview pane (``step``: narrowed to one step; ``early``: the kernel-only Overview shown while a
    large trace links; issue 13)."""

    can_focus = True
    #: Issue 34: the scrollbar's room is kept, so its appearing does not reflow the lines.
    DEFAULT_CSS = "OverviewView { scrollbar-gutter: stable; }"

    def __init__(
        self, profile: Profile, *, id: str | None = None, early: bool = False, title: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.profile = profile
        self.title_text = title
        self.early = early
        self.step: int | None = None
        self.iteration: IterationScope | None = None  # chosen in Iterations (None: all)

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="overview-body")

    def complete(self) -> None:
        """The model is linked: show the whole Overview."""
        self.early = False
        if self.is_attached:
            self.on_resize()

    def set_step(self, step: int | None) -> None:
        self.step = step
        self.iteration = None
        self.on_resize()

    def set_iteration(self, scope: IterationScope | None) -> None:
        """Narrowed to one iteration (None: all)."""
        self.iteration = scope
        self.step = None
        self.on_resize()

    def on_resize(self) -> None:
        top = top_rows(self.size.height)
        width = self.scrollable_content_region.width or self.size.width  # the scrollbar's gutter left out
        if self.early:
            body = early_overview_renderable(self.profile, width, self.title_text, top)
        else:
            body = overview_renderable(self.profile, width, self.step, self.title_text, top, self.iteration)
            if path_pending(self.profile):
                self.path_in_background()
            if self.profile.is_trace and not self.profile.serving_known():
                self.phases_in_background()
        self.query_one("#overview-body", Static).update(body)

    @work(thread=True, exclusive=True, group="serving-phases", exit_on_error=False)
    def phases_in_background(self) -> None:
        """Whether the trace is a serving run, and its phases, off the UI thread; the Overview
        redraws with its per-phase lines (a trace without serving iterations shows none)."""
        with contextlib.suppress(ProfviewError):
            self.profile.phase_lines()
        if self.profile.serving_known():
            self.app.call_from_thread(self.on_resize)

    @work(thread=True, exclusive=True, group="critical-path", exit_on_error=False)
    def path_in_background(self) -> None:
        """The critical path of a large trace, off the UI thread; the Overview redraws with it."""
        compute_path(self.profile)
        self.app.call_from_thread(self.on_resize)
