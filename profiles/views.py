"""Select, filter and sort a view of a profile: shared by the CLI, the viewer and exports."""

from __future__ import annotations

import polars as pl

from ..errors import ProfviewError
from .iteration_scope import IterationScope
from .trace_profile import Profile

VIEW_NAMES: tuple[str, ...] = ("kernels", "ops", "steps", "launches")
#: Issue 15: memory, GPU time by module / source line, GPU idle gaps and overlap per step.
VIEW_NAMES += ("memory", "memory_ops", "memory_peaks", "modules", "sources", "gpu_idle", "gaps")
#: Issue 24: the perf model per operator and shapes, GPU time by kernel category.
VIEW_NAMES += ("efficiency", "categories")
#: Issue 26: the critical path of each step, the events on it, and per name its time on it.
PATH_VIEWS = ("critical_path", "critical_path_events", "critical_path_names")
VIEW_NAMES += PATH_VIEWS
#: Issue 36: graph replays: the graphs, their nodes, and operators with replays through their capture.
GRAPH_VIEWS = ("graphs", "graph_nodes", "graph_ops")
VIEW_NAMES += GRAPH_VIEWS
#: Issue 31: serving and decode loops, one row per iteration, and the iterations per phase.
ITERATION_VIEWS = ("iterations", "phases")
#: Issue 40: the views ``--iteration N`` (an iteration's number) narrows to that iteration, as ``--step N``.
ITERATION_NARROWED = ("kernels", "ops", "launches", "modules", "efficiency", "categories")
VIEW_NAMES += ITERATION_VIEWS
#: Launch statistics and queue length (HTA's definitions), Tensor Core use per GEMM kernel.
PEER_VIEWS = ("launch_stats", "launch_names", "queue_length", "queue_series", "tensor_cores")
VIEW_NAMES += PEER_VIEWS
#: A time range's per-name aggregates (the Timeline's { and }; ``--range START:END``).
VIEW_NAMES += ("range",)
#: Views that walk the linked model (drill-downs): their export stores the model in the cache.
DRILL_VIEWS = ("launches",)
#: Views that read the events frame themselves; every other view of a trace reads only the linked
#: model and the GPU frame, so a one-shot export of it lets the events go once they are linked
#: (:attr:`Profile.release_events_after_link`).
EVENT_VIEWS = ("memory", "memory_ops", "memory_peaks")


def with_efficiency(profile: Profile, view: str, frame: pl.DataFrame, by_shape: bool = False) -> pl.DataFrame:
    """A trace's kernel or operator table with ``category`` at the end (issue 32: a view pays only for
    what it shows): kernels by their name alone, operators by the operator rule
    (:mod:`profview.analysis.efficiency.categories`); no model is linked and no perf model run for it
    (TFLOP/s per operator and shapes is the efficiency view's).  A text format's table as it is."""
    if not profile.is_trace or frame.height == 0 or "name" not in frame.columns:
        return frame
    from ..analysis.efficiency.categories import operator_categories, with_name_category

    if view == "kernels":
        return with_triton(profile, with_name_category(frame, profile.comm_pattern))
    return frame.with_columns(operator_categories(frame["name"]))


def with_triton(profile: Profile, frame: pl.DataFrame) -> pl.DataFrame:
    """A trace's kernel table with ``fused_ops``, ``kernel_file``, ``kernel_hash``,
    ``num_warps`` and ``num_stages`` at the end, where it has Triton kernels (another table as
    it is, at no cost: only its names are looked at)."""
    from ..analysis.efficiency.work.triton import is_triton

    names = frame["name"].unique().to_list() if profile.is_trace and "name" in frame.columns else []
    if not any(is_triton(n) for n in names if n):
        return frame
    return frame.join(profile.kernel_triton(), on="name", how="left", maintain_order="left")


#: The name the kernel table with its categories (and Triton columns) is kept under in the cache.
KERNELS_CATEGORISED = "kernels_categorised"


#: The columns ``on_path=True`` adds to kernels and ops (issue 26), from ``critical_path_names``.
ON_PATH_COLUMNS = ("on_path_us", "path_pct")
#: Kinds of ``critical_path_names`` rows that the kernel table lists (GPU work).
_GPU_KINDS = ("kernel", "memcpy", "memset")


def with_on_path(
    profile: Profile, view: str, frame: pl.DataFrame, step: int | None = None, rules: str = "profview"
) -> pl.DataFrame:
    """A trace's kernel or operator table (one row per name) with ``on_path_us`` and
    ``path_pct`` after its total: per name, its own time on the critical path of the steps (``step``:
    that one's) beside its total, as :meth:`Profile.critical_path_names` has it (kernels by kernel
    name, operators by kind and name; a name outside every step's window has none).  Raises
    :class:`ProfviewError` where the trace has no critical path (no runtime events)."""
    names = profile.critical_path_names(step, rules)
    if view == "kernels":
        on = names.filter(pl.col("kind").is_in(_GPU_KINDS)).group_by("name").agg(pl.col(ON_PATH_COLUMNS).sum())
        keys = ["name"]
    else:
        keys = ["kind", "name"] if "kind" in frame.columns else ["name"]
        on = names.group_by(keys).agg(pl.col(ON_PATH_COLUMNS).sum())
    joined = frame.drop(ON_PATH_COLUMNS, strict=False).join(on, on=keys, how="left", maintain_order="left")
    after = next((c for c in ("total_us", "host_self_us") if c in frame.columns), None)
    if after is None:
        return joined
    order = [c for c in frame.columns if c not in ON_PATH_COLUMNS]
    at = order.index(after) + 1
    return joined.select(*order[:at], *ON_PATH_COLUMNS, *order[at:])


def with_graph_time(profile: Profile, frame: pl.DataFrame, step: int | IterationScope | None = None) -> pl.DataFrame:
    """A trace's operator table with ``graph_device_us`` after ``calls``, where it replays graphs:
    per operator, the replayed GPU time a capture attributes to it (the table's own figures stay
    torch's, which charge a replay to the call around the graph launch).  An operator that ran only
    in the capture gets a row of its own (``kind`` ``captured``: no host time, no device time of
    torch's; ``calls``: its captured calls that ran, once per replay)."""
    if not profile.is_trace or frame.height == 0 or "name" not in frame.columns:
        return frame
    graph = profile.graph_device_by_op(step)
    if graph is None:
        return frame
    joined = frame.join(graph.select("name", "graph_device_us"), on="name", how="left", maintain_order="left")
    joined = joined.with_columns(pl.col("graph_device_us").fill_null(0.0))
    order = [*frame.columns]  # right after calls: what such a trace is about shows at 80 columns
    order.insert(order.index("calls") + 1 if "calls" in order else len(order), "graph_device_us")
    captured = graph.join(frame.select("name"), on="name", how="anti")
    rows = captured.select(
        "name",
        pl.lit("captured").alias("kind"),
        pl.col("graph_calls").alias("calls"),
        *[pl.lit(0.0).alias(c) for c in ("host_self_us", "host_total_us", "device_self_us", "device_total_us")],
        "graph_device_us",
    )
    table = pl.concat([joined, rows], how="diagonal_relaxed").select(order)
    # A captured operator takes its place among the others by its replayed time.
    key = pl.max_horizontal(pl.col("device_total_us").fill_null(0.0), pl.col("graph_device_us"))
    return table.sort(key, descending=True, maintain_order=True)


def by_category(frame: pl.DataFrame, category: str | None) -> pl.DataFrame:
    """Rows of ``category`` (a view with a ``category`` column: kernels, ops, efficiency, categories)."""
    if category is None:
        return frame
    if "category" not in frame.columns:
        raise ProfviewError(None, "--category filters kernels, ops, efficiency and categories (of a trace)")
    from ..analysis.efficiency.categories import KERNEL_CATEGORIES

    if category not in KERNEL_CATEGORIES:
        raise ProfviewError(None, f"unknown category {category!r}: choose one of {', '.join(KERNEL_CATEGORIES)}")
    return frame.filter(pl.col("category") == category)


def view_frame(
    profile: Profile,
    view: str,
    *,
    op: str | None = None,
    kernel: str | None = None,
    by_shape: bool = False,
    step: int | IterationScope | None = None,
    module: str | None = None,
    source: str | None = None,
    what_if: list[str] | None = None,
    rules: str = "profview",
    category: str | None = None,
    peak_tflops: float | None = None,
    peak_tb_s: float | None = None,
    on_path: bool = False,
    graph: int | None = None,
    iteration: str | None = None,
    time_range: tuple[float, float] | None = None,
) -> pl.DataFrame:
    """The frame of ``view``; ``launches`` needs ``op`` (kernels under it), ``kernel`` or ``module``.

    ``step``: only that ProfilerStep's work (kernels, ops, launches; the rule is
    :mod:`profview.analysis.tables.step_scope`), as the viewer shows after Enter on a step.  The critical
    path views (:data:`PATH_VIEWS`) take ``rules`` (``profview`` or ``hta``) and ``critical_path``
    takes ``what_if`` (``'REGEX=FACTOR'`` scalings: the path before and after, a model).
    ``category``: only that kernel category (kernels, ops, efficiency, categories);
    ``peak_tflops``/``peak_tb_s``: the peaks efficiency and steps read instead of the device's.
    ``on_path``: kernels and ops with each name's time on the critical path (:func:`with_on_path`).
    ``graph``: graph_nodes of that graph only (issue 36).
    ``iteration``: iterations and phases: the iterations are the host ranges matching this regex.
    ``time_range``: the ``range`` view's ``(start, end)``, µs from the trace's start."""
    if view == "range" or time_range is not None:
        if view != "range":
            raise ProfviewError(None, f"--range goes with --view range, not {view}")
        if time_range is None:
            raise ProfviewError(profile.path, "--view range needs --range START:END (µs from the trace's start)")
        if not profile.is_trace:
            raise ProfviewError(profile.path, f"a {profile.format} has no range view (it has no timeline)")
        return profile.range_aggregates(*time_range)
    check_peak("--peak-tflops", peak_tflops, MAX_PEAK_TFLOPS, "TFLOP/s")
    check_peak("--peak-tbs", peak_tb_s, MAX_PEAK_TB_S, "TB/s")
    if graph is not None and view != "graph_nodes":
        raise ProfviewError(None, f"--graph goes with --view graph_nodes, not {view}")
    if view in GRAPH_VIEWS:
        if step is not None:
            raise ProfviewError(None, f"--step does not narrow {view}")
        return profile.graph_nodes(graph) if view == "graph_nodes" else getattr(profile, view)()
    if iteration is not None and view not in ITERATION_VIEWS:  # issue 40: one iteration, as --step
        if view not in ITERATION_NARROWED:
            narrowed = ", ".join(ITERATION_NARROWED)
            raise ProfviewError(None, f"--iteration N narrows {narrowed} (a regex: iterations, phases), not {view}")
        if step is not None:
            raise ProfviewError(None, "--step and --iteration: give one")
        if not (iteration.strip().isascii() and iteration.strip().isdigit()):
            raise ProfviewError(None, f"--iteration with --view {view}: an iteration's number, not {iteration[:40]!r}")
        scope = profile.iteration_scope(int(iteration))
        if view == "modules":
            return profile.modules(scope)
        return view_frame(
            profile, view, op=op, kernel=kernel, by_shape=by_shape, step=scope, module=module, source=source,
            category=category, peak_tflops=peak_tflops, peak_tb_s=peak_tb_s,
        )
    if view in ITERATION_VIEWS:  # serving and decode loops
        if step is not None:
            raise ProfviewError(None, f"--step does not narrow {view}: each iteration says its step")
        return profile.iterations(iteration) if view == "iterations" else profile.phases(iteration)
    if isinstance(step, IterationScope) and (on_path or view in PATH_VIEWS):
        raise ProfviewError(None, "the critical path is per step, not per iteration (--on-path, critical_path)")
    if on_path:
        assert not isinstance(step, IterationScope)
        if view not in ("kernels", "ops"):
            raise ProfviewError(None, f"--on-path goes with --view kernels or ops, not {view}")
        if by_shape:
            raise ProfviewError(None, "--on-path is per name: it does not go with --by-shape")
        frame = view_frame(profile, view, step=step, category=category)
        return with_on_path(profile, view, frame, step, rules)
    if what_if and view != "critical_path":
        raise ProfviewError(None, f"--what-if goes with --view critical_path, not {view}")
    if view in PATH_VIEWS:
        assert not isinstance(step, IterationScope)
        if what_if:
            return profile.what_if(what_if, step, rules)
        return getattr(profile, view)(step, rules)
    if view in ("kernels", "ops", "efficiency", "categories"):
        return by_category(_categorised_view(profile, view, by_shape, step, peak_tflops, peak_tb_s), category)
    if category is not None:
        raise ProfviewError(None, "--category filters kernels, ops, efficiency and categories")
    if view == "steps":  # issue 13: with the outlier flag the Steps view marks (!)
        from ..analysis.tables.step_outliers import step_outliers

        frame = step_outliers(profile.steps())  # flagged among all steps, then narrowed
        if profile.is_trace:  # issue 24: GPU busy by the one rule, model FLOPs, TFLOP/s, MFU
            frame = frame.join(profile.step_efficiency(peak_tflops), on="step", how="left", maintain_order="left")
        if step is not None:
            frame = frame.filter(pl.col("step") == step)
            if frame.height == 0:
                raise ProfviewError(profile.path, f"no step {step} (steps: {profile.step_numbers()})")
        return frame
    if step is not None and view == "modules":  # the step's (or iteration's) GPU time by module
        return profile.modules(step)
    if step is not None and view != "launches":
        narrowed = "kernels, ops, steps, launches, modules, efficiency, categories and the critical path"
        raise ProfviewError(None, f"--step narrows {narrowed}, not {view}")
    if view == "launches":
        if module:
            return profile.module_kernels(module, step)
        if source:
            return profile.source_kernels(source, step)
        if kernel:
            frame = profile.kernel_launches(kernel, step)
            if frame.height == 0 and profile.available("kernels"):
                names = profile.kernels()["name"]
                if kernel not in set(names.to_list()):  # a kernel of another step: an empty frame
                    raise _unknown(profile, "kernel", kernel, names)
            return frame
        if not op:
            need = "--op NAME, --kernel NAME, --module PATH or --source LINE"
            raise ProfviewError(profile.path, f"--view launches needs {need}")
        frame = profile.launches(op, step)
        if frame.height == 0 and profile.available("ops"):
            names = profile.ops()["name"]
            if op not in set(names.to_list()):
                raise _unknown(profile, "operator", op, names)
        return frame
    if view in PEER_VIEWS:
        return getattr(profile, view)()
    # memory and modules (issue 15)
    if view in ("memory", "memory_ops", "memory_peaks", "modules", "sources", "gpu_idle", "gaps"):
        return getattr(profile, view)()
    raise ProfviewError(None, f"unknown view {view!r}: choose one of {', '.join(VIEW_NAMES)}")


def _categorised_view(
    profile: Profile,
    view: str,
    by_shape: bool,
    step: int | IterationScope | None,
    peak_tflops: float | None,
    peak_tb_s: float | None,
) -> pl.DataFrame:
    """kernels, ops (with ``category``), efficiency and categories."""
    if view == "kernels":
        if profile.is_trace and not by_shape and step is None:  # the default table: kept categorised
            return profile.kept_view(KERNELS_CATEGORISED, lambda: with_efficiency(profile, view, profile.kernels()))
        return with_efficiency(profile, view, profile.kernels(by_shape=by_shape, step=step))
    if view == "ops":
        frame = with_efficiency(profile, view, profile.ops(by_shapes=by_shape, step=step), by_shape)
        return frame if by_shape else with_graph_time(profile, frame, step)
    if view == "categories":
        return profile.categories(step)
    return profile.efficiency(peak_tflops=peak_tflops, peak_tb_s=peak_tb_s, step=step)


def _unknown(profile: Profile, what: str, name: str, names: pl.Series) -> ProfviewError:
    """No such operator/kernel: say so, with the closest names there are."""
    import difflib

    close = difflib.get_close_matches(name, [str(n) for n in names.unique().to_list()], n=3, cutoff=0.5)
    hint = f" (closest: {', '.join(close)})" if close else ""
    return ProfviewError(profile.path, f"no {what} named {name!r}{hint}")


#: The largest peaks a user may give (an exaFLOP/s; a thousand times an H200's bandwidth): a
#: larger one is a typo, and ``nan``/``inf``/``1e400`` gave NaN efficiency and MFU (issue 35).
MAX_PEAK_TFLOPS = 1e6
MAX_PEAK_TB_S = 1e4
#: The smallest (a GFLOP/s, a GB/s): a subnormal such as ``5e-324`` divided figures into ``inf``.
MIN_PEAK = 1e-3


def check_peak(option: str, value: float | None, most: float, unit: str) -> None:
    """A user's peak (None: the device's) is a finite number from :data:`MIN_PEAK` to ``most``."""
    import math

    if value is not None and not (math.isfinite(value) and MIN_PEAK <= value <= most):
        raise ProfviewError(
            None, f"{option} {value:g}: a peak is a number above 0, from {MIN_PEAK:g} to {most:,.0f} {unit}"
        )


def filter_column(frame: pl.DataFrame) -> str | None:
    """The text column a filter matches: ``name`` where there is one, else the first text column."""
    for preferred in ("name", "op", "path"):  # memory views name the operator, modules the path
        if preferred in frame.columns:
            return preferred
    for column, dtype in frame.schema.items():
        if dtype == pl.String:
            return column
    return None


def compile_filter(pattern: str) -> str:
    """Validate a user regex (case-insensitive) with the engine that runs it
    (:mod:`profview.analysis.trace.name_rules`); raise ProfviewError if it cannot run it."""
    from ..analysis.trace.name_rules import pattern_problem

    problem = pattern_problem(pattern, ignore_case=True)
    if problem is not None:
        raise ProfviewError(None, f"bad --filter regex {pattern!r}: {problem}")
    return f"(?i){pattern}"


def refine(
    frame: pl.DataFrame,
    *,
    pattern: str | None = None,
    sort: str | None = None,
    ascending: bool = False,
    top: int | None = None,
) -> pl.DataFrame:
    """Filter rows whose name matches ``pattern``, sort by ``sort``, keep the first ``top``."""
    if pattern:
        column = filter_column(frame)
        if column is not None:
            frame = frame.filter(pl.col(column).str.contains(compile_filter(pattern)).fill_null(False))
    if sort:
        if sort not in frame.columns:
            raise ProfviewError(None, f"no column {sort!r} to sort by (columns: {', '.join(frame.columns)})")
        frame = frame.sort(sort, descending=not ascending, nulls_last=True, maintain_order=True)
    if top is not None:
        if top < 0:
            raise ProfviewError(None, f"--top must be 0 or more, not {top}")
        frame = frame.head(top)
    return frame
