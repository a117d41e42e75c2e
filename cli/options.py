"""The options several commands share: one definition each (typer ``Annotated`` types)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

PathArg = Annotated[
    list[str],
    typer.Argument(
        help="Trace (.json, .json.gz) or profiler table file; or a job: a directory, a glob, several traces "
        "or a .tar/.tar.gz/.tgz/.zip archive of rank traces."
    ),
]
# The options of every command that writes a table (export, diff): one definition each.
FilterOption = Annotated[
    Optional[str], typer.Option("--filter", "-f", help="Keep rows whose name matches this regex.")  # noqa: UP045
]
SortOption = Annotated[Optional[str], typer.Option(help="Sort by this column (descending).")]  # noqa: UP045
AscOption = Annotated[bool, typer.Option("--asc", help="Sort ascending.")]
#: The most rows ``--top`` may keep: the engine counts rows in 64 bits (a larger N was an internal error).
MAX_TOP = 2**63 - 1
TopOption = Annotated[
    Optional[int], typer.Option("--top", "-n", min=0, max=MAX_TOP, help="Keep the first N rows.")  # noqa: UP045
]
OnPathOption = Annotated[
    bool,
    typer.Option(
        "--on-path",
        help="kernels, ops: each name's time on the critical path (on_path_us, path_pct; --step: that step's).",
    ),
]
IterationOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--iteration",
        help="iterations, phases: the iterations are the host ranges whose name matches this regex "
        "(default: vLLM/SGLang/ATOM/prefill/decode annotations, else steps). kernels, ops, launches, modules, "
        "efficiency, categories: N, only iteration N's work (its number in --view iterations), as --step N.",
    ),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]
RawFormulas = Annotated[
    bool, typer.Option("--raw-formulas", help="Do not neutralise spreadsheet formulas in CSV cells.")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Parse the trace again; ignore the cache.")]
CommPattern = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--comm-pattern",
        help="Regex: kernels whose name matches it also count as communication (e.g. NVSHMEM puts).",
    ),
]
StepRange = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--step-range",
        help="Regex: the NVTX ranges of an Nsight Systems export it names (e.g. '^train_step$') are the steps, "
        "beside ProfilerStep#N.",
    ),
]
RunOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--run", help="Which run of a file that holds several (TensorBoard-plugin JSON)."),
]


# -- distributed jobs (several rank traces)
Workers = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--workers", "-j", min=1, help="Job: worker processes summarising ranks (default: all cores)."),
]
StrictOption = Annotated[
    bool,
    typer.Option(
        "--strict", help="Job: fail on a rank trace that cannot be read (default: open the job without it, and say so)."
    ),
]
DaskOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dask", help="Job: run the per-rank work on this Dask scheduler (default: $DASK_SCHEDULER_ADDRESS)."
    ),
]
AsJob = Annotated[
    bool,
    typer.Option(
        "--as-job",
        help="One Nsight Systems export: its processes that launched GPU work as the ranks of a job "
        "(numbered by pid), as a directory of rank traces opens.",
    ),
]
# -- graph replays (issue 36)
CaptureOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--capture",
        help="Graph replays: a capture trace, or a folder with execution_details.json (vLLM, SGLang), to "
        "attribute replayed kernels through (repeatable).",
    ),
]
