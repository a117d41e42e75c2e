"""Where Enter on a row leads: one route per table, as data (view name → the drill-down it opens).

A route takes the profile, the row under the cursor, the breadcrumb so far and ``step`` (issue 13:
the step chosen in Steps, or None; the app's breadcrumb says "step N only"), and returns the
screen to push, or a one-line reason why this row has no drill-down.  No widget logic here
beyond building the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...frames import fmt_us
from ...profiles.trace_profile import Profile
from .screen import DrillScreen

Route = Callable[..., "DrillScreen | str"]  # (profile, row, path, step=None)


def _kernel_origins(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """A kernel → the operator chains and Python stacks that launched it."""
    if row.get("kind") not in (None, "kernel"):
        return "memcpy/memset rows have no launch chain of their own"
    name = row["name"]
    with_stack = bool(profile.metadata.get("with_stack"))
    frame = profile.kernel_launches(name, step)
    return DrillScreen("kernel_launches", frame, [*path, f"kernel {name}"], with_stack, profile=profile)


def _op_launches(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """An operator (or a runtime call) → the GPU work launched under it."""
    name = row["name"]
    if row.get("kind") == "overhead":
        return "a profiler overhead range launches no GPU work"
    return DrillScreen("op_launches", profile.launches(name, step), [*path, f"op {name}"], profile=profile)


def _launching_op(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """A kernel's launch path → its operator's launches."""
    return _op_launches(profile, {"name": row.get("op")}, path, step)


def _module_kernels(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """A module (issue 15) → the GPU work launched while it was open; a source line likewise."""
    module = row.get("path")
    if not isinstance(module, str):  # a row of the source-line table
        name = str(row.get("name"))
        frame = profile.source_kernels(name, step)
        return DrillScreen("op_launches", frame, [*path, f"line {name}"], profile=profile)
    frame = profile.module_kernels(module, step)
    return DrillScreen("op_launches", frame, [*path, f"module {module}"], profile=profile)


def _gpu_event(profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None) -> DrillScreen | str:
    """One GPU event of the Timeline → its own launch path and Python stack (one row)."""
    from ...analysis.tables.instance import kernel_instance_launch

    frame = kernel_instance_launch(profile.model, int(row["gpu_row"]))
    with_stack = bool(profile.metadata.get("with_stack"))
    return DrillScreen("kernel_launches", frame, [*path, f"{row['name']} at {row['at']}"], with_stack)


def _host_event(profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None) -> DrillScreen | str:
    """One host call of the Timeline → the GPU work launched under this call (not every call of its name)."""
    from ...analysis.tables.instance import instance_launches

    frame = instance_launches(profile.model, int(row["host_row"]))
    return DrillScreen("op_launches", frame, [*path, f"{row['name']} at {row['at']}"])


def _shape_launches(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """An operator and shapes of the perf model → the GPU work its calls of those shapes launched."""
    name, dims = row["name"], row.get("input_dims")
    frame = profile.launches(name, step, input_dims=dims)
    return DrillScreen("op_launches", frame, [*path, f"op {name} {dims or ''}".rstrip()])


def _graph_nodes(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """A graph → its nodes, each with its captured launch's operator, module and source line, under
    a caption saying what its inferred ``block`` labels are (where it has any)."""
    graph = int(row["graph"])
    nodes = profile.graph_nodes(graph)
    caption = profile.graph_block_note(graph)
    return DrillScreen("graph_nodes", nodes, [*path, f"graph {graph}"], profile=profile, caption=caption)


def _node_origin(
    profile: Profile, row: dict[str, Any], path: list[str], step: int | None = None
) -> DrillScreen | str:
    """A graph node → its captured launch's operator chain and Python stack (one row; Enter
    on it: that operator's GPU work)."""
    from ...analysis.graphs.attribution import node_launch_frame

    if row.get("op") is None:
        return f"not attributed: {row.get('how')}"
    frame = node_launch_frame(row)
    return DrillScreen("kernel_launches", frame, [*path, f"node {row['node']}"], True, profile=profile)


def _graph_ops(profile: Profile, row: dict[str, Any], path: list[str], step: object = None) -> DrillScreen | str:
    """Issue 40: ``o`` in Graphs → every GPU µs by operator and module, replays charged through their
    capture (the graph_ops view: filter, sort and export as any table).  Never narrowed to a step."""
    frame = profile.graph_ops()
    scope = " · whole trace (not narrowed)" if step is not None else ""
    return DrillScreen("graph_ops", frame, [*path[:1], f"operators through the capture{scope}"], profile=profile)


def _peer_table(view: str, label: str) -> Route:
    """A whole-trace table the Efficiency pane opens by a key (``t``: Tensor Cores per GEMM kernel,
    ``l``: launch delays per name, ``u``: queue length per stream), as a drill-down under the
    Efficiency crumb: filter, sort and export as any table.  Never narrowed to a step (it says so)."""

    def route(profile: Profile, row: dict[str, Any], path: list[str], step: object = None) -> DrillScreen | str:
        from ...errors import ProfviewError

        try:
            frame = getattr(profile, view)()
        except ProfviewError as exc:
            return exc.problem
        scope = " · whole trace (not narrowed)" if step is not None else ""
        return DrillScreen(view, frame, ["Efficiency", f"{label}{scope}"], profile=profile)

    return route


def _name_launches(profile: Profile, row: dict[str, Any], path: list[str], step: object = None) -> DrillScreen | str:
    """A name of the launch-delay table → each of its launches (delay, call and GPU durations)."""
    import polars as pl

    name = row["name"]
    frame = profile.launch_stats().filter(pl.col("name") == name)
    return DrillScreen("launch_stats", frame, [*path, f"launches of {name}"], profile=profile)


def _time_range(profile: Profile, row: dict[str, Any], path: list[str], step: object = None) -> DrillScreen | str:
    """The Timeline's marked range → its per-name aggregates (the range view, as ``export --view
    range --range START:END`` writes it)."""
    start, end = float(row["start_us"]), float(row["end_us"])
    frame = profile.range_aggregates(start, end)
    crumb = f"range {fmt_us(start)} … {fmt_us(end)} ({fmt_us(end - start)})"
    return DrillScreen("range", frame, [*path, crumb], profile=profile)


#: The table a row is in → where Enter on it leads.
ROUTES: dict[str, Route] = {
    "kernels": _kernel_origins,
    "op_launches": _kernel_origins,
    "ops": _op_launches,
    "kernel_launches": _launching_op,
    "modules": _module_kernels,
    "timeline_gpu": _gpu_event,  # one event: the step chosen in Steps changes nothing
    "timeline_host": _host_event,
    "timeline_range": _time_range,  # the Timeline's { and }: a range, not a row of a table
    "efficiency": _shape_launches,
    "graphs": _graph_nodes,
    "graph_nodes": _node_origin,
    "graph_ops_all": _graph_ops,  # not a row's: the Graphs pane's o (tui/main/graphs.py)
    # not a row's: the Efficiency pane's t, l, u (tui/main/efficiency.py)
    "tensor_cores_all": _peer_table("tensor_cores", "Tensor Cores per GEMM kernel"),
    "launch_names_all": _peer_table("launch_names", "launch delay per kernel"),
    "queue_length_all": _peer_table("queue_length", "queue length per stream"),
    "launch_names": _name_launches,
}
