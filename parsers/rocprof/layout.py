"""The parts of a rocprofv3 JSON document (``rocprofv3 --output-format json``) that profview reads.

The document is ``{"rocprofiler-sdk-tool": [ONE OBJECT PER PROCESS]}``; each object holds
``metadata`` (pid, node, command, the tool's configuration), ``agents`` (CPUs and GPUs),
``strings`` (the names of the record kinds and operations, the roctx messages by correlation id),
``kernel_symbols`` (one per kernel id: mangled, formatted, demangled and truncated names) and
``buffer_records`` (kernel dispatches, HIP/HSA/RCCL/marker API calls, memory copies ...), with
times in nanoseconds.  The layout is rocprofiler-sdk's ``source/docs/rocprofv3-schema.json`` and
the tool's ``generateJSON.cpp``; fields this reader does not use are not declared (msgspec skips
them), fields a version may leave out have defaults.
"""

from __future__ import annotations

import msgspec

from .sniff import TOOL_KEY


class Handle(msgspec.Struct, frozen=True):
    """An opaque id the SDK writes as ``{"handle": N}`` (agents, queues, streams)."""

    handle: int = 0


class Correlation(msgspec.Struct, frozen=True):
    """A record's correlation ids: ``internal`` links an API call to the GPU work it enqueued."""

    internal: int = 0
    external: int = 0


class Dim3(msgspec.Struct, frozen=True):
    """A launch dimension (work-items or a work-group's size), ``x``, ``y``, ``z``."""

    x: int = 0
    y: int = 0
    z: int = 0


class DispatchInfo(msgspec.Struct, frozen=True):
    """What a kernel dispatch packet held: the agent, queue, kernel, LDS and launch shape."""

    kernel_id: int
    agent_id: Handle = Handle()
    queue_id: Handle = Handle()
    dispatch_id: int = 0
    private_segment_size: int = 0
    group_segment_size: int = 0
    workgroup_size: Dim3 = Dim3()
    grid_size: Dim3 = Dim3()


class Timed(msgspec.Struct, frozen=True):
    """A buffer record with a kind, an operation, a thread, correlation ids and a time range (ns)."""

    kind: int
    operation: int
    start_timestamp: int
    end_timestamp: int
    correlation_id: Correlation = Correlation()
    thread_id: int = 0


class Dispatch(Timed, frozen=True):
    """One kernel dispatch (``buffer_records.kernel_dispatch``)."""

    dispatch_info: DispatchInfo = DispatchInfo(kernel_id=0)
    stream_id: Handle | None = None


class MemoryCopy(Timed, frozen=True):
    """One asynchronous memory copy (``buffer_records.memory_copy``): its agents and bytes."""

    dst_agent_id: Handle = Handle()
    src_agent_id: Handle = Handle()
    bytes: int | None = None
    stream_id: Handle | None = None


class KernelSymbol(msgspec.Struct, frozen=True):
    """One entry of ``kernel_symbols``: a kernel id and its names."""

    kernel_id: int = 0
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""
    truncated_kernel_name: str = ""


class Agent(msgspec.Struct, frozen=True):
    """One agent (``type`` 1 a CPU, 2 a GPU) and what it says about itself."""

    id: Handle
    type: int = 0
    name: str = ""
    product_name: str = ""
    vendor_name: str = ""
    cu_count: int = 0
    simd_count: int = 0
    wave_front_size: int = 0
    max_engine_clk_fcompute: int = 0
    local_mem_size: int = 0
    gfx_target_version: int = 0
    node_id: int = 0
    logical_node_id: int = 0
    logical_node_type_id: int = 0


class KindNames(msgspec.Struct, frozen=True):
    """The name of one record kind (``HIP_RUNTIME_API``) and of its operations, by number."""

    kind: str = ""
    operations: list[str] = []


class KeyValue(msgspec.Struct, frozen=True):
    """One entry of a ``std::map`` as cereal writes it (a roctx message by correlation id)."""

    key: int
    value: str


class ExternalStrings(msgspec.Struct, frozen=True):
    """``strings.correlation_id``: kernel renames (``--kernel-rename``) by external correlation id."""

    external: list[KeyValue] = []


class Strings(msgspec.Struct, frozen=True):
    """``strings``: kind and operation names of the buffer records, roctx messages, renames."""

    buffer_records: list[KindNames] = []
    marker_api: list[KeyValue] = []
    correlation_id: ExternalStrings = ExternalStrings()


class Node(msgspec.Struct, frozen=True):
    """``metadata.node``: the machine."""

    hostname: str = ""


class Config(msgspec.Struct, frozen=True):
    """The parts of ``metadata.config`` that change how records read."""

    kernel_rename: bool = False


class Metadata(msgspec.Struct, frozen=True):
    """``metadata``: the process, its command line, the machine, the profiler's window (ns)."""

    pid: int = 0
    init_time: int | None = None
    fini_time: int | None = None
    command: list[str] = []
    node: Node = Node()
    config: Config = Config()


class Buffers(msgspec.Struct, frozen=True):
    """``buffer_records``: the records read as events, and the other kinds, counted only."""

    kernel_dispatch: list[Dispatch] = []
    hip_api: list[Timed] = []
    hsa_api: list[Timed] = []
    marker_api: list[Timed] = []
    rccl_api: list[Timed] = []
    memory_copy: list[MemoryCopy] = []
    memory_allocation: list[msgspec.Raw] = []
    scratch_memory: list[msgspec.Raw] = []
    rocdecode_api: list[msgspec.Raw] = []
    rocjpeg_api: list[msgspec.Raw] = []
    pc_sample_host_trap: list[msgspec.Raw] = []
    pc_sample_stochastic: list[msgspec.Raw] = []
    ompt: list[msgspec.Raw] = []
    kfd_events: list[msgspec.Raw] = []


class Process(msgspec.Struct, frozen=True):
    """One profiled process: one element of the ``rocprofiler-sdk-tool`` array."""

    metadata: Metadata = Metadata()
    agents: list[Agent] = []
    strings: Strings = Strings()
    kernel_symbols: list[KernelSymbol] | None = None
    buffer_records: Buffers = Buffers()


class Document(msgspec.Struct, frozen=True):
    """The whole document."""

    processes: list[Process] = msgspec.field(name=TOOL_KEY)
