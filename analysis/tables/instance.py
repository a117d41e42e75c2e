"""One event of a trace, inspected: a kernel's launch arguments and origin, an operator's inputs
and children, and the GPU work of one operator instance (the Timeline's inspector and its Enter).

Pure functions over a linked :class:`~profview.analysis.trace.model.TraceModel`; no I/O, no widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from ...frames import KERNEL_LAUNCH_COLUMNS, with_share
from ..trace.calltree import subtree_mask
from ..trace.model import TraceModel, python_stack_at
from .launches import _launch_paths, launch_table

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np


@dataclass
class OpCall:
    """One host call: its name, when, how long, its input dims and types (as the trace wrote them)."""

    row: int
    name: str
    kind: str
    ts: float
    dur: float
    tid: str
    input_dims: str | None = None
    input_type: str | None = None


@dataclass
class KernelInstance:
    """One GPU event and where it came from.

    ``occupancy``: Kineto's estimate in % (None when it wrote 0, which means "not estimated"
    for kernels the estimator skips, or when absent); ``launch``: the runtime call with the same
    correlation id; ``op``: the innermost operator open around that call; ``python``: the Python
    frames open around it, innermost first.
    """

    row: int
    name: str
    kind: str
    ts: float
    dur: float
    device: int | None
    stream: int | None
    correlation: int | None
    grid: str | None
    block: str | None
    registers: int | None
    shared_mem: int | None
    occupancy: float | None
    bytes: int | None
    launch: OpCall | None
    op: OpCall | None
    python: list[str] = field(default_factory=list)


@dataclass
class OpInstance:
    """One operator (or runtime) call: itself, its direct children, the GPU work under it."""

    call: OpCall
    children: list[OpCall]
    gpu_events: int
    gpu_us: float
    python: list[str] = field(default_factory=list)


def occupancy_value(value: float | None) -> float | None:
    """Kineto writes 0 for "not estimated": that, and no value, are None; else the % itself."""
    if value is None or value <= 0 or value != value:  # NaN too
        return None
    return float(value)


def _call(model: TraceModel, row: int) -> OpCall:
    r = model.host.row(row, named=True)
    return OpCall(
        row=row,
        name=str(r["name"]),
        kind=str(r["kind"]),
        ts=float(r["ts"]),
        dur=float(r["dur"] or 0.0),
        tid=str(r["tid"]),
        input_dims=r.get("input_dims"),
        input_type=r.get("input_type"),
    )


def _python(model: TraceModel, row: int) -> list[str]:
    """The Python frames open around host ``row``, innermost first."""
    if not bool(model.host["is_python"].any()):
        return []
    names = model.host["name"]
    return [str(names[frame]) for frame in reversed(python_stack_at(model, row))]


def kernel_instance(model: TraceModel, gpu_row: int) -> KernelInstance:
    """GPU event ``gpu_row`` (a row of ``model.gpu``) with its launching call, operator and stack."""
    r = model.gpu.row(gpu_row, named=True)
    launch_row, op_row = r.get("launch_row"), r.get("op_row")
    origin = launch_row if launch_row is not None else op_row
    return KernelInstance(
        row=gpu_row,
        name=str(r["name"]),
        kind=str(r["kind"]),
        ts=float(r["ts"]),
        dur=float(r["dur"] or 0.0),
        device=r.get("device"),
        stream=r.get("stream"),
        correlation=r.get("correlation"),
        grid=r.get("grid"),
        block=r.get("block"),
        registers=r.get("registers"),
        shared_mem=r.get("shared_mem"),
        occupancy=occupancy_value(r.get("occupancy")),
        bytes=r.get("bytes"),
        launch=_call(model, int(launch_row)) if launch_row is not None else None,
        op=_call(model, int(op_row)) if op_row is not None else None,
        python=_python(model, int(origin)) if origin is not None else [],
    )


def op_instance(model: TraceModel, host_row: int) -> OpInstance:
    """Host call ``host_row`` with its direct children (in time order) and the GPU work under it."""
    tree = model.tree
    end = int(tree.subtree_end[host_row])
    inside = np.arange(host_row + 1, end)
    children = [int(c) for c in inside[tree.parent[inside] == host_row]] if len(inside) else []
    launched = instance_gpu(model, host_row)
    return OpInstance(
        call=_call(model, host_row),
        children=[_call(model, c) for c in children],
        gpu_events=launched.height,
        gpu_us=float(launched["dur"].sum() or 0.0),
        python=_python(model, host_row),
    )


def instance_gpu(model: TraceModel, host_row: int) -> pl.DataFrame:
    """The GPU work launched under host call ``host_row`` (itself or a call nested in it), with
    ``direct``: launched by the call itself (its innermost operator, or its own runtime call)."""
    inside = subtree_mask(model.tree, np.array([host_row], dtype=np.int64))
    gpu = model.gpu
    op_rows = gpu["op_row"].fill_null(-1).to_numpy()
    launch_rows = gpu["launch_row"].fill_null(-1).to_numpy()
    under = np.where(op_rows >= 0, inside[np.maximum(op_rows, 0)], False) | (launch_rows == host_row)
    direct = (op_rows == host_row) | (launch_rows == host_row)
    return gpu.filter(pl.Series(under)).with_columns(pl.Series("direct", direct[under]))


def instance_launches(model: TraceModel, host_row: int) -> pl.DataFrame:
    """The drill-down of one operator call: its GPU work by name (as :func:`launch_table`)."""
    return launch_table(instance_gpu(model, host_row))


def kernel_instance_launch(model: TraceModel, gpu_row: int) -> pl.DataFrame:
    """The drill-down of one GPU event: its single launching path (:data:`KERNEL_LAUNCH_COLUMNS`)."""
    r = model.gpu.row(gpu_row, named=True)
    op, chain, stack = _launch_paths(model, [r["op_row"]])[0]
    dur = float(r["dur"] or 0.0)
    frame = pl.DataFrame(
        {
            "op": [op],
            "op_chain": [chain],
            "python_stack": [stack],
            "calls": [1],
            "total_us": [dur],
            "mean_us": [dur],
            "min_us": [dur],
            "max_us": [dur],
        },
        schema_overrides={"calls": pl.Int64},
    )
    return with_share(frame).select(KERNEL_LAUNCH_COLUMNS)
