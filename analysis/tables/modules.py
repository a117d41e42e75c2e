"""GPU time by module and by source line, from the Python frames of with_stack / with_modules traces.

Every GPU event (kernel, memcpy, memset) is placed at the moment it was launched: the runtime
call sharing its correlation id (or, failing that, the operator of its External id), on that
call's thread.  The Python frames open there say which module and which source lines launched
it: ``nn.Module: Name_N`` frames form the module path (``GPT2LMHeadModel_0 > GPT2Model_0 >
GPT2Block_3``), the other frames are source lines (``file.py(123): fn``).

A module's forward time (``fwd_self_us``: launched while it was the innermost open module,
``fwd_total_us``: while it was open at all) comes from those frames.  Backward kernels run on
autograd's thread, where no Python frame is open: they are placed by the autograd node that
launched them (``Sequence number`` + ``Fwd thread id`` > 0) at the forward operator with the same
sequence number, whose frames name the module (``bwd_self_us``, ``bwd_total_us``).  GPU work
under an ``Optimizer.…#…`` annotation is a row of its own; the rest is
:data:`~profview.frames.NO_MODULE`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np
import polars as pl

from ...frames import (
    CHAIN_SEPARATOR,
    MODULE_COLUMNS,
    NO_MODULE,
    NO_SOURCE,
    SOURCE_COLUMNS,
)
from ..trace.at_time import innermost_open
from ..trace.model import TraceModel
from .launches import launch_table

#: The prefix of a module's Python frame.
MODULE_PREFIX = "nn.Module: "
#: The prefix of the annotation torch puts around ``optimizer.step()`` / ``zero_grad()``.
OPTIMIZER_PREFIX = "Optimizer."
#: The pass a GPU event belongs to (:func:`gpu_attribution`).
FORWARD, BACKWARD, OPTIMIZER, OTHER = "fwd", "bwd", "optimizer", "other"
PASSES = (FORWARD, BACKWARD, OPTIMIZER, OTHER)


def launch_frames(model: TraceModel) -> np.ndarray:
    """Per GPU event (``model.gpu`` order), the innermost Python frame open at its launch; -1 if none."""
    gpu = model.gpu
    launcher = gpu.select(pl.coalesce("launch_row", "op_row").alias("row"))["row"]
    known = launcher.is_not_null().to_numpy()
    rows = launcher.fill_null(0).to_numpy()
    host = model.host
    frames = np.full(gpu.height, -1, dtype=np.int64)
    if not known.any() or host.height == 0:
        return frames
    picked = host[rows[known].tolist()]
    frames[known] = innermost_open(model, picked["pid"], picked["tid"], picked["ts"].to_numpy(), python=True)
    return frames


def enclosing_module_frames(model: TraceModel, rows: np.ndarray) -> list[list[int]]:
    """Per host row of ``rows`` (a launch), the ``nn.Module`` frames open at it, innermost first:
    the frames a replay of the graph captured there runs again, one call each."""
    if len(rows) == 0:
        return []
    picked = model.host[np.asarray(rows, dtype=np.int64).tolist()]
    frames = innermost_open(model, picked["pid"], picked["tid"], picked["ts"].to_numpy(), python=True)
    names = model.host["name"].to_list()
    parent = model.tree.parent
    found = []
    for frame in frames.tolist():
        open_modules, node = [], int(frame)
        while node >= 0:
            if names[node].startswith(MODULE_PREFIX):
                open_modules.append(node)
            node = int(parent[node])
        found.append(open_modules)
    return found


def has_modules(model: TraceModel) -> bool:
    """Whether the trace holds any ``nn.Module`` frame (recorded with with_modules / with_stack)."""
    return bool(model.host.select((pl.col("is_python") & pl.col("name").str.starts_with(MODULE_PREFIX)).any()).item())


def module_paths(model: TraceModel) -> tuple[list[str], list[int]]:
    """Per host row, the module path of the innermost module frame enclosing it ('' if none), and
    the rows that are module frames."""
    host = model.host
    names = host["name"].to_list()
    python = host["is_python"].to_numpy()
    parent = model.tree.parent
    paths = [""] * host.height
    modules = []
    # Parents come before children in the host order, so one pass in row order sees each parent first.
    for row in np.flatnonzero(python).tolist():
        up = int(parent[row])
        inherited = paths[up] if up >= 0 else ""
        name = names[row]
        if name.startswith(MODULE_PREFIX):
            leaf = name[len(MODULE_PREFIX) :]
            paths[row] = f"{inherited}{CHAIN_SEPARATOR}{leaf}" if inherited else leaf
            modules.append(row)
        else:
            paths[row] = inherited
    return paths, modules


def gpu_module_paths(model: TraceModel, frames: np.ndarray | None = None) -> pl.Series:
    """Per GPU event, the module path it is charged to (:data:`NO_MODULE` if none); see
    :func:`gpu_attribution`."""
    return gpu_attribution(model, frames)["module"]


def gpu_attribution(model: TraceModel, frames: np.ndarray | None = None) -> pl.DataFrame:
    """Per GPU event (``model.gpu`` order): ``module`` and ``pass`` (:data:`PASSES`).

    In order: a module frame open at the launch (``fwd``); else the innermost autograd node
    enclosing the launching operator, through its forward operator (``bwd``; :data:`NO_MODULE`
    when that operator ran outside every module or cannot be told apart); else an enclosing
    ``Optimizer.…`` annotation, named as the row (``optimizer``); else :data:`NO_MODULE` (``other``).
    """
    frames = launch_frames(model) if frames is None else frames
    paths, _modules = module_paths(model)
    module = [paths[f] if f >= 0 else "" for f in frames.tolist()]
    passes = [FORWARD if m else OTHER for m in module]
    host = model.host
    names = host["name"].to_list()
    seqs = host["sequence_number"].to_list()
    fwd_threads = host["fwd_thread_id"].to_list()
    parent = model.tree.parent
    seen: dict[int, tuple[int | None, str | None]] = {}

    def enclosing(row: int) -> tuple[int | None, str | None]:
        """(sequence number of the innermost backward node, outermost optimizer annotation)."""
        if row not in seen:
            seq, optimizer, node = None, None, row
            while node >= 0:
                if seq is None and seqs[node] is not None and (fwd_threads[node] or 0) > 0:
                    seq = seqs[node]
                if names[node].startswith(OPTIMIZER_PREFIX):
                    optimizer = names[node]
                node = int(parent[node])
            seen[row] = (seq, optimizer)
        return seen[row]

    op_rows = model.gpu["op_row"].to_list()
    backward: dict[int, int] = {}  # GPU event -> sequence number
    for i, m in enumerate(module):
        if m or op_rows[i] is None:
            continue
        seq, optimizer = enclosing(int(op_rows[i]))
        if seq is not None:
            backward[i] = seq
            passes[i] = BACKWARD
        elif optimizer is not None:
            module[i], passes[i] = optimizer, OPTIMIZER
    forward_path = _forward_paths(model, paths, set(backward.values()))
    for i, seq in backward.items():
        module[i] = forward_path.get(seq, "")
    named = [m or NO_MODULE for m in module]
    return pl.DataFrame({"module": named, "pass": passes}, schema={"module": pl.String, "pass": pl.String})


def _forward_paths(model: TraceModel, paths: list[str], wanted: set[int]) -> dict[int, str]:
    """Per autograd sequence number in ``wanted``, the module path open when its forward operator
    ran: the latest-starting operator with that number and no ``Fwd thread id`` (the one that
    made the node; nested operators share its number and its frames).  Sequence numbers count per
    thread, so a number seen on more than one forward thread is left out."""
    if not wanted:
        return {}
    host = model.host
    forward = (
        host.filter(
            pl.col("is_op")
            & pl.col("sequence_number").is_in(list(wanted))
            & (pl.col("fwd_thread_id").fill_null(0) == 0)
        )
        .sort("ts", "row")
        .group_by("sequence_number")
        .agg(
            pl.struct("pid", "tid").n_unique().alias("threads"),
            pl.col("row").last(),
            pl.col("pid").last(),
            pl.col("tid").last(),
            pl.col("ts").last(),
        )
        .filter(pl.col("threads") == 1)
    )
    frames = innermost_open(model, forward["pid"], forward["tid"], forward["ts"].to_numpy(), python=True)
    return {
        int(seq): paths[f] if f >= 0 else ""
        for seq, f in zip(forward["sequence_number"].to_list(), frames.tolist(), strict=True)
    }


def module_table(model: TraceModel, attribution: pl.DataFrame) -> pl.DataFrame:
    """GPU time per module path (:data:`MODULE_COLUMNS`), in tree order (children by total time).

    ``attribution``: :func:`gpu_attribution`.  ``fwd_*``/``bwd_*`` hold each pass, ``self_us`` and
    ``total_us`` every pass together; ``calls`` counts the module's frames, ``kernels`` the GPU
    events charged to it, ``pct`` is ``total_us`` as a share of all GPU time.  After the modules
    come one row per optimizer annotation, then a :data:`NO_MODULE` row with the rest.
    """
    paths, modules = module_paths(model)
    calls: dict[str, int] = defaultdict(int)
    for row in modules:
        calls[paths[row]] += 1
    optimizers = set(attribution.filter(pl.col("pass") == OPTIMIZER)["module"].to_list())
    for name in model.host["name"].to_list():
        if name in optimizers:
            calls[name] += 1
    per_leaf = (
        model.gpu.select("dur")
        .with_columns(attribution["module"].alias("path"), attribution["pass"])
        .group_by("path", "pass")
        .agg(pl.col("dur").sum().alias("self_us"), pl.len().alias("kernels"))
    )
    figures: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    kernels: dict[str, int] = defaultdict(int)
    for path, step, own, count in per_leaf.sort("path", "pass").iter_rows():
        figures[path]["self_us"] += own
        if step in (FORWARD, BACKWARD):
            figures[path][f"{step}_self_us"] += own
        for prefix in _prefixes(path, optimizers):
            figures[prefix]["total_us"] += own
            if step in (FORWARD, BACKWARD):
                figures[prefix][f"{step}_total_us"] += own
            kernels[prefix] += count
    every = set(calls) | set(figures)
    for path in list(every):  # ancestors with no frame of their own in the trace (cut by the window)
        every.update(_prefixes(path, optimizers))
    total_us = {p: f["total_us"] for p, f in figures.items()}
    ordered = _tree_order(every, total_us, optimizers)
    amounts = ("self_us", "total_us", "fwd_self_us", "fwd_total_us", "bwd_self_us", "bwd_total_us")
    flat = _flat(optimizers)
    frame = pl.DataFrame(
        {
            "path": ordered,
            "module": [p if flat(p) else p.rsplit(CHAIN_SEPARATOR, 1)[-1] for p in ordered],
            "depth": [0 if flat(p) else p.count(CHAIN_SEPARATOR) for p in ordered],
            "calls": [calls.get(p, 0) for p in ordered],
            "kernels": [kernels.get(p, 0) for p in ordered],
            **{a: [figures[p][a] if p in figures else 0.0 for p in ordered] for a in amounts},
        },
        schema={
            "path": pl.String,
            "module": pl.String,
            "depth": pl.Int64,
            "calls": pl.Int64,
            "kernels": pl.Int64,
            **dict.fromkeys(amounts, pl.Float64),
        },
    )
    all_gpu = float(model.gpu["dur"].sort().sum() or 0.0)
    pct = pl.when(pl.lit(all_gpu) > 0).then(pl.col("total_us") / all_gpu * 100.0)
    return frame.with_columns(pct.alias("pct")).select(MODULE_COLUMNS)


def _flat(optimizers: set[str]) -> Callable[[str], bool]:
    """Whether a row path is a single name (an optimizer annotation or :data:`NO_MODULE`)."""
    return lambda path: path == NO_MODULE or path in optimizers


def _prefixes(path: str, optimizers: set[str]) -> list[str]:
    """``path`` and its ancestors, outermost first (one entry for a flat row)."""
    if _flat(optimizers)(path):
        return [path]
    parts = path.split(CHAIN_SEPARATOR)
    return [CHAIN_SEPARATOR.join(parts[:depth]) for depth in range(1, len(parts) + 1)]


def _tree_order(paths: set[str], total_us: dict[str, float], optimizers: set[str]) -> list[str]:
    """Depth-first: roots and each node's children by total time (then name); then the optimizer
    rows by total time, (no module) last."""
    flat = _flat(optimizers)
    children: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if flat(path):
            continue
        head, _sep, _leaf = path.rpartition(CHAIN_SEPARATOR)
        children[head].append(path)
    ordered: list[str] = []

    def visit(node: str) -> None:
        for child in sorted(children.get(node, []), key=lambda p: (-total_us.get(p, 0.0), p)):
            ordered.append(child)
            visit(child)

    visit("")
    ordered.extend(sorted(paths & optimizers, key=lambda p: (-total_us.get(p, 0.0), p)))
    if NO_MODULE in paths:
        ordered.append(NO_MODULE)
    return ordered


def module_kernels(model: TraceModel, module_of_gpu: pl.Series, path: str) -> pl.DataFrame:
    """The GPU work launched under module ``path`` (:data:`OP_LAUNCH_COLUMNS`); ``direct_calls``:
    launched while ``path`` itself was the innermost module."""
    inside = (module_of_gpu == path) | module_of_gpu.str.starts_with(path + CHAIN_SEPARATOR)
    launched = model.gpu.with_columns((module_of_gpu == path).alias("direct")).filter(inside)
    return launch_table(launched)


def source_stacks(model: TraceModel, frames: np.ndarray) -> dict[int, list[str]]:
    """Per distinct launching frame row, the source-line frames open there, innermost first
    (``[NO_SOURCE]`` when none: no Python frame, or only module frames)."""
    names = model.host["name"].to_list()
    parent = model.tree.parent
    stacks: dict[int, list[str]] = {}
    for frame in np.unique(frames).tolist():
        stack = []
        node = int(frame)
        while node >= 0:
            if not names[node].startswith(MODULE_PREFIX):
                stack.append(names[node])
            node = int(parent[node])
        stacks[frame] = stack or [NO_SOURCE]
    return stacks


def source_line(stack: list[str]) -> str:
    """The line a stack (innermost first) names as its source: the innermost frame with a file and
    line (``vllm/model_executor/layers/utils.py(122): rocm_unquantized_gemm_impl``), not a built-in
    (``<built-in function linear>`` names no line); the innermost frame where all are built-ins."""
    return next((frame for frame in stack if not frame.startswith("<built-in")), stack[0])


def source_kernels(
    model: TraceModel, frames: np.ndarray, name: str, replaced: dict[int, list[str]] | None = None
) -> pl.DataFrame:
    """The GPU work launched while source line ``name`` was open (:data:`OP_LAUNCH_COLUMNS`);
    ``direct_calls``: while it was the innermost source-line frame.  ``replaced``: per GPU row,
    the source lines to use instead of its launch's (issue 36: a replayed kernel's captured launch)."""
    stacks = source_stacks(model, frames)
    per_row = [stacks[f] for f in frames.tolist()]
    for row, stack in (replaced or {}).items():
        per_row[row] = stack
    inside = np.array([name in stack for stack in per_row], dtype=bool)
    direct = np.array([stack[0] == name for stack in per_row], dtype=bool)
    launched = model.gpu.with_columns(pl.Series("direct", direct)).filter(pl.Series(inside))
    return launch_table(launched)


def source_table(
    model: TraceModel, frames: np.ndarray | None = None, replaced: dict[int, list[str]] | None = None
) -> pl.DataFrame:
    """GPU time per source-line frame (:data:`SOURCE_COLUMNS`), most total time first.

    ``self_us``: launched while the frame was the innermost non-module Python frame; ``total_us``:
    while it was open anywhere in the stack (once per GPU event, however deep the recursion).
    ``replaced``: per GPU row, the source lines (innermost first) to use instead of its launch's
    (issue 36: a replayed kernel's captured launch).
    """
    frames = launch_frames(model) if frames is None else frames
    stacks = source_stacks(model, frames)
    keys = frames.copy()
    if replaced:  # each distinct replaced stack gets a key of its own, below every frame row
        numbered: dict[tuple[str, ...], int] = {}
        for row, stack in replaced.items():
            number = numbered.setdefault(tuple(stack), -2 - len(numbered))
            keys[row] = number
            stacks[number] = stack
    per_frame = (
        pl.DataFrame({"frame": keys, "dur": model.gpu["dur"]})
        .group_by("frame")
        .agg(pl.col("dur").sum(), pl.len().alias("count"))
    )
    self_us: dict[str, float] = defaultdict(float)
    total_us: dict[str, float] = defaultdict(float)
    kernels: dict[str, int] = defaultdict(int)
    for frame, dur, count in per_frame.sort("frame").iter_rows():
        stack = stacks[int(frame)]
        self_us[stack[0]] += dur
        for name in set(stack):
            total_us[name] += dur
            kernels[name] += count
    ordered = sorted(total_us, key=lambda n: (-total_us[n], n))
    frame = pl.DataFrame(
        {
            "name": ordered,
            "kernels": [kernels[n] for n in ordered],
            "self_us": [self_us.get(n, 0.0) for n in ordered],
            "total_us": [total_us[n] for n in ordered],
        },
        schema={"name": pl.String, "kernels": pl.Int64, "self_us": pl.Float64, "total_us": pl.Float64},
    )
    all_gpu = float(model.gpu["dur"].sort().sum() or 0.0)
    pct = pl.when(pl.lit(all_gpu) > 0).then(pl.col("total_us") / all_gpu * 100.0)
    return frame.with_columns(pct.alias("pct")).select(SOURCE_COLUMNS)
