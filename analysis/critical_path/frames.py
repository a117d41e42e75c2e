"""The critical path as frames: per step, what bounds it; the events on it; per name, its share.

Reads :mod:`.path` (the graph and its longest path); the CLI, the viewer and the API all
show these frames.  Steps are the host ranges of the ``ProfilerStep#N`` annotations (as HTA's
``critical_path_analysis(annotation="ProfilerStep")``); a trace without steps is one window, the
whole trace (step -1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from ...frames import STEP_NAME, STEP_NUMBER, fmt_us
from ..trace.model import TraceModel, step_windows
from .path import (
    BOUNDS,
    EDGE_KINDS,
    PROFVIEW_RULES,
    GraphCycle,
    PathResult,
    PathRules,
    breakdown,
    build_graph,
    longest_paths,
)

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np

#: Columns of the ``critical_path`` view (one row per step and bound kind; the rows of a step add
#: up to its path; ``step_us``: the step's span as the steps view has it, which the path never exceeds).
PATH_COLUMNS = ("step", "bound_by", "duration_us", "pct", "path_us", "step_us")
#: Columns of the ``critical_path_events`` view (the path in order).
EVENT_COLUMNS = (
    "step",
    "position",
    "kind",
    "name",
    "bound_by",
    "start_us",
    "dur_us",
    "on_path_us",
    "name_on_path_us",
    "name_total_us",
)
#: Columns of the ``critical_path_names`` view (per name: its time on the path beside its total).
NAME_COLUMNS = ("kind", "name", "calls", "on_path_us", "path_pct", "total_us", "on_path_share_pct")
#: Short labels of the bound kinds, for one line of text.
BOUND_LABELS = {
    "cpu_bound": "CPU",
    "data_loading": "data loading",
    "gpu_compute_bound": "GPU compute",
    "gpu_communication_bound": "GPU communication",
    "gpu_kernel_kernel_overhead": "kernel-kernel gaps",
    "gpu_kernel_launch_overhead": "launch overhead",
}


#: An event's own time on the path (its run, or its self time), not the gaps and launch delays
#: next to it: what a name's ``on_path_us`` counts.
#: The critical_path_names row holding path time that is no event's own: the time after a host
#: event until the next one starts on its thread (Python between operators, a gap).
BETWEEN_EVENTS = "(between events)"
OWN_TIME = ~pl.col("bound_by").is_in(["gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead"])


@dataclass
class StepPaths:
    """The critical paths of a trace's steps: ``steps`` (step, start, end of each host range, in
    window order) and the path of each (``result``)."""

    steps: pl.DataFrame
    result: PathResult
    model: TraceModel
    rules: PathRules
    #: Steps left out, and why (a dependency cycle from events out of order: that step alone).
    refused: dict[int, str] = field(default_factory=dict)


def step_ranges(model: TraceModel) -> pl.DataFrame:
    """One row per step: ``step``, ``start``, ``end`` in µs, the host range of ``ProfilerStep#N``
    (a trace without steps: one row, step -1, the whole trace), and ``span_start``, ``span_end``:
    the step's span, its GPU work included, as the steps view has it (:func:`step_windows`: from
    the later of its host start and the previous step's GPU end to the end of its own GPU work).
    A step's path counts only time inside its span, so it never exceeds it (issue 40)."""
    host = model.host.filter(pl.col("is_op") & pl.col("name").str.contains(STEP_NAME))
    if host.height == 0:
        return pl.DataFrame(
            {
                "step": [-1],
                "start": [model.span_start],
                "end": [model.span_end],
                "span_start": [model.span_start],
                "span_end": [model.span_end],
            },
            schema=dict.fromkeys(("start", "end", "span_start", "span_end"), pl.Float64) | {"step": pl.Int64},
        ).select("step", "start", "end", "span_start", "span_end")
    windows = step_windows(model).select("step", pl.col("start").alias("span_start"), pl.col("end").alias("span_end"))
    return (
        host.group_by("name")
        .agg(pl.col("ts").min().alias("start"), pl.col("end").max().alias("end"))
        .select(pl.col("name").str.extract(STEP_NUMBER).cast(pl.Int64).alias("step"), "start", "end")
        .join(windows, on="step", how="left")
        .with_columns(pl.col("span_start").fill_null(pl.col("start")), pl.col("span_end").fill_null(pl.col("end")))
        .sort("start", "step")  # overlapping steps in one order for both rule sets, every run
    )


def spans(steps: pl.DataFrame) -> list[tuple[float, float]]:
    """Each step's span ``(span_start, span_end)`` (:func:`step_ranges`), for :func:`build_graph`."""
    return list(zip(steps["span_start"].to_list(), steps["span_end"].to_list(), strict=True))


def has_runtime(model: TraceModel) -> bool:
    """Whether the trace links GPU work to the runtime calls that launched it (the path needs it)."""
    return bool(model.gpu.height) and bool(model.gpu["launch_row"].is_not_null().any())


def step_paths(
    model: TraceModel, rules: PathRules = PROFVIEW_RULES, comm: np.ndarray | None = None, step: int | None = None
) -> StepPaths:
    """The critical path of every step (``step``: only that one), in one graph."""
    steps = step_ranges(model)
    if step is not None:
        steps = steps.filter(pl.col("step") == step)
    windows = list(zip(steps["start"].to_list(), steps["end"].to_list(), strict=True))
    graph = build_graph(model, windows, rules, comm, spans(steps))
    try:
        return StepPaths(steps, longest_paths(graph), model, rules)
    except GraphCycle as cycle:  # no edge joins two steps: only the steps holding the cycle lose their path
        bad, reason = set(cycle.windows), str(cycle)
        if len(bad) == steps.height:
            raise
    refused = {int(step): reason for i, step in enumerate(steps["step"]) if i in bad}
    steps = steps.filter(~pl.int_range(steps.height).is_in(sorted(bad)))
    windows = list(zip(steps["start"].to_list(), steps["end"].to_list(), strict=True))
    graph = build_graph(model, windows, rules, comm, spans(steps))
    return StepPaths(steps, longest_paths(graph), model, rules, refused)


def path_frame(paths: StepPaths, weight: np.ndarray | None = None) -> pl.DataFrame:
    """The ``critical_path`` view: per step and bound kind, µs on the path and % of the path."""
    table = breakdown(paths.result, weight)
    steps = paths.steps["step"].to_list()
    lengths = table.sum(axis=1)
    spans = (paths.steps["span_end"] - paths.steps["span_start"]).to_list()
    rows = []
    for i, step in enumerate(steps):
        for j, bound in enumerate(BOUNDS):
            share = table[i, j] / lengths[i] * 100 if lengths[i] else 0.0
            rows.append((step, bound, float(table[i, j]), share, float(lengths[i]), float(spans[i])))
    schema = {
        "step": pl.Int64,
        "bound_by": pl.String,
        "duration_us": pl.Float64,
        "pct": pl.Float64,
        "path_us": pl.Float64,
        "step_us": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.col("duration_us").round(3), pl.col("pct").round(2), pl.col("path_us").round(3), pl.col("step_us").round(3)
    )


def bound_line(frame: pl.DataFrame, step: int | None = None, steps_us: float | None = None) -> str:
    """``critical path: 64% GPU compute, 33% CPU, 3% launch overhead`` for one step of a
    ``critical_path`` frame (``step`` None: all its steps together), the kinds of at least 0.5%,
    largest first; with ``steps_us`` (the duration of those steps together), the path's length
    against it first (``critical path 12.100 ms of the step's 31.200 ms (39%): …``), so that a share
    of the path is not read as a share of the step."""
    rows = frame if step is None else frame.filter(pl.col("step") == step)
    if rows.height == 0:
        return "critical path: no step"
    length = float(rows.unique("step")["path_us"].sum())
    shares = rows.group_by("bound_by").agg((pl.col("duration_us").sum() / (length or 1.0) * 100).alias("pct"))
    shares = shares.filter(pl.col("pct") >= 0.5).sort(["pct", "bound_by"], descending=[True, False])
    parts = [f"{pct:.0f}% {BOUND_LABELS[bound]}" for bound, pct in shares.iter_rows()]
    kinds = ", ".join(parts) if parts else "empty"
    if steps_us is None or steps_us <= 0:
        return "critical path: " + kinds
    of = "the step's" if step is not None or rows["step"].n_unique() == 1 else "the steps'"
    return f"critical path: {fmt_us(length)} of {of} {fmt_us(steps_us)} ({length / steps_us * 100:.0f}%): {kinds}"


def _event_table(paths: StepPaths) -> pl.DataFrame:
    """Kind, name, start, end of every event of the graph (host events first, then GPU work)."""
    graph, model = paths.result.graph, paths.model
    host = model.host[graph.host_rows].select(pl.col("kind").cast(pl.String), "name")
    gpu = model.gpu[graph.gpu_rows].select(pl.col("kind").cast(pl.String), "name")
    return pl.concat([host, gpu]).with_columns(
        pl.Series("start", graph.start), pl.Series("end", graph.end), pl.Series("window", graph.window)
    )


def on_path_by_event(paths: StepPaths, weight: np.ndarray | None = None) -> pl.DataFrame:
    """Per event on a path, in path order: ``window``, ``position``, ``event``, ``bound_by`` and
    ``on_path_us`` (an event with time of two kinds on the path, a kernel and the gap after it,
    is two rows)."""
    graph = paths.result.graph
    weight = graph.reported if weight is None else weight
    parts = []
    for w, path in enumerate(paths.result.edges):
        edges = path[(graph.bound[path] >= 0) & (graph.event[path] >= 0)]
        parts.append(
            pl.DataFrame(
                {
                    "window": np.full(len(edges), w, dtype=np.int64),
                    "order": np.arange(len(edges), dtype=np.int64),
                    "event": graph.event[edges],
                    "bound": graph.bound[edges].astype(np.int64),
                    "weight": weight[edges],
                }
            )
        )
    # Launch delays name no event: their kernel is the edge's destination.
    frame = pl.concat(parts) if parts else pl.DataFrame()
    launches = _launch_rows(paths, weight)
    frame = pl.concat([frame, launches]).sort("window", "order")
    return (
        frame.group_by("window", "event", "bound", maintain_order=True)
        .agg(pl.col("order").first(), pl.col("weight").sum().alias("on_path_us"))
        .sort("window", "order")
        .with_columns(
            pl.int_range(pl.len()).over("window").alias("position"),
            pl.col("bound").replace_strict(list(range(len(BOUNDS))), list(BOUNDS)).alias("bound_by"),
        )
        .drop("bound", "order")
    )


def _launch_rows(paths: StepPaths, weight: np.ndarray) -> pl.DataFrame:
    """Path edges of launch delays, attributed to the GPU work they launched."""
    graph = paths.result.graph
    parts = []
    for w, path in enumerate(paths.result.edges):
        positions = np.flatnonzero(graph.kind[path] == EDGE_KINDS.index("launch_delay"))
        edges = path[positions]
        parts.append(
            pl.DataFrame(
                {
                    "window": np.full(len(edges), w, dtype=np.int64),
                    "order": positions.astype(np.int64),
                    "event": graph.dst[edges] // 2,
                    "bound": graph.bound[edges].astype(np.int64),
                    "weight": weight[edges],
                }
            )
        )
    return pl.concat(parts)


def events_frame(paths: StepPaths) -> pl.DataFrame:
    """The ``critical_path_events`` view: each step's path in order, one row per event and bound
    kind, with the event's time on the path, and per name its time on the path and in total."""
    on_path = on_path_by_event(paths)
    events = _event_table(paths).with_row_index("event").with_columns(pl.col("event").cast(pl.Int64))
    rows = on_path.join(events.drop("window"), on="event", how="left")
    totals = _name_totals(paths)
    by_name = (
        rows.filter(OWN_TIME)
        .group_by("window", "kind", "name")
        .agg(pl.col("on_path_us").sum().alias("name_on_path_us"))
    )
    steps = paths.steps.with_row_index("window").select(pl.col("window").cast(pl.Int64), "step")
    origin = paths.model.span_start
    frame = (
        rows.join(by_name, on=["window", "kind", "name"], how="left")
        .join(totals, on=["window", "kind", "name"], how="left")
        .join(steps, on="window", how="left")
        .with_columns(
            (pl.col("start") - origin).round(3).alias("start_us"),
            (pl.col("end") - pl.col("start")).round(3).alias("dur_us"),
            pl.col("on_path_us").round(3),
            pl.col("name_on_path_us").round(3),
            pl.col("name_total_us").round(3),
        )
        .sort("window", "position")
    )
    return frame.select(EVENT_COLUMNS)


def _name_totals(paths: StepPaths) -> pl.DataFrame:
    """Per window, kind and name: calls and total time of the events of the window's graph."""
    events = _event_table(paths)
    return (
        events.group_by("window", "kind", "name")
        .agg(
            pl.len().alias("calls"), (pl.col("end") - pl.col("start")).clip(lower_bound=0).sum().alias("name_total_us")
        )
        .with_columns(pl.col("window").cast(pl.Int64))
    )


def names_frame(paths: StepPaths) -> pl.DataFrame:
    """The ``critical_path_names`` view: per kind and name, over the steps chosen, its time on the
    path (``on_path_us``, ``path_pct`` of the paths' length) beside its total time in those steps
    (``on_path_share_pct``: how much of its time is on the path; 0 says optimising it buys nothing)."""
    on_path = on_path_by_event(paths)
    events = _event_table(paths).with_row_index("event").with_columns(pl.col("event").cast(pl.Int64))
    rows = on_path.filter(OWN_TIME).join(events.select("event", "kind", "name", "start", "end"), on="event", how="left")
    # An edge on the path carries an event's own time and, on a host thread, the time after it
    # until the next event starts (Python between operators, a gap): that part is no name's time,
    # so a name's time on the path is capped at its own duration per event and the rest is a row
    # of its own, BETWEEN_EVENTS (h100_compile_reduce_overhead: cudaStreamWaitEvent read 1,527.7 µs
    # on the path for 7.4 µs of calls).
    own = pl.min_horizontal(pl.col("on_path_us"), (pl.col("end") - pl.col("start")).clip(lower_bound=0))
    per_event = (
        rows.group_by("event", "kind", "name", "start", "end")
        .agg(pl.col("on_path_us").sum())
        .with_columns(own.alias("own_us"), (pl.col("on_path_us") - own).alias("between_us"))
    )
    on = per_event.group_by("kind", "name").agg(pl.col("own_us").sum().alias("on_path_us"))
    between = per_event.group_by("kind").agg(pl.col("between_us").sum()).filter(pl.col("between_us") > 0.0005)
    totals = (
        _name_totals(paths)
        .group_by("kind", "name")
        .agg(pl.col("calls").sum(), pl.col("name_total_us").sum().alias("total_us"))
    )
    length = float(paths.result.length.sum())
    frame = totals.join(on, on=["kind", "name"], how="left").with_columns(
        # ends minus starts of timestamps near 1e15 µs against summed durations: a nanosecond or two
        pl.min_horizontal(pl.col("on_path_us").fill_null(0.0), pl.col("total_us")).alias("on_path_us")
    )
    if between.height:
        gaps = between.select(
            "kind",
            pl.lit(BETWEEN_EVENTS).alias("name"),
            pl.lit(0, dtype=frame.schema["calls"]).alias("calls"),
            pl.col("between_us").alias("total_us"),
            pl.col("between_us").alias("on_path_us"),
        )
        frame = pl.concat([frame, gaps.select(frame.columns)])
    return (
        frame.with_columns(
            (pl.col("on_path_us") / length * 100 if length else pl.lit(0.0)).round(2).alias("path_pct"),
            pl.when(pl.col("total_us") > 0)
            .then((pl.col("on_path_us") / pl.col("total_us") * 100).clip(upper_bound=100.0))
            .otherwise(0.0)
            .round(2)
            .alias("on_path_share_pct"),
            pl.col("on_path_us").round(3),
            pl.col("total_us").round(3),
        )
        # Ties broken by kind and name: the same file from run to run.
        .sort(["on_path_us", "total_us", "kind", "name"], descending=[True, True, False, False])
        .select(NAME_COLUMNS)
    )


def path_event_rows(paths: StepPaths) -> pl.DataFrame:
    """The events on the paths, for a timeline to mark: ``gpu`` (a ``model.gpu`` row, else a
    ``model.host`` row), ``row``, ``start`` in µs, sorted by start (each event once)."""
    graph = paths.result.graph
    events = on_path_by_event(paths)["event"].unique().to_numpy()
    n_host = graph.n_host
    gpu = events >= n_host
    rows = np.zeros(len(events), dtype=np.int64)
    rows[gpu] = graph.gpu_rows[events[gpu] - n_host]
    rows[~gpu] = graph.host_rows[events[~gpu]]
    return pl.DataFrame({"gpu": gpu, "row": rows.astype(np.int64), "start": graph.start[events]}).sort("start", "gpu")
