"""The captures of a trace: what each graph's nodes were when they were recorded.

A capture is the host work between a ``cudaStreamBeginCapture``/``hipStreamBeginCapture`` and the
next ``…StreamEndCapture`` on the same thread.  The launch calls there (``cudaLaunchKernel``,
``cuLaunchKernel[Ex]``, ``hipLaunchKernel``, ``hip[Ext]ModuleLaunchKernel``, ``…MemcpyAsync``,
``…MemsetAsync``; never executed, so no GPU event answers them) are the graph's nodes in CPU
order, each under its operator, its ``nn.Module`` frames and its Python stack: the facts a replay
lacks.  A ROCm launch names its kernel (``args.kernel``); a CUDA launch names none, but a Triton
kernel's host operator (Inductor's, ``triton_…``) is named after it: that name is an **anchor**.

Each captured launch keeps: ``kind`` (``kernel``, ``memcpy``, ``memset``), ``name`` (the kernel it
names, or null), ``anchor``, ``op`` (the innermost operator around the call), ``op_chain``
(outermost first), ``python_stack`` (innermost first), ``module`` (the module path open at the call,
:data:`~profview.frames.NO_MODULE` if none), ``source`` (the innermost source-line frame) and
``sources`` (every source-line frame open, innermost first).  No I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from ...frames import CHAIN_SEPARATOR, NO_MODULE, count_of
from ..tables.launches import _launch_paths
from ..tables.modules import module_paths, source_line, source_stacks
from ..trace.at_time import innermost_open
from ..trace.model import TraceModel
from ..trace.runtime_calls import BEGIN_CAPTURE

END_CAPTURE = r"^(cuda|hip|cu)StreamEndCapture"
#: Launch calls that put a node into a graph under capture, by the GPU work they make.
LAUNCH_KINDS: tuple[tuple[str, str], ...] = (
    ("memcpy", r"^(cuda|hip|cu)Memcpy\w*Async"),
    ("memset", r"^(cuda|hip|cu)Memset\w*Async"),
    ("kernel", r"^(cuda|hip|cu)(Ext)?(Module)?Launch(Cooperative)?Kernel"),
)
#: Inductor names a Triton kernel's host operator after the kernel.
TRITON_OP = r"^triton_"
#: A batch size in an annotation: vLLM's and SGLang's ``capture_32_FULL`` around a capture.
CAPTURE_BATCH = re.compile(r"^capture_([0-9]+)_")

#: The columns of a capture's launches (see the module's docstring); ``index`` is the launch's
#: place in CPU order, ``row`` its host row in the capture's trace.
LAUNCH_SCHEMA: dict[str, pl.DataType] = {
    "index": pl.Int64(),
    "row": pl.Int64(),
    "call": pl.String(),
    "kind": pl.String(),
    "name": pl.String(),
    "anchor": pl.String(),
    "op": pl.String(),
    "op_row": pl.Int64(),
    "op_chain": pl.String(),
    "python_stack": pl.String(),
    "module": pl.String(),
    "source": pl.String(),
    "sources": pl.List(pl.String()),
}


@dataclass(frozen=True)
class Capture:
    """One capture: its ``launches`` (:data:`LAUNCH_SCHEMA`, CPU order), a ``label`` naming it
    (the annotation around it, else its place), the ``batch_size`` that annotation or the capture
    folder's ``execution_details.json`` gives (None: not said), and the trace it is in
    (``origin``).  A launch's ``op_row`` is its operator's host row in that trace (one call of it,
    whatever it launched)."""

    launches: pl.DataFrame
    label: str
    batch_size: int | None
    origin: str

    @property
    def named(self) -> bool:
        """Whether every captured kernel launch names its kernel (ROCm), so names align the replay."""
        kernels = self.launches.filter(pl.col("kind") == "kernel")
        return bool(kernels.height) and kernels["name"].null_count() == 0


#: Frames that launch or dispatch work rather than say which model line asked for it: Triton's
#: runtime and drivers, torch's operator dispatch, custom-op, autograd-function and device
#: wrappers, TorchInductor's and AOTAutograd's runtime and generated code, Dynamo, FX and
#: ``nn.Module.__call__``, AITER's JIT wrapper and torch guard, vLLM's compilation wrappers.
LAUNCHER_FRAMES = re.compile(
    r"^(<built-in|<eval_with_key>|<string>|triton/|torch/_ops\.py|torch/utils/_device\.py|torch/utils/_contextlib\.py"
    r"|torch/_library/|torch/autograd/function\.py|torch/_inductor/|torch/_functorch/|torch/_dynamo/|torch/fx/"
    r"|torch/nn/modules/module\.py|torch/_compile\.py|torch_guard\.py|aiter/jit/|vllm/compilation/"
    r"|contextlib\.py|functools\.py)"
    r"|torchinductor_"
)


def model_source(stack: list[str]) -> str:
    """The innermost frame of a launch's stack (innermost first) in the model's code: launcher and
    framework frames (:data:`LAUNCHER_FRAMES`) skipped, so a Triton kernel's node names the model
    line that ran it (``vllm/model_executor/models/gpt_oss.py(293): forward``), not Triton's driver.
    Where every frame is one of those, the innermost frame that names a file and line."""
    if not stack:
        return ""
    return next((frame for frame in stack if not LAUNCHER_FRAMES.search(frame)), source_line(stack))


def capture_windows(model: TraceModel) -> list[tuple[int, int]]:
    """(begin row, end row) of each capture, in time order: each begin call with the next end call
    on its thread."""
    host = model.host
    calls = host.filter(pl.col("kind").is_in(["runtime", "driver"])).select("row", "name", "pid", "tid", "ts")
    marks = calls.filter(pl.col("name").str.contains(BEGIN_CAPTURE) | pl.col("name").str.contains(END_CAPTURE))
    windows = []
    open_at: dict[tuple[str, str], int] = {}
    for row, name, pid, tid, _ts in marks.sort("ts", "row").iter_rows():
        if re.search(BEGIN_CAPTURE, name):
            open_at[(pid, tid)] = int(row)
        elif (pid, tid) in open_at:
            windows.append((open_at.pop((pid, tid)), int(row)))
    return sorted(windows)


def find_captures(
    model: TraceModel, kernels: pl.DataFrame | None = None, origin: str = "", batch_size: int | None = None
) -> list[Capture]:
    """Every capture in ``model``.  ``kernels``: the kernel each launch call names (``correlation``,
    ``launch_kernel``: the events' ROCm ``args.kernel``, which the model does not keep); ``origin``:
    the trace's path, for labels; ``batch_size``: what the capture folder says, where the annotation
    does not."""
    windows = capture_windows(model)
    if not windows:
        return []
    host = model.host
    paths, _modules = module_paths(model)
    captures = []
    for number, (begin, end) in enumerate(windows, start=1):
        first, last = host.row(begin, named=True), host.row(end, named=True)
        inside = host.filter(
            pl.col("kind").is_in(["runtime", "driver"])
            & (pl.col("pid") == first["pid"])
            & (pl.col("tid") == first["tid"])
            & pl.col("ts").is_between(first["ts"], last["ts"])
        )
        kind = pl.lit(None, dtype=pl.String)
        for name, pattern in LAUNCH_KINDS:
            kind = pl.when(pl.col("name").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
        launches = inside.with_columns(kind.alias("launch")).filter(pl.col("launch").is_not_null()).sort("ts", "row")
        if kernels is not None:
            launches = launches.join(kernels, on="correlation", how="left", maintain_order="left")
        label, size = _label(model, begin, number, len(windows))
        captures.append(
            Capture(_describe(model, launches, paths), label, size if size is not None else batch_size, origin)
        )
    return captures


def _label(model: TraceModel, begin: int, number: int, count: int) -> tuple[str, int | None]:
    """The innermost annotation around the begin call (vLLM's, SGLang's ``capture_32_FULL``) and the
    batch size it names; else the capture's place."""
    host = model.host
    parent = model.tree.parent
    names = host["name"]
    kinds = host["kind"]
    node = int(parent[begin])
    while node >= 0:
        if kinds[node] == "user_annotation" and not str(names[node]).startswith("ProfilerStep#"):
            text = str(names[node])
            match = CAPTURE_BATCH.match(text)
            return text, count_of(match.group(1)) if match else None
        node = int(parent[node])
    return f"capture {number} of {count}", None


def _describe(model: TraceModel, launches: pl.DataFrame, paths: list[str]) -> pl.DataFrame:
    """The launch calls of one capture with their kernels, operators, modules and stacks."""
    if launches.height == 0:
        return pl.DataFrame(schema=LAUNCH_SCHEMA)
    rows = launches["row"].to_numpy()
    op_parent = model.tree.op_parent[rows]
    op_rows: list[int | None] = [int(r) if r >= 0 else None for r in op_parent.tolist()]
    found = _launch_paths(model, op_rows)
    frames = innermost_open(model, launches["pid"], launches["tid"], launches["ts"].to_numpy(), python=True)
    stacks = source_stacks(model, frames)
    ops = [text[0] for text in found]
    names = launches["launch_kernel"].cast(pl.String) if "launch_kernel" in launches.columns else None
    kernel_names = names.to_list() if names is not None else [None] * launches.height
    anchors = [
        op if re.match(TRITON_OP, op) and name is None else None for op, name in zip(ops, kernel_names, strict=True)
    ]
    return pl.DataFrame(
        {
            "index": np.arange(launches.height),
            "row": rows,
            "call": launches["name"],
            "kind": launches["launch"],
            "name": kernel_names,
            "anchor": anchors,
            "op": ops,
            "op_row": op_rows,
            "op_chain": [text[1] for text in found],
            "python_stack": [text[2] for text in found],
            "module": [paths[f] or NO_MODULE if f >= 0 else NO_MODULE for f in frames.tolist()],
            "source": [model_source(stacks[f]) for f in frames.tolist()],
            "sources": [stacks[f] for f in frames.tolist()],
        },
        schema=LAUNCH_SCHEMA,
    )


def chain_text(parts: list[str]) -> str:
    """Frames or operators as one cell (the separator the other views use)."""
    return CHAIN_SEPARATOR.join(parts)
