"""The documented Polars frames every parser produces.

**Events frame** (one row per trace event, from Chrome-trace JSON):

=================  =========  ===========================================================
column             dtype      meaning
=================  =========  ===========================================================
ph                 String     Chrome-trace phase: ``X`` complete, ``i`` instant, ``s``/``f`` flow, ``M`` metadata
cat                String     category as written in the trace (``kernel``, ``Kernel``, ``cpu_op`` ...)
kind               Enum       normalised category, one of :data:`KINDS`
name               String     event name (operator, kernel, runtime call ...)
short_name         String     a kernel's short name where the profiler records one (Nsight Systems'
                              ``shortName``: ``ampere_sgemm_128x64_nn`` beside the demangled name);
                              null where it records none (Kineto, rocprofv3)
pid, tid           String     process and thread as written (``"0"``, ``"stream 7"``, ``"Spans"``)
ts                 Float64    start, microseconds as written in the trace
dur                Float64    duration in microseconds (null when absent)
external_id        Int64      ``External id`` / legacy ``external id`` (0 in the trace becomes null)
correlation        Int64      CUDA/HIP correlation id linking a runtime call to its GPU work
flow_id            Int64      ``id`` of flow events
stream, device     Int64      GPU stream and device index of GPU work
grid, block        String     launch shape as written, e.g. ``[64, 1, 1]``
registers          Int64      registers per thread
shared_mem         Int64      shared memory per block in bytes
occupancy          Float64    ``est. achieved occupancy %``
bytes              Int64      bytes moved by a memcpy/memset
input_dims         String     ``Input Dims`` of an operator, as JSON text
input_type         String     ``Input type`` of an operator, as JSON text
concrete_inputs    String     ``Concrete Inputs`` of an operator (scalar arguments as text), as JSON text
flops              Int64      Kineto's ``flops`` of an operator (``with_flops=True``, where torch writes it)
python_id          Int64      ``Python id`` of a python_function event
python_parent_id   Int64      ``Python parent id``
call_stack         String     legacy ``Call stack`` of an operator (PyTorch <= 1.10 with_stack)
sequence_number    Int64      autograd ``Sequence number``
fwd_thread_id      Int64      ``Fwd thread id`` of a backward op
collective         String     ``Collective name`` of an NCCL/RCCL operation
label              String     ``args.name`` of a metadata event (process/thread name)
launch_kernel      String     ``kernel`` of a ROCm launch call: the kernel it launches (issue 36)
graph_id           Int64      ``graph id`` of a replayed GPU event (newer Kineto)
graph_node_id      Int64      ``graph node id`` of a replayed GPU event (newer Kineto)
dtype              String     ``dtype`` of a collective (``Float``, ``BFloat16``)
in_nelems          Int64      ``In msg nelems``: elements a collective sends
out_nelems         Int64      ``Out msg nelems``: elements it receives
group_size         Int64      ``Group size`` of the collective's process group
process_group      String     ``Process Group Name`` (``"0"`` is the default group)
process_group_ranks String    ``Process Group Ranks`` as written (``[0, 1]``)
seq                Int64      ``Seq``: the collective's sequence number in its process group
comms_id           Int64      ``Comms Id`` (null when above the int64 range)
src_rank           Int64      ``Src Rank``: the global rank a point-to-point recv receives from
dst_rank           Int64      ``Dst Rank``: the global rank a point-to-point send sends to
mem_bytes          Int64      ``Bytes`` of a ``[memory]`` event (negative for a free)
mem_allocated      Int64      ``Total Allocated`` on the device after it
mem_reserved       Int64      ``Total Reserved`` by the caching allocator after it
mem_device_type    Int64      ``Device Type`` (c10 DeviceType: 0 CPU, 1 CUDA ...)
mem_device_id      Int64      ``Device Id`` (-1 for the CPU)
mem_addr           Int64      ``Addr`` of the block
kernel_file        String     a Triton host op's ``kernel_file`` (TorchInductor's compiled module)
kernel_hash        String     ``kernel_hash``: with the name, the identity of a compiled kernel
kernel_name        String     ``kernel_name`` (the Triton kernel's name)
kernel_kwargs      String     ``kernel_kwargs`` (its block sizes, ``XBLOCK=512``)
kernel_backend     String     ``kernel_backend`` (``triton``)
num_warps          Int64      ``num_warps`` of the launch
num_stages         Int64      ``num_stages`` of the launch
kernel_flop        Int64      ``kernel_flop``: Inductor's own FLOP count, where it writes one
kernel_num_gb      Float64    ``kernel_num_gb``: Inductor's own GB moved, where it writes one
=================  =========  ===========================================================

**Trace metadata** is a plain dict of the document's top-level keys other than ``traceEvents``
(``deviceProperties``, ``distributedInfo``, ``with_stack`` and the other flags).

The analysis frames (kernels, operators, steps, launches) are documented in
:mod:`profview.analysis`; text-table parsers produce those frames directly.
"""

from __future__ import annotations

import polars as pl

from ..frames import KIND

#: Lower-cased ``cat`` values → kind, for ``X`` events.
CATEGORY_KINDS: dict[str, str] = {
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_runtime": "runtime",
    "runtime": "runtime",
    "cuda_driver": "driver",
    "driver": "driver",
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "user_annotation",
    "python_function": "python_function",
    # PaddlePaddle's own trace categories
    "cudaruntime": "runtime",
    "operatorinner": "cpu_op",
    "userdefined": "user_annotation",
    "pythonuserdefined": "user_annotation",
    "profilestep": "user_annotation",
    "dataloader": "user_annotation",
    "forward": "user_annotation",
    "backward": "user_annotation",
    "optimization": "user_annotation",
    "pythonop": "user_annotation",
    "communication": "cpu_op",
    "mluruntime": "runtime",
    # the profiler's own work (Kineto's "overhead" ranges: Activity Buffer Request, Buffer Flush)
    "overhead": "overhead",
}

#: Lower-cased ``cat`` values of events profview knows and does not read as work (the profiler's
#: own range, flow links, synchronisation records, instant markers): never "unknown categories".
KNOWN_UNREAD_CATEGORIES = frozenset({
    "trace", "cuda_sync", "cuda_profiler_range", "ac2g", "async_cpu_to_gpu", "cpu_instant_event",
    "gpu_instant_event", "fwdbwd", "memory", "python_function_call",
})  # fmt: skip


def unknown_categories(events: pl.DataFrame) -> tuple[int, list[str]]:
    """Events whose ``cat`` profview does not know and that were not read as work (their ``kind``
    is ``other``; a reader that names its own categories, as rocprofv3's ``KERNEL_DISPATCH``, gives
    their events a kind): how many, and their categories, most events first."""
    known = {*CATEGORY_KINDS, *KNOWN_UNREAD_CATEGORIES}
    unread = (
        pl.col("kind").is_null() | (pl.col("kind").cast(pl.String) == "other") if "kind" in events.columns else True
    )
    cats = events.filter(pl.col("cat").is_not_null() & pl.col("ph").is_in(["X", "B", "E", "i", "I"]) & unread)
    per_cat = cats.group_by(pl.col("cat").cast(pl.String)).len().sort(["len", "cat"], descending=[True, False])
    unknown = per_cat.filter(~pl.col("cat").str.to_lowercase().is_in(list(known)))
    return int(unknown["len"].sum()), unknown["cat"].to_list()


#: (column, trace arg key(s), dtype) for every typed column taken from ``args``.
#: Argument columns that some tracers write as numbers and others as text (ROCm's ``stream``):
#: read as either, kept as the number.
NUMBER_OR_TEXT_ARGS = frozenset({"stream"})
ARG_COLUMNS: tuple[tuple[str, tuple[str, ...], pl.DataType], ...] = (
    ("external_id", ("External id", "external id"), pl.Int64()),
    ("correlation", ("correlation", "correlation id"), pl.Int64()),  # "correlation id": PaddlePaddle
    ("stream", ("stream",), pl.Int64()),
    ("device", ("device",), pl.Int64()),
    ("grid", ("grid",), pl.String()),
    ("block", ("block",), pl.String()),
    ("registers", ("registers per thread",), pl.Int64()),
    ("shared_mem", ("shared memory",), pl.Int64()),
    ("occupancy", ("est. achieved occupancy %", "theoretical achieved occupancy %"), pl.Float64()),
    ("bytes", ("bytes",), pl.Int64()),
    ("input_dims", ("Input Dims",), pl.String()),
    ("input_type", ("Input type",), pl.String()),
    # issue 24: the perf model reads scalar arguments (is_causal, stride, padding) and Kineto's FLOPs
    ("concrete_inputs", ("Concrete Inputs",), pl.String()),
    ("flops", ("flops",), pl.Int64()),
    ("python_id", ("Python id",), pl.Int64()),
    ("python_parent_id", ("Python parent id",), pl.Int64()),
    ("call_stack", ("Call stack",), pl.String()),
    ("sequence_number", ("Sequence number",), pl.Int64()),
    ("fwd_thread_id", ("Fwd thread id",), pl.Int64()),
    ("collective", ("Collective name",), pl.String()),
    ("label", ("name",), pl.String()),
    # XLA/TensorFlow pack a kernel's launch shape into one string (see parsers/other_chrome.py).
    ("kernel_details", ("kernel_details",), pl.String()),
    # -- graph replays (issue 36): the kernel a ROCm launch call names (a capture's launches are
    # never executed, so this is what ties them to the replayed kernels), and the graph and node
    # ids newer Kineto writes on a replayed GPU event
    ("launch_kernel", ("kernel",), pl.String()),
    ("graph_id", ("graph id",), pl.Int64()),
    ("graph_node_id", ("graph node id",), pl.Int64()),
    # -- collective arguments (distributed jobs: matching a collective across ranks) --
    ("dtype", ("dtype",), pl.String()),
    ("in_nelems", ("In msg nelems",), pl.Int64()),
    ("out_nelems", ("Out msg nelems",), pl.Int64()),
    ("group_size", ("Group size",), pl.Int64()),
    ("process_group", ("Process Group Name",), pl.String()),
    ("process_group_ranks", ("Process Group Ranks",), pl.String()),
    ("seq", ("Seq",), pl.Int64()),
    ("comms_id", ("Comms Id",), pl.Int64()),  # an id above the int64 range reads as null
    # a point-to-point call's peer (global ranks): a send names its ``Dst Rank``, a recv its ``Src Rank``
    ("src_rank", ("Src Rank",), pl.Int64()),
    ("dst_rank", ("Dst Rank",), pl.Int64()),
    # Memory: the allocator's ``[memory]`` instant events (``profile_memory=True``).
    ("mem_bytes", ("Bytes",), pl.Int64()),
    ("mem_allocated", ("Total Allocated",), pl.Int64()),
    ("mem_reserved", ("Total Reserved",), pl.Int64()),
    ("mem_device_type", ("Device Type",), pl.Int64()),
    ("mem_device_id", ("Device Id",), pl.Int64()),
    ("mem_addr", ("Addr",), pl.Int64()),
    # Issue 36: the host op TorchInductor records around each Triton launch (its compiled kernel:
    # file, hash, name, launch configuration, and Inductor's own FLOP and byte counts where written).
    ("kernel_file", ("kernel_file",), pl.String()),
    ("kernel_hash", ("kernel_hash",), pl.String()),
    ("kernel_name", ("kernel_name",), pl.String()),
    ("kernel_kwargs", ("kernel_kwargs",), pl.String()),
    ("kernel_backend", ("kernel_backend",), pl.String()),
    ("num_warps", ("num_warps",), pl.Int64()),
    ("num_stages", ("num_stages",), pl.Int64()),
    ("kernel_flop", ("kernel_flop",), pl.Int64()),
    ("kernel_num_gb", ("kernel_num_gb",), pl.Float64()),
)

#: Text columns held as ``pl.Categorical`` (4 bytes a row and each distinct text once) instead of
#: ``pl.String`` (16 bytes a row): a trace repeats a few hundred distinct values of these over
#: hundreds of thousands of events (issue 25: the events frame is most of a cold open's memory).
#: They compare with text (``== "X"``, ``is_in``), group, sort and write as text; ``.str`` and a
#: join with a ``String`` column need ``.cast(pl.String)`` first.
CATEGORICAL_COLUMNS: frozenset[str] = frozenset(
    {"ph", "cat", "pid", "tid", "grid", "block", "input_dims", "input_type", "concrete_inputs", "label"}
    | {"launch_kernel"}  # the kernel a ROCm launch call names (graph captures)
    | {"kernel_file", "kernel_hash", "kernel_name", "kernel_kwargs", "kernel_backend"}  # Inductor's Triton ops
    | {"short_name"}  # a kernel's short name (Nsight Systems): one per distinct kernel
)

EVENT_SCHEMA: dict[str, pl.DataType] = {
    column: pl.Categorical() if column in CATEGORICAL_COLUMNS else dtype
    for column, dtype in {
        "ph": pl.String(),
        "cat": pl.String(),
        "kind": KIND,
        "name": pl.String(),
        "pid": pl.String(),
        "tid": pl.String(),
        "ts": pl.Float64(),
        "dur": pl.Float64(),
        "flow_id": pl.Int64(),
        **{column: dtype for column, _keys, dtype in ARG_COLUMNS},
        # Not an argument of any Chrome trace: only a reader that records it fills it.
        "short_name": pl.String(),
    }.items()
}


def kind_expr() -> pl.Expr:
    """The normalised :data:`KINDS` value of an event, from its ``ph`` and ``cat`` columns."""
    cat = pl.col("cat").str.to_lowercase()
    by_cat = cat.replace_strict(CATEGORY_KINDS, default="other", return_dtype=pl.String)
    ph = pl.col("ph")
    return (
        pl.when(ph.is_in(["X", "B", "E"]))
        .then(by_cat)
        .when(ph.is_in(["i", "I", "n"]))
        .then(pl.lit("instant"))
        .when(ph.is_in(["s", "t", "f"]))
        .then(pl.lit("flow"))
        .when(ph == "M")
        .then(pl.lit("metadata"))
        .when(ph == "C")
        .then(pl.lit("counter"))
        .otherwise(pl.lit("other"))
        .cast(KIND)
    )


def empty_events() -> pl.DataFrame:
    """An events frame with no rows and the documented schema."""
    return pl.DataFrame(schema=EVENT_SCHEMA)
