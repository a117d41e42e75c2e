"""The trace model every view reads: host events with their call tree, GPU work with the
operator that launched it.  Built once per trace from the events frame; no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ...frames import HOST_CALL_KINDS, HOST_OP_KINDS, STEP_NAME, STEP_NUMBER
from .calltree import CallTree, build_call_tree, subtree_mask, thread_index
from .events import COMPLETE, GPU_LINK_COLUMNS, gpu_work

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np

HOST_KINDS = (*HOST_OP_KINDS, "python_function", *HOST_CALL_KINDS)
#: Host annotations that a collective opens on the calling thread and closes when the work is
#: done (ProcessGroupNCCL's ``nccl:all_reduce`` ranges): torch marks them async and keeps them out
#: of its call tree, so they are nobody's parent or child (see docs/figures.md).
ASYNC_ANNOTATION = r"^nccl:"
#: The layers of the host call tree, each nested on its own per thread.
OP_LAYER, PYTHON_LAYER, ASYNC_LAYER = 0, 1, 2


@dataclass
class TraceModel:
    """Derived frames of one trace.

    ``host``: host events (cpu_op, user_annotation, python_function, runtime, driver, overhead)
    sorted by (layer, nest_pid, nest_tid, ts, -dur), with ``row`` = position, ``end``, ``is_op``,
    ``layer`` (:data:`OP_LAYER`: operators with the runtime calls and overhead ranges in them;
    :data:`PYTHON_LAYER`: Python frames; :data:`ASYNC_LAYER`: :data:`ASYNC_ANNOTATION` ranges,
    never nested) and ``nest_pid``/``nest_tid``, the thread the event is nested on (its own, but
    see :func:`stray_calls`); ``tree`` nests each layer per thread.
    ``gpu``: GPU work (kernel, memcpy, memset) with ``end``, ``launch_row`` (the runtime call that
    launched it, or null) and ``op_row`` (the innermost operator that launched it, or null when it
    cannot be attributed: launched before the trace window, or no launching call recorded).
    """

    host: pl.DataFrame
    gpu: pl.DataFrame
    tree: CallTree
    span_start: float
    span_end: float


#: Columns the host frame keeps (the rest describe GPU work or nothing any view shows).
HOST_COLUMNS = (
    "kind",
    "name",
    "pid",
    "tid",
    "ts",
    "dur",
    "external_id",
    "correlation",
    "input_dims",
    "input_type",
    "concrete_inputs",  # issue 24: the perf model
    "flops",
    "call_stack",
    "collective",
    # autograd links (issue 15: backward GPU time by module)
    "sequence_number",
    "fwd_thread_id",
)


def build_model(events: pl.DataFrame, gpu: pl.DataFrame | None = None) -> TraceModel:
    """Sort, nest and link the events of one trace (``gpu``: :func:`gpu_work`, if already made)."""
    gpu = gpu_work(events) if gpu is None else gpu
    return link_model(nest_host(events), gpu)


@dataclass
class NestedHost:
    """The first stage of :func:`build_model`, the only one that reads the events: the host frame
    sorted (with ``_at``, each row's position in the events) and the trace's span.  A caller that
    holds the events for nothing else lets them go before :func:`link_model`, which nests it."""

    host: pl.DataFrame
    span_start: float
    span_end: float


#: Issue 36: a Triton host op's compiled kernel, kept in the host frame only when the trace has one
#: (a trace without Triton host ops pays nothing for them).
TRITON_HOST_COLUMNS = ("kernel_file", "kernel_hash", "num_warps", "num_stages", "kernel_flop", "kernel_num_gb")

#: The event columns :func:`nest_host` reads (a caller may hand it only these, and let the rest go).
NEST_COLUMNS = tuple(dict.fromkeys(("ph", *HOST_COLUMNS, *TRITON_HOST_COLUMNS)))

#: Each host event's layer: operators with the runtime calls they make, Python frames, and async
#: collective annotations (never nested).
_LAYER = (
    pl.when(pl.col("kind") == "python_function")
    .then(PYTHON_LAYER)
    .when((pl.col("kind") == "user_annotation") & pl.col("name").str.contains(ASYNC_ANNOTATION))
    .then(ASYNC_LAYER)
    .otherwise(OP_LAYER)
    .cast(pl.Int8)
)


def nest_host(events: pl.DataFrame) -> NestedHost:
    """The host events of a trace (``events``: at least :data:`NEST_COLUMNS`), sorted by (layer,
    pid, tid, ts, -dur, file order), for :func:`link_model` to nest per layer and thread (each layer
    nests on its own: operators and Python frames interleave, a frame that calls prof.step()
    outliving the ProfilerStep range, so Python stacks are looked up by time, not by nesting)."""
    host = _gather_host(events, _host_order(events, _LAYER), _LAYER)
    in_span = COMPLETE & ~pl.col("kind").is_in(["other", "overhead"])
    span = events.select(
        pl.col("ts").filter(in_span).min().alias("start"),
        (pl.col("ts") + pl.col("dur").clip(lower_bound=0.0)).filter(in_span).max().alias("end"),
    ).row(0)
    return NestedHost(host, float(span[0] or 0.0), float(span[1] or 0.0))


def link_model(nested: NestedHost, gpu: pl.DataFrame) -> TraceModel:
    """The model from :func:`nest_host`'s stage and the GPU work (:func:`gpu_work`): the operator
    layer nested again when some calls belong under the main thread (:func:`stray_calls`), as
    torch's key_averages nests them, and each GPU event linked to its launch and operator.
    ``nested`` is consumed: its host frame is taken from it, so that the sorted copy replaces it
    rather than sitting beside it (30 MB on gpt2_train_big)."""
    host, nested.host = nested.host, nested.host.clear()
    host, tree = _nest(host)
    stray = stray_calls(host, tree, gpu)
    if stray is not None:
        # Sorted again with the moved calls on the main thread (their nest_pid/nest_tid), by
        # (layer-thread number, ts, -dur, file order).
        moved, main = stray
        thread = thread_index(host).copy()
        thread[moved] = thread[main]
        on_main = [
            pl.when(pl.Series(moved)).then(pl.lit(host[column][main])).otherwise(pl.col(nested_on)).alias(nested_on)
            for nested_on, column in (("nest_pid", "pid"), ("nest_tid", "tid"))
        ]
        host = (
            host.with_columns(*on_main, pl.Series("_thread", thread))
            .sort(["_thread", "ts", "dur", "_at"], descending=[False, False, True, False])
            .drop("_thread", "row", "end", "is_op")
        )
        host, tree = _nest(host)
    host = host.drop("_at")
    return TraceModel(host, _attribute_gpu_work(gpu, host, tree), tree, nested.span_start, nested.span_end)


#: Columns that carry the call tree when a model is stored as frames (see :func:`model_frames`).
TREE_COLUMNS = ("tree_parent", "tree_op_parent", "tree_subtree_end")


def model_frames(model: TraceModel) -> tuple[pl.DataFrame, pl.DataFrame, tuple[float, float]]:
    """A model as plain frames (the host frame carries its call tree in :data:`TREE_COLUMNS`)."""
    tree = (model.tree.parent, model.tree.op_parent, model.tree.subtree_end)
    host = model.host.with_columns(pl.Series(name, links) for name, links in zip(TREE_COLUMNS, tree, strict=True))
    return host, model.gpu, (model.span_start, model.span_end)


def model_from_frames(host: pl.DataFrame, gpu: pl.DataFrame, span: tuple[float, float]) -> TraceModel:
    """The model :func:`model_frames` took apart (a cached model: no sorting or nesting again)."""
    links = [host[name].to_numpy() for name in TREE_COLUMNS]
    return TraceModel(host.drop(TREE_COLUMNS), gpu, CallTree(*links), float(span[0]), float(span[1]))


def _host_order(events: pl.DataFrame, layer: pl.Expr) -> pl.Series:
    """Positions in ``events`` of the host events, in the order (layer, pid, tid, ts, -dur, file
    order): found on the sort keys alone, the (layer, pid, tid) triples numbered in their own order
    first, so the long sort compares numbers, not strings."""
    keys = ["layer", "pid", "tid"]
    candidates = (  # lazily: the filter runs before the columns are taken, so only host rows are held
        events.lazy()
        .with_row_index("_at")
        .filter(pl.col("kind").is_in(HOST_KINDS) & COMPLETE)
        .select("_at", layer.alias("layer"), "pid", "tid", "ts", pl.col("dur").clip(lower_bound=0.0))
        .collect()
    )
    threads = (
        candidates.select(keys)
        .unique()
        .sort(keys, nulls_last=False)
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int32).alias("_thread"))
    )
    # Only the thread number is joined on and only the positions are sorted: no copy of the candidates.
    thread = candidates.select(keys).join(threads, on=keys, how="left", nulls_equal=True, maintain_order="left")
    candidates = candidates.with_columns(thread["_thread"])
    by = pl.arg_sort_by(["_thread", "ts", "dur", "_at"], descending=[False, False, True, False])
    order: pl.Series = candidates["_at"].gather(candidates.select(by).to_series())
    return order


def _gather_host(events: pl.DataFrame, order: pl.Series, layer: pl.Expr) -> pl.DataFrame:
    """The host frame: :data:`HOST_COLUMNS` (and :data:`TRITON_HOST_COLUMNS` where the trace has
    values in them) of the events at ``order`` (gathered once, so no unsorted copy is held beside
    it) with ``is_python``, ``layer``, ``nest_pid``/``nest_tid`` and ``_at``, the event's position."""
    triton = [c for c in TRITON_HOST_COLUMNS if c in events.columns and events[c].null_count() < events.height]
    return (
        events.select(*HOST_COLUMNS, *triton)
        .gather(order)
        .with_columns(
            pl.col("dur").clip(lower_bound=0.0),
            (pl.col("kind") == "python_function").alias("is_python"),
            layer.alias("layer"),
            pl.col("pid").alias("nest_pid"),
            pl.col("tid").alias("nest_tid"),
            order.alias("_at"),
        )
    )


def _nest(host: pl.DataFrame) -> tuple[pl.DataFrame, CallTree]:
    """Number the host events (sorted by layer, nesting thread, ts, -dur) and nest them."""
    host = host.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
        (pl.col("ts") + pl.col("dur")).alias("end"),
        pl.col("kind").is_in(HOST_OP_KINDS).alias("is_op"),
    )
    return host, build_call_tree(host)


def stray_calls(host: pl.DataFrame, tree: CallTree, gpu: pl.DataFrame) -> tuple[np.ndarray, int] | None:
    """The calls torch files under the main thread (a mask over ``host``) and a row of the main
    thread's operator layer; None if there are none.

    Those are runtime/driver calls that no operator of their own thread encloses and that launch
    no GPU work (cudaEventQuery from the NCCL watchdog or the autograd engine, pinned-memory
    calls of a DataLoader thread), and the profiler's overhead ranges (Kineto writes them on a
    pseudo thread), each with what is nested in it.  The main thread holds the ProfilerStep
    annotations (else the most operators).  There torch makes them children of the operator
    running at the time, so that operator's Self CPU time is shorter by their length.
    """
    ops = host.select("is_op", "layer", "pid", "tid", "name").filter(pl.col("is_op") & (pl.col("layer") == OP_LAYER))
    if ops.height == 0:
        return None
    main = (
        ops.group_by("pid", "tid")
        .agg(pl.col("name").str.contains(STEP_NAME).sum().alias("steps"), pl.len().alias("ops"))
        .sort(["steps", "ops", "pid", "tid"], descending=[True, True, False, False], nulls_last=True)
        .row(0, named=True)
    )
    launching = gpu["correlation"].drop_nulls().unique().implode()
    root_call = (
        (pl.col("layer") == OP_LAYER)
        & pl.Series(tree.parent < 0)
        & pl.col("kind").is_in(HOST_CALL_KINDS)
        & ~pl.col("correlation").is_in(launching).fill_null(False)
        & ((pl.col("pid") != main["pid"]) | (pl.col("tid") != main["tid"])).fill_null(True)
    )
    roots = np.flatnonzero(host.select(root_call)[:, 0].to_numpy())
    if len(roots) == 0:
        return None
    on_main = (pl.col("layer") == OP_LAYER) & (pl.col("pid") == main["pid"]) & (pl.col("tid") == main["tid"])
    main_row = int(np.argmax(host.select(on_main.fill_null(False))[:, 0].to_numpy()))
    return subtree_mask(tree, roots), main_row


def _attribute_gpu_work(gpu: pl.DataFrame, host: pl.DataFrame, tree: CallTree) -> pl.DataFrame:
    """Link each GPU event to its launching runtime call and innermost launching operator.

    The operator comes from the GPU event's External id (Kineto writes the innermost enclosing
    operator's id there) where that operator encloses the launching runtime call on its thread, or
    where no launching call is recorded; otherwise from the runtime call that shares its
    correlation id (the innermost operator enclosing that call): some tools write the correlation
    id into ``External id``, which then names an unrelated operator (:func:`external_overrides`
    counts those links).  A CUDA-graph launch gives many GPU events one correlation; they all link
    to the one cudaGraphLaunch call.
    """
    linked = _gpu_links(gpu, host, tree).select(
        "launch_row",
        pl.coalesce(
            pl.when(~pl.col("_overridden")).then(pl.col("external_op")),
            pl.when(pl.col("launch_op") >= 0).then(pl.col("launch_op")),
        ).alias("op_row"),
    )
    return gpu.with_columns(linked.get_columns()).select(*gpu.columns, *GPU_LINK_COLUMNS)


def _gpu_links(gpu: pl.DataFrame, host: pl.DataFrame, tree: CallTree) -> pl.DataFrame:
    """Per GPU event (in its order): ``launch_row`` and ``launch_op`` (the launching runtime call
    and the operator enclosing it), ``external_op`` (the operator of its External id) and
    ``_overridden`` (that operator does not enclose the launching call, so it is not taken)."""
    # Only the columns the links need are filtered (a filter of the whole frame copies every column),
    # and only the rows of ids some GPU event carries are grouped: 6 MB instead of 34 MB for
    # gpt2_train_big's 250 k operators (most launch nothing), and 2.5x faster.
    links = host.select("kind", "is_op", "row", "correlation", "external_id", pl.Series("op_parent", tree.op_parent))
    launched = gpu["correlation"].drop_nulls().unique().implode()
    externals = gpu["external_id"].drop_nulls().unique().implode()
    launches = (
        links.filter(pl.col("kind").is_in(["runtime", "driver"]) & pl.col("correlation").is_in(launched))
        .group_by("correlation")
        .agg(pl.col("row").first().alias("launch_row"), pl.col("op_parent").first().alias("launch_op"))
    )
    by_external = (
        links.filter(pl.col("is_op") & pl.col("external_id").is_in(externals))
        .group_by("external_id")
        .agg(pl.col("row").first().alias("external_op"))
    )
    # The keys alone are joined, in the GPU frame's order: its other columns gain two, never copied.
    linked = (
        gpu.select("correlation", "external_id")
        .join(launches, on="correlation", how="left", maintain_order="left")
        .join(by_external, on="external_id", how="left", maintain_order="left")
    )
    # An operator encloses the launching call on its thread when the call is in its subtree: the
    # rows after it, up to its subtree's end (host rows are sorted by thread, start, -duration).
    external = linked["external_op"].fill_null(0).to_numpy()
    launch = linked["launch_row"].fill_null(-1).to_numpy()
    ends = tree.subtree_end[external] if len(tree.subtree_end) else np.zeros(len(external), dtype=np.int64)
    encloses = (launch > external) & (launch < ends)
    overridden = pl.Series("_overridden", ~encloses) & linked["external_op"].is_not_null() & (
        linked["launch_row"].is_not_null()
    )
    return linked.with_columns(overridden)


def external_overrides(model: TraceModel) -> int:
    """How many GPU events' ``External id`` names an operator that does not enclose their launching
    runtime call (linked to the call's operator instead, see :func:`_attribute_gpu_work`)."""
    if model.gpu.height == 0:
        return 0
    return int(_gpu_links(model.gpu, model.host, model.tree)["_overridden"].sum())


def python_stack_at(model: TraceModel, row: int) -> list[int]:
    """Rows of the Python frames enclosing host event ``row`` (same thread), outermost first."""
    return python_stacks_at(model, [row])[0]


def python_stacks_at(model: TraceModel, rows: list[int]) -> list[list[int]]:
    """:func:`python_stack_at` for many host rows at once: one as-of join (:func:`innermost_frames`),
    not a filter per row."""
    parent = model.tree.parent
    chains: dict[int, list[int]] = {-1: []}

    def chain(node: int) -> list[int]:
        """Frames from the outermost down to ``node``, memoised along the way."""
        pending = []
        while node not in chains:
            pending.append(node)
            node = int(parent[node])
        stack = chains[node]
        for item in reversed(pending):
            stack = [*stack, item]
            chains[item] = stack
        return stack

    return [chain(node) for node in innermost_frames(model, rows)]


def innermost_frames(model: TraceModel, rows: list[int]) -> list[int]:
    """Per host row, the innermost Python frame enclosing it on its thread (-1: none); one as-of join.

    The innermost frame of a row is the latest-starting frame of its thread that started at or
    before it (the shortest of equal starts); frames that ended before it are climbed past.
    """
    if not rows:
        return []
    host = model.host
    frames = host.filter(pl.col("is_python")).select("pid", "tid", "ts", pl.col("row").alias("frame"))
    if frames.height == 0:
        return [-1] * len(rows)
    queries = host[rows].select("pid", "tid", "ts").with_columns(pl.int_range(pl.len()).alias("query"))
    found = (
        queries.sort("ts")
        .join_asof(
            frames.sort("ts", maintain_order=True),
            on="ts",
            by=["pid", "tid"],
            strategy="backward",
            check_sortedness=False,
        )
        .sort("query")
    )
    ends = host["end"].to_numpy()
    parent = model.tree.parent
    innermost = []
    for frame, ts in zip(found["frame"].to_list(), found["ts"].to_list(), strict=True):
        node = -1 if frame is None else int(frame)
        while node >= 0 and ends[node] < ts:
            node = int(parent[node])
        innermost.append(node)
    return innermost


def step_windows(model: TraceModel) -> pl.DataFrame:
    """One row per ``ProfilerStep#N``: ``step`` (N), ``name``, ``start``, ``end`` in µs.

    A step starts at its host annotation and extends to the end of the GPU work launched inside
    it (never into the next step).  When a trace has only GPU-side step annotations, those are
    used; with no steps at all, one ``(whole trace)`` row covers the trace.
    """
    host_steps = model.host.filter(pl.col("is_op") & pl.col("name").str.contains(STEP_NAME))
    if host_steps.height == 0:
        return pl.DataFrame(
            {"step": [-1], "name": ["(whole trace)"], "start": [model.span_start], "end": [model.span_end]},
            schema={"step": pl.Int64, "name": pl.String, "start": pl.Float64, "end": pl.Float64},
        )
    steps = (
        host_steps.group_by("name")
        .agg(pl.col("ts").min().alias("start"), pl.col("end").max().alias("cpu_end"))
        .with_columns(pl.col("name").str.extract(STEP_NUMBER).cast(pl.Int64).alias("step"))
        .sort("start", "step")  # steps of one start (overlapping ranges) in one order, every run
    )
    starts = steps["start"].to_numpy()
    cpu_ends = steps["cpu_end"].to_numpy()
    launched = model.gpu.filter(pl.col("launch_row").is_not_null()).join(
        model.host.select(pl.col("row").alias("launch_row"), pl.col("ts").alias("launch_ts")),
        on="launch_row",
    )
    gpu_end = np.full(len(starts), -np.inf)
    if launched.height:
        launch_ts = launched["launch_ts"].to_numpy()
        which = np.searchsorted(starts, launch_ts, side="right") - 1
        inside = (which >= 0) & (launch_ts <= cpu_ends[np.clip(which, 0, None)])
        np.maximum.at(gpu_end, which[inside], launched["end"].to_numpy()[inside])
    ends = np.maximum(cpu_ends, gpu_end)
    # As the TensorBoard plugin does: a step ends when its GPU work ends, and the next step starts
    # no earlier than that, so steps never overlap.  Host ranges that overlap already (a malformed
    # trace: two ProfilerStep ranges over the same time) are not sequential steps: each keeps its
    # own range (moving one past the other gave the second a duration of 0, issue 35).
    starts_adj = starts.copy()
    for i in range(len(starts)):
        if i and starts[i] >= cpu_ends[i - 1]:
            starts_adj[i] = max(starts[i], ends[i - 1])
        ends[i] = max(ends[i], starts_adj[i])
    return steps.select("step", "name").with_columns(pl.Series("start", starts_adj), pl.Series("end", ends))
