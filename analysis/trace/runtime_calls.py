"""Runtime calls by what they do: the blocking copies and synchronisations the host waits in, the
graph replays, and whose runtime (CUDA or HIP) a trace's calls are.

Shared by the critical path (a blocking call's time is its own, not launch overhead) and the
Overview's hints (no "try CUDA graphs" where graphs replay; HIP wording on ROCm traces).  No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

#: Host calls that may block until GPU work has finished (a synchronisation, or a copy the runtime
#: performs synchronously with the host).
BLOCKING_CALLS = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
    "cudaMemcpy2D",
    "cudaMemcpy2DAsync",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipMemcpy",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)
#: A CUDA/HIP graph replay call (``cudaGraphLaunch``, ``hipGraphLaunch``, versioned names).
GRAPH_LAUNCH = r"GraphLaunch"
#: A call that puts work on the GPU: a kernel or graph launch, an asynchronous copy or set
#: (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``hipExtModuleLaunchKernel``, ``cudaMemcpyAsync``).
GPU_LAUNCH = r"Launch|Memcpy\w*Async|Memset\w*Async"
RUNTIME_KINDS = ("runtime", "driver")
BEGIN_CAPTURE = r"^(cuda|hip|cu)StreamBeginCapture"


@dataclass(frozen=True)
class RuntimeFacts:
    """What a trace's runtime calls say: ``api`` (``CUDA`` or ``HIP``), ``graph_launches``,
    ``launches`` (calls that put work on the GPU: :data:`GPU_LAUNCH`),
    ``runtime_us`` (their summed time), ``blocking_us`` (of it, in :data:`BLOCKING_CALLS`) and the
    blocking call that took most of it (``top_blocking``, with its µs)."""

    api: str = "CUDA"
    graph_launches: int = 0
    runtime_us: float = 0.0
    blocking_us: float = 0.0
    top_blocking: str | None = None
    top_blocking_us: float = 0.0
    launches: int = 0
    #: Stream captures begun (``cudaStreamBeginCapture``): work launched inside one is recorded
    #: into a graph, not run, so a GPU idle beside a busy host says nothing about a CPU bound.
    captures: int = 0

    @property
    def blocking_pct(self) -> float:
        return self.blocking_us / self.runtime_us * 100.0 if self.runtime_us > 0 else 0.0


def runtime_facts(host: pl.DataFrame) -> RuntimeFacts:
    """The :class:`RuntimeFacts` of a model's host frame (``kind``, ``name``, ``dur``)."""
    calls = host.filter(pl.col("kind").cast(pl.String).is_in(RUNTIME_KINDS)).select(
        pl.col("name").cast(pl.String), pl.col("dur").cast(pl.Float64).clip(lower_bound=0)
    )
    if calls.height == 0:
        return RuntimeFacts()
    per_name = calls.group_by("name").agg(pl.col("dur").sum(), pl.len().alias("n"))
    names = per_name["name"].fill_null("")
    hip = int(per_name.filter(names.str.starts_with("hip"))["n"].sum())
    cuda = int(per_name.filter(names.str.starts_with("cu"))["n"].sum())
    blocking = per_name.filter(pl.col("name").is_in(BLOCKING_CALLS)).sort(["dur", "name"], descending=[True, False])
    return RuntimeFacts(
        api="HIP" if hip > cuda else "CUDA",
        graph_launches=int(per_name.filter(names.str.contains(GRAPH_LAUNCH))["n"].sum()),
        runtime_us=float(per_name["dur"].sum()),
        blocking_us=float(blocking["dur"].sum()),
        top_blocking=str(blocking["name"][0]) if blocking.height else None,
        top_blocking_us=float(blocking["dur"][0]) if blocking.height else 0.0,
        launches=int(per_name.filter(names.str.contains(GPU_LAUNCH))["n"].sum()),
        captures=int(per_name.filter(names.str.contains(BEGIN_CAPTURE))["n"].sum()),
    )
