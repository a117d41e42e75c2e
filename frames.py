"""The bottom layer: what every frame looks like, and the rules every view shares.

Everything else imports from here; this module imports only Polars.  Data flows one way:
``parsers`` (files → events frame or view frames + metadata) → ``analysis`` (frames → frames)
→ ``trace_profile`` / ``cli`` / ``tui`` / ``export`` (frames → screens and files).

* **Event kinds** (:data:`KINDS`): the normalised category of a trace event; the events frame
  itself (columns and dtypes) is documented in :mod:`profview.parsers.schema`, which maps the
  trace's JSON onto it.
* **View frames** (all times in µs), one column tuple each: :data:`KERNEL_COLUMNS`,
  :data:`OPERATOR_COLUMNS`, :data:`STEP_COLUMNS`, :data:`OP_LAUNCH_COLUMNS`,
  :data:`KERNEL_LAUNCH_COLUMNS`.  Text formats fill them directly (:func:`conform_kernels`).
* **Step categories** (:data:`CATEGORIES`) with their labels, colours and fill characters.
* **Rules**: the share of a total (:func:`share_pct`), how a duration is written
  (:func:`fmt_us`), how ``ProfilerStep#N`` folds into one row (:func:`display_name`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

# -- event kinds ------------------------------------------------------------------------------

#: Normalised event kinds.  GPU work is ``kernel``, ``memcpy`` and ``memset``.
KINDS: tuple[str, ...] = (
    "kernel",
    "memcpy",
    "memset",
    "gpu_annotation",
    "runtime",
    "driver",
    "cpu_op",
    "user_annotation",
    "python_function",
    "instant",
    "flow",
    "metadata",
    "counter",
    "other",
    # -- parity with torch's key_averages (issue 11): the profiler's own overhead ranges
    "overhead",
)
KIND = pl.Enum(KINDS)
GPU_KINDS: tuple[str, ...] = ("kernel", "memcpy", "memset")
HOST_OP_KINDS: tuple[str, ...] = ("cpu_op", "user_annotation")
# -- parity with torch's key_averages (issue 11) --
#: Host events that are rows of the operator table besides operators, as in torch's table: CUDA/HIP
#: runtime and driver calls, and the profiler's own overhead ranges (``Activity Buffer Request``).
HOST_CALL_KINDS: tuple[str, ...] = ("runtime", "driver", "overhead")

#: The row that holds GPU work no operator in the trace launched.
UNATTRIBUTED = "(unattributed)"
#: The row of the GPU work graph replays launched before the window ran (a replay the window cut at
#: its start, or one queued before it: no operator launched it in the trace, but its graph is
#: known): ``(graph 0 launched before the window)``.
CUT_REPLAY = "(graph {graph} launched before the window)"


def cut_replay_graph(name: str) -> int | None:
    """The graph a :data:`CUT_REPLAY` row name names, or None for any other name."""
    head, tail = "(graph ", " launched before the window)"
    number = name[len(head) : -len(tail)] if name.startswith(head) and name.endswith(tail) else ""
    return int(number) if number.isascii() and number.isdigit() and len(number) <= 9 else None
#: A profiler step annotation, ``ProfilerStep#12``: ASCII digits (``\d`` takes any script's), at
#: most 18 of them (an int64).  Any other ``ProfilerStep#…`` is an ordinary annotation, its name a
#: label: ``ProfilerStep#99999999999999999999`` or ``ProfilerStep#٣`` made every step view fail.
STEP_NAME = r"^ProfilerStep#[0-9]{1,18}$"

# -- counts read from a trace ---------------------------------------------------------------------

#: The most dimensions a shape read from a trace may have (PyTorch allows 64; models use far fewer):
#: a longer "shape" is no shape.
MAX_RANK = 64
#: The largest count a table holds (Int64).
INT64_MAX = 2**63 - 1
#: A count as a trace writes it: 1 to 18 ASCII digits (always below 2^63; never another script's
#: digits, which Python's ``\d`` and ``int()`` would read).  In a pattern: ``([0-9]{1,18})(?![0-9])``.
COUNT_TEXT = r"[0-9]{1,18}(?![0-9])"


def count_of(value: object) -> int | None:
    """A count read from a trace (a batch size, a token count, a dimension), checked once for every
    reader of counts: a text of 1 to 18 ASCII digits, or an int from 0 to 2^63 - 1; anything else
    (more digits, a sign, other scripts' digits, a bool, a float, a count of 2^63 or more) is no
    count: None.  Parsing 4,300 digits, or a count past Int64, is then never attempted."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= INT64_MAX else None
    if isinstance(value, str) and 0 < len(value) <= 18 and value.isascii() and value.isdigit():
        return int(value)
    return None


def checked_sum(parts: list[int | None]) -> int | None:
    """The sum of the counts given (None ones left out); None when none is given or the sum would
    not fit Int64 (a total is never wrapped)."""
    given = [p for p in parts if p is not None]
    if not given:
        return None
    total = sum(given)
    return total if 0 <= total <= INT64_MAX else None


def checked_product(parts: list[int]) -> int | None:
    """The product of counts (an element count from a shape); None when a part is no count or the
    product would not fit Int64.  Stops as soon as it would (a shape of 80,000 huge dimensions costs
    no big-number arithmetic)."""
    if any(count_of(part) is None for part in parts):
        return None
    if 0 in parts:  # an empty dimension anywhere: no elements, however large the others
        return 0
    product = 1
    for part in parts:
        product *= part
        if product > INT64_MAX:
            return None
    return product


def checked_total(column: str) -> pl.Expr:
    """The sum of an Int64 column of counts, null where it would not fit Int64 (Polars' sum wraps)."""
    wide = pl.col(column).cast(pl.Int128).sum()
    return pl.when(wide <= INT64_MAX).then(wide).cast(pl.Int64)


#: The number of a :data:`STEP_NAME`.
STEP_NUMBER = r"#([0-9]{1,18})$"

# -- view frames ------------------------------------------------------------------------------

#: The kernel table: one row per kernel name (or name + launch shape).  ``pct`` is the row's
#: share of all kernel time; the launch shape is the most frequent one, ``shapes`` the count.
KERNEL_COLUMNS: tuple[str, ...] = (
    "name",
    "calls",
    "total_us",
    "mean_us",
    "median_us",
    "min_us",
    "max_us",
    "std_us",
    "pct",
    "grid",
    "block",
    "registers",
    "shared_mem",
    "occupancy",
    "shapes",
)
#: The launch shape that ``--by-shape`` groups by.
SHAPE_KEYS: tuple[str, ...] = ("grid", "block", "registers", "shared_mem")
_KERNEL_TEXT = ("name", "grid", "block")

#: The operator table (+ ``input_dims`` when grouped by shapes).
OPERATOR_COLUMNS: tuple[str, ...] = (
    "name",
    "kind",
    "calls",
    "host_self_us",
    "host_total_us",
    "device_self_us",
    "device_total_us",
)

#: Drill-down from an operator: the GPU work launched under it.
OP_LAUNCH_COLUMNS: tuple[str, ...] = (
    "name",
    "kind",
    "calls",
    "direct_calls",
    "total_us",
    "mean_us",
    "min_us",
    "max_us",
    "pct",
)
#: Drill-down from a kernel: the operator chains and Python stacks that launched it.
KERNEL_LAUNCH_COLUMNS: tuple[str, ...] = (
    "op",
    "op_chain",
    "python_stack",
    "calls",
    "total_us",
    "mean_us",
    "min_us",
    "max_us",
    "pct",
)
#: Joins an operator chain or a Python stack into one cell, outermost first.
CHAIN_SEPARATOR = " > "

# -- memory and modules (issue 15) -----------------------------------------------------------

#: The memory view: one row per allocator event (``[memory]``); ``ts_us`` from the trace's start,
#: ``bytes`` negative for a free, ``allocated_bytes``/``reserved_bytes`` on the device after it,
#: ``addr`` the block's address.
MEMORY_COLUMNS: tuple[str, ...] = (
    "ts_us",
    "device",
    "bytes",
    "allocated_bytes",
    "reserved_bytes",
    "op",
    "python_stack",
    "addr",
)
#: Memory by operator and device: what its calls allocated and freed, the net growth, and
#: ``retained_bytes``: what it allocated that nothing freed before the trace ended.
MEMORY_OP_COLUMNS: tuple[str, ...] = (
    "op",
    "device",
    "allocs",
    "allocated_bytes",
    "frees",
    "freed_bytes",
    "net_bytes",
    "retained_bytes",
)
#: The peak of each device: the highest allocated total, when and where it was first reached.
MEMORY_PEAK_COLUMNS: tuple[str, ...] = (
    "device",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "ts_us",
    "op",
    "python_stack",
    "events",
)
#: GPU time by module (``nn.Module`` frames): ``path`` from the outermost module down.
MODULE_COLUMNS: tuple[str, ...] = (
    "path",
    "module",
    "depth",
    "calls",
    "kernels",
    "self_us",
    "total_us",
    "pct",
    # -- the split by pass (issue 15): forward (launched under the module's frame) and backward
    # (autograd nodes whose forward op ran under it); self_us/total_us are their sums
    "fwd_self_us",
    "fwd_total_us",
    "bwd_self_us",
    "bwd_total_us",
)
#: GPU time by source line (``file.py(123): fn`` frames): self (innermost frame) and total.
SOURCE_COLUMNS: tuple[str, ...] = ("name", "kernels", "self_us", "total_us", "pct")
#: No enclosing module / Python frame when the GPU work was launched.
NO_MODULE = "(no module)"
NO_SOURCE = "(no Python frame)"

# -- critical path ----------------------------------------------------------------------------

#: What an edge on a critical path is bound by, in HTA's names (``data_loading`` is HTA's too: the
#: host time of ``enumerate(DataLoader)`` ranges, counted apart from ``cpu_bound``); see
#: :mod:`profview.analysis.critical_path.path`.
PATH_BOUNDS: tuple[str, ...] = (
    "cpu_bound",
    "data_loading",
    "gpu_compute_bound",
    "gpu_communication_bound",
    "gpu_kernel_kernel_overhead",
    "gpu_kernel_launch_overhead",
)

# -- step categories --------------------------------------------------------------------------

#: Step categories in priority order: an instant belongs to the first one active then.
CATEGORIES: tuple[str, ...] = (
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "prewindow",  # issue 11: GPU work launched before the profiling window
    "runtime",
    "dataloader",
    "cpu_exec",
    "other",
)
CATEGORY_LABELS: dict[str, str] = {
    "kernel": "Kernel",
    "memcpy": "Memcpy",
    "memset": "Memset",
    "communication": "Communication",
    "prewindow": "Before window",
    "runtime": "Runtime",
    "dataloader": "DataLoader",
    "cpu_exec": "CPU Exec",
    "other": "Other",
}
#: Labels for narrow table headers.
SHORT_LABELS: dict[str, str] = {
    "kernel": "Kernel",
    "memcpy": "Memcpy",
    "memset": "Memset",
    "communication": "Comm",
    "prewindow": "Pre",
    "runtime": "Runtime",
    "dataloader": "Data",
    "cpu_exec": "CPU",
    "other": "Other",
}
CATEGORY_STYLE: dict[str, str] = {
    "kernel": "#4c9be8",
    "memcpy": "#e8a33c",
    "memset": "#c97bd6",
    "communication": "#e5534b",
    "prewindow": "#768390",
    "runtime": "#57ab5a",
    "dataloader": "#d4c44a",
    "cpu_exec": "#6cb6c4",
    "other": "#8b949e",
}
#: Distinct fill characters keep stacked bars readable without colour (NO_COLOR).
CATEGORY_CHAR: dict[str, str] = {
    "kernel": "█",
    "memcpy": "▓",
    "memset": "▒",
    "communication": "░",
    "prewindow": "╳",
    "runtime": "▚",
    "dataloader": "▞",
    "cpu_exec": "▪",
    "other": "·",
}
#: The step table: ``step, name, start_us, duration_us`` and one ``*_us`` column per category
#: (exclusive: they add up to ``duration_us``).
STEP_COLUMNS: tuple[str, ...] = ("step", "name", "start_us", "duration_us", *(f"{c}_us" for c in CATEGORIES))

# -- rules ------------------------------------------------------------------------------------


def column_total(frame: pl.DataFrame, column: str) -> float:
    """The sum of a column, summed in sorted order so that it is the same on every run."""
    return float(frame[column].sort().sum() or 0.0) if frame.height else 0.0


def share_pct(column: str, total: float) -> pl.Expr:
    """``column`` as a percentage of ``total``; null where the total is zero (no share of nothing)."""
    if not total:
        return pl.lit(None, dtype=pl.Float64).alias("pct")
    return (pl.col(column) / total * 100.0).alias("pct")


def with_share(frame: pl.DataFrame, column: str = "total_us") -> pl.DataFrame:
    """``frame`` with ``pct``: each row's share of the column's total (the one share rule)."""
    return frame.with_columns(share_pct(column, column_total(frame, column)))


#: SGLang's profiler ranges (``sglang_profiler::rmsnorm_rmsnorm2d_fwd_109``) end in a number that
#: changes from run to run; TraceLens drops it, and so do the tables, so two runs pair.
SGLANG_SUFFIX = r"^(sglang_profiler::.+)_[0-9]{1,18}$"


def display_name(name: pl.Expr) -> pl.Expr:
    """Operator names as tables show them: every ``ProfilerStep#N`` folds into ``ProfilerStep*``, and
    SGLang's ``sglang_profiler::…_<digits>`` loses its volatile number (:data:`SGLANG_SUFFIX`)."""
    return name.str.replace(STEP_NAME, "ProfilerStep*").str.replace(SGLANG_SUFFIX, "${1}")


def conform_kernels(frame: pl.DataFrame) -> pl.DataFrame:
    """A kernel table from a format that knows only some columns: the rest null, in order."""
    missing = [
        pl.lit(None, dtype=pl.String if c in _KERNEL_TEXT else pl.Int64 if c == "calls" else pl.Float64).alias(c)
        for c in KERNEL_COLUMNS
        if c not in frame.columns
    ]
    return frame.with_columns(missing).select(KERNEL_COLUMNS)


#: From this magnitude on a figure is printed in scientific notation: a timestamp of 1e300 in a
#: trace printed a span of 300 digits (issue 35); a real span or count never comes near.
SCIENTIFIC_FROM = 1e12


def fmt_fixed(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, or in scientific notation when it is huge."""
    if abs(value) >= SCIENTIFIC_FROM:
        return f"{value:.3e}"
    return f"{value:.{decimals}f}"


def fmt_share(pct: float, decimals: int = 1) -> str:
    """A share in percent with ``decimals`` decimals, more where rounding would claim all or none:
    ``99.96%`` (never ``100.0%`` for less than all), ``0.02%`` (never ``0.0%`` for some)."""
    text = f"{pct:.{decimals}f}"
    for more in range(decimals + 1, 6):
        rounded = float(text)
        if not (rounded >= 100.0 > pct or rounded == 0.0 < pct):
            break
        text = f"{pct:.{more}f}"
    return text + "%"


def fmt_us(value: float | None) -> str:
    """A duration in µs, in the unit that reads best (3 decimals; ``-`` for none)."""
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{fmt_fixed(value / 1e6, 3)} s"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3f} ms"
    return f"{value:.3f} us"


def span_text(value: float | None) -> str:
    """A trace's span: ``unknown`` where no event has a time (never a span of 0)."""
    return "unknown (no event has a time)" if value is None else fmt_us(value)


def busy_text(pct: float | None) -> str:
    """GPU busy as a share of the span: ``unknown`` where the span is."""
    return "unknown" if pct is None else f"{pct:.1f}%"


# -- the overview -----------------------------------------------------------------------------


@dataclass
class Overview:
    """Whole-trace figures: rank, devices, span, GPU busy and communication time, the average step, hints.

    ``devices``: the devices the trace's GPU work ran on (all of ``deviceProperties`` when its GPU
    events name no device), of ``devices_listed`` in ``deviceProperties``.  ``rank``,
    ``world_size``, ``backend``: from ``distributedInfo`` (None for a single-process trace).
    ``communication_us``: the union of communication kernels (see
    :mod:`profview.analysis.trace.communication`), ``communication_pct`` its share of ``gpu_busy_us``,
    ``collectives`` one ``[backend, collective type or "?", calls, total µs]`` per kind, longest
    first; ``host_collective_us``: the union of host time inside CPU collectives (gloo);
    ``notes``: what the trace lacks or says wrongly and how it was read instead, one line each.
    ``span_us`` and ``gpu_busy_pct`` are None (unknown) when no event of the trace has a time: a
    span of no event is not a span of 0.
    """

    devices: list[str]
    span_us: float | None
    steps: int
    gpu_busy_us: float
    gpu_busy_pct: float | None
    gpu_events: int
    kernel_us: float
    average_step: dict[str, float] = field(default_factory=dict)
    hints: list[str] = field(default_factory=list)
    devices_listed: int = 0
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    communication_us: float = 0.0
    communication_pct: float = 0.0
    collectives: list[tuple[str, str, int, float]] = field(default_factory=list)
    host_collective_us: float = 0.0
    notes: list[str] = field(default_factory=list)


def rank_line(view: Overview) -> str | None:
    """``rank r of N (backend)`` for one rank's trace of a distributed job, else None."""
    if view.rank is None:
        return None
    of = f" of {view.world_size}" if view.world_size is not None else ""
    backend = f" ({view.backend})" if view.backend else ""
    return f"rank {view.rank}{of}{backend}"


def device_note(view: Overview) -> str | None:
    """Why fewer devices are listed than the trace's ``deviceProperties`` holds, if they are."""
    if view.devices_listed > len(view.devices) > 0:
        return f"(the GPU work ran on {len(view.devices)} of the {view.devices_listed} devices the trace lists)"
    return None


def communication_lines(view: Overview) -> list[str]:
    """Communication time on the GPU (share of GPU busy time, by backend and collective) and on the host."""
    lines = []
    if view.communication_us:
        kinds = ", ".join(
            f"{backend} {kind} {fmt_us(total)} ×{calls:,}" for backend, kind, calls, total in view.collectives[:4]
        )
        more = f", … {len(view.collectives) - 4} more" if len(view.collectives) > 4 else ""
        lines.append(
            f"communication {fmt_us(view.communication_us)}, {view.communication_pct:.1f}% of GPU busy time "
            f"({kinds}{more})"
        )
    if view.host_collective_us:
        host = fmt_us(view.host_collective_us)
        lines.append(f"host time in CPU collectives {host} (gloo/mpi work and the calls waiting on it)")
    return lines


# -- what a parser of a text format returns ---------------------------------------------------


@dataclass
class ParsedViews:
    """The views a text format fills, and why the others are missing (parsers → loading).

    ``tables`` maps a view name (``kernels``, ``ops``, ``ops_by_shapes``, ``steps``,
    ``launches``) to its frame; ``missing`` maps a view the format cannot fill to the reason.
    """

    format: str
    tables: dict[str, pl.DataFrame]
    missing: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    run: str | None = None


# -- memory (issue 15) --------------------------------------------------------------------------


def fmt_bytes(value: float | None) -> str:
    """Bytes in binary units: ``512 B``, ``37.5 MiB``, ``3.06 GiB``; ``-`` for none; a sign kept."""
    if value is None:
        return "-"
    sign, size = ("-" if value < 0 else ""), abs(float(value))
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{sign}{size:.0f} {unit}" if unit == "B" else f"{sign}{size:.2f} {unit}"
        size /= 1024
    return f"{sign}{size:.2f} TiB"  # pragma: no cover


def peak_memory_lines(peaks: Any) -> list[str]:
    """One line per device of a memory_peaks frame: the peak allocated, reserved, and where."""
    lines = []
    for row in peaks.iter_rows(named=True):
        lines.append(
            f"peak memory {row['device']}: {fmt_bytes(row['peak_allocated_bytes'])} allocated "
            f"({fmt_bytes(row['peak_reserved_bytes'])} reserved) at {fmt_us(row['ts_us'])} in {row['op']}"
        )
    return lines
