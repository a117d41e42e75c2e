"""Communication: which GPU kernels are collectives, and which host time waits in CPU collectives.

GPU kernels are classified by :func:`classify_communication`, in this order (the first rule that
applies wins):

1. the collective arguments Kineto writes on a kernel (``Collective name``, the ``collective``
   column): the kernel is communication; its collective type comes from that argument;
2. the kernel's name: NCCL (``ncclKernel_*``, ``ncclDevKernel_*`` including ``_Generic``, whose
   name gives no collective type, NCCL >= 2.27 symmetric ``ncclSymkDevKernel_*``, older
   ``ncclAllReduceRingLLKernel``-style names: anything naming ``nccl``), ``rccl``, ``hccl``,
   PyTorch symmetric-memory kernels (``multimem_all_reduce_kernel``,
   ``multimem_one_shot_all_reduce_kernel``, ``multimem_all_gather_kernel``,
   ``one_shot_all_reduce_kernel``, ``two_shot_all_reduce_kernel``, in any namespace, with any
   template arguments) and vLLM's custom all-reduce (``cross_device_reduce_1stage``/``2stage``);
3. a user pattern (``--comm-pattern REGEX``, e.g. for NVSHMEM puts inside application kernels):
   backend ``user``.

Host time inside a CPU collective (:func:`host_collective_intervals`) is the ``gloo:*`` (and
``mpi:*``) ranges, which the process group's worker threads record around the collective's work,
plus the ``c10d::*`` calls of any thread that overlap one of them (the caller enqueueing the
collective or blocked waiting for it).  NCCL's host ranges (``nccl:*``, ``c10d::*`` around a
kernel launch) are not: they only launch GPU work, which rule 1-3 count.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import polars as pl

from .name_rules import first_match

if TYPE_CHECKING:  # NumPy is imported where intervals are merged: a kernel table's names need none
    import numpy as np

#: Columns :func:`classify_communication` adds.
COMM_COLUMNS = ("backend", "collective_name")
#: Backend of a kernel that carries collective arguments but whose name says no backend, when the
#: caller knows none (``distributedInfo.backend``).
UNKNOWN_BACKEND = "unknown"
#: Backend of kernels matched only by the user's pattern.
USER_BACKEND = "user"

#: Kernel-name rules, in order: (backend, regex on the kernel name, collective type or None to
#: derive it from the name).  Names are matched as written (``void ns::kernel<T, 16>(args)``).
NAME_RULES: tuple[tuple[str, str, str | None], ...] = (
    (
        "symmetric_memory",
        r"\b(?:multimem_all_reduce_kernel|multimem_one_shot_all_reduce_kernel|multimem_all_gather_kernel"
        r"|one_shot_all_reduce_kernel|two_shot_all_reduce_kernel)\b",
        None,
    ),
    ("vllm_custom_allreduce", r"\bcross_device_reduce_(?:1stage|2stage)\b", "AllReduce"),
    ("nccl", r"(?i)nccl", None),
    ("rccl", r"(?i)rccl", None),
    ("hccl", r"(?i)hccl", None),
)
#: NCCL's kernel names put the collective right after the prefix: ``ncclDevKernel_AllGather_RING_LL``.
_NCCL_TOKEN = r"\bnccl(?:Symk)?(?:Dev)?Kernel_([A-Za-z]+)"
#: Collective types, recognised in a name with ``_``/``-`` removed, lower-cased; order matters
#: (``reducescatter`` before ``reduce``).  The last six are only trusted at the start of a word
#: list that names a collective (``Collective name`` arguments, ``gloo:NAME``), never inside a
#: kernel name, where ``reduce`` or ``gather`` mean something else.
COLLECTIVE_WORDS: tuple[tuple[str, str], ...] = (
    ("reducescatter", "ReduceScatter"),
    ("allreduce", "AllReduce"),
    ("allgather", "AllGather"),
    ("alltoall", "AllToAll"),
    ("sendrecv", "SendRecv"),
    ("broadcast", "Broadcast"),
    ("barrier", "Barrier"),
    ("reduce", "Reduce"),
    ("gather", "Gather"),
    ("scatter", "Scatter"),
    ("send", "Send"),
    ("recv", "Recv"),
)
_IN_NAME_WORDS = 7
#: Host ranges that are a CPU collective's work: ``gloo:all_reduce``, ``mpi:...``.
CPU_COLLECTIVE = r"^(gloo|mpi):"
#: Host calls into a collective (``c10d::allreduce_``, ``c10d::_allgather_base_``, ...).
C10D_CALL = r"^c10d::"


def collective_type(text: str | None, *, anywhere: bool = False) -> str | None:
    """The collective type a name or ``Collective name`` argument says, or None.

    ``anywhere=False``: ``text`` is a collective's own name (``_allgather_base``, ``all_to_all``,
    ``recvAnySource``) and must start with a collective word; ``anywhere=True``: ``text`` is a
    kernel name, searched for the unambiguous words only (``allreduce``, ``AllGather`` ...).
    """
    if not text:
        return None
    compact = re.sub(r"[_\-\s]", "", text).lower()
    if anywhere:
        return next((kind for word, kind in COLLECTIVE_WORDS[:_IN_NAME_WORDS] if word in compact), None)
    return next((kind for word, kind in COLLECTIVE_WORDS if compact.startswith(word)), None)


def collective_types(text: pl.Expr, *, anywhere: bool = False) -> pl.Expr:
    """:func:`collective_type` of each value of ``text``, in Polars (linear in each text)."""
    compact = text.cast(pl.String).str.replace_all(r"[_\-\s]", "").str.to_lowercase()
    words = COLLECTIVE_WORDS[:_IN_NAME_WORDS] if anywhere else COLLECTIVE_WORDS
    tests = [compact.str.contains(w, literal=True) if anywhere else compact.str.starts_with(w) for w, _ in words]
    found = pl.when(tests[0]).then(pl.lit(words[0][1]))
    for test, (_word, kind) in zip(tests[1:], words[1:], strict=True):
        found = found.when(test).then(pl.lit(kind))  # type: ignore[assignment]
    return found.otherwise(pl.lit(None, dtype=pl.String))


def _rules(pattern: str | None) -> list[tuple[str, str]]:
    """(backend, regex) of rules 2 and 3, in order."""
    rules = [(backend, regex) for backend, regex, _kind in NAME_RULES]
    return [*rules, (USER_BACKEND, pattern)] if pattern else rules


def _name_classes(names: pl.Series, pattern: str | None) -> pl.DataFrame:
    """``name, backend, kind`` of the distinct kernel names that rules 2 and 3 make
    communication (the others are left out), with Polars' regex engine (:mod:`.name_rules`:
    linear in each name, the user's pattern included)."""
    frame = pl.DataFrame({"name": names.cast(pl.String), "backend": first_match(names, _rules(pattern))})
    frame = frame.filter(pl.col("backend").is_not_null())
    fixed = {backend: kind for backend, _regex, kind in NAME_RULES if kind is not None}
    token = pl.col("name").str.extract(_NCCL_TOKEN, 1)
    kind = (
        pl.when(pl.col("backend").is_in(list(fixed)))
        .then(pl.col("backend").replace_strict(fixed, default=None, return_dtype=pl.String))
        # the token is NCCL's own spelling; Generic says nothing
        .when(token == "Generic")
        .then(pl.lit(None, dtype=pl.String))
        .when(token.is_not_null())
        .then(collective_types(token))
        .otherwise(collective_types(pl.col("name"), anywhere=True))
    )
    return frame.with_columns(kind.alias("kind"))


def name_backends(names: list[str], pattern: str | None = None) -> list[str | None]:
    """The backend rules 2 and 3 give each kernel name (None: not communication by its name)."""
    backends: list[str | None] = first_match(pl.Series("name", names, dtype=pl.String), _rules(pattern)).to_list()
    return backends


def classify_communication(
    gpu: pl.DataFrame, pattern: str | None = None, default_backend: str | None = None
) -> pl.DataFrame:
    """``gpu`` (the GPU-work frame) with ``backend`` and ``collective_name`` added, per event.

    ``backend`` is null for GPU work that is not communication, else ``nccl``, ``rccl``, ``hccl``,
    ``symmetric_memory``, ``vllm_custom_allreduce``, ``user`` (matched by ``pattern`` only), or,
    for a kernel with collective arguments but no telling name, ``default_backend`` (the trace's
    ``distributedInfo.backend``) or ``unknown``.  ``collective_name`` is the collective type
    (``AllReduce``, ``AllGather``, ``ReduceScatter``, ``Broadcast``, ``Reduce``, ``AllToAll``,
    ``SendRecv``, ``Send``, ``Recv``, ``Gather``, ``Scatter``, ``Barrier``), null when neither the
    arguments nor the name say it.  Only kernels are classified (memcpy and memset never are).
    The order of the rules is the module's; ``pattern`` is a regular expression searched in the
    kernel name by Polars' engine (:mod:`.name_rules`; one it cannot run raises ``PolarsError``).
    """
    kernels = pl.col("kind") == "kernel"
    arg = pl.col("collective") if "collective" in gpu.columns else pl.lit(None, dtype=pl.String)
    # The two columns alone are filtered: a filter of the GPU frame would copy all its columns.
    kernel_keys = gpu.select(kernels.alias("k"), "name", arg.alias("a")).filter(pl.col("k"))
    # Only the names that are communication are looked up per event (usually none or a few).
    found = _name_classes(kernel_keys["name"].unique().drop_nulls(), pattern)
    args = kernel_keys.select(pl.col("a").cast(pl.String).unique().drop_nulls())
    args = args.with_columns(collective_types(pl.col("a")).alias("kind")).filter(pl.col("kind").is_not_null())
    text = pl.col("name").cast(pl.String)
    by_name = text.replace_strict(found["name"], found["backend"], default=None, return_dtype=pl.String)
    kind_by_name = text.replace_strict(found["name"], found["kind"], default=None, return_dtype=pl.String)
    kind_by_arg = arg.cast(pl.String).replace_strict(args["a"], args["kind"], default=None, return_dtype=pl.String)
    has_arg = arg.is_not_null() & (arg != "")
    backend = (
        pl.when(kernels & has_arg)
        .then(pl.coalesce(by_name, pl.lit(default_backend or UNKNOWN_BACKEND)))
        .when(kernels)
        .then(by_name)
    )
    collective = (
        pl.when(kernels & has_arg).then(pl.coalesce(kind_by_arg, kind_by_name)).when(kernels).then(kind_by_name)
    )
    return gpu.with_columns(backend.alias("backend"), collective.alias("collective_name"))


def host_collective_intervals(host: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) in µs of host time inside CPU collectives (see the module's rule).

    ``host`` is the model's host frame (``name``, ``ts``, ``end``, ``is_op``).  The intervals may
    overlap; callers take their union.
    """
    import numpy as np

    ops = host.filter(pl.col("is_op"))
    work = ops.filter(pl.col("name").str.contains(CPU_COLLECTIVE))
    if work.height == 0:
        return np.zeros(0), np.zeros(0)
    run_starts, run_ends = merge_intervals(work["ts"].to_numpy(), work["end"].to_numpy())
    calls = ops.filter(pl.col("name").str.contains(C10D_CALL))
    c_starts, c_ends = calls["ts"].to_numpy(), calls["end"].to_numpy()
    # A call overlaps a run when the last run starting before the call ends is still open after it starts.
    last = np.searchsorted(run_starts, c_ends, side="left") - 1
    waits = (last >= 0) & (run_ends[np.clip(last, 0, None)] > c_starts)
    return np.concatenate([run_starts, c_starts[waits]]), np.concatenate([run_ends, c_ends[waits]])


def merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (starts, ends)."""
    import numpy as np

    if not len(starts):
        return np.zeros(0), np.zeros(0)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    new_run = np.concatenate([[True], s[1:] > e[:-1]])
    last_of_run = np.concatenate([new_run[1:], [True]])
    return s[new_run], e[last_of_run]


def host_collective_kinds(host: pl.DataFrame) -> pl.DataFrame:
    """Per CPU-collective backend and type: ``backend``, ``collective_name``, ``calls``, ``total_us``."""
    work = host.filter(pl.col("is_op") & pl.col("name").str.contains(CPU_COLLECTIVE))
    return (
        work.with_columns(
            pl.col("name").str.extract(CPU_COLLECTIVE, 1).alias("backend"),
            pl.col("name")
            .str.replace(CPU_COLLECTIVE, "")
            .map_elements(collective_type, return_dtype=pl.String)
            .alias("collective_name"),
        )
        .group_by("backend", "collective_name")
        .agg(pl.len().cast(pl.Int64).alias("calls"), pl.col("dur").sum().alias("total_us"))
        .sort(["total_us", "backend", "collective_name"], descending=[True, False, False])
    )
