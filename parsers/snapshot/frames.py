"""The documented frames of a memory snapshot, built from its loaded pickle.

**segments** (one row per segment the caching allocator holds, ``segments[i]``):

==================  =======  ==============================================================
column              dtype    meaning
==================  =======  ==============================================================
segment             Int64    the segment's place in the snapshot's ``segments`` list
device              Int64    CUDA device index
address             Int64    the segment's first byte
total_size          Int64    bytes reserved from CUDA (``cudaMalloc``, or mapped when expandable)
allocated_size      Int64    torch's own ``allocated_size`` of the segment (as written)
active_size         Int64    torch's ``active_size`` (as written)
requested_size      Int64    torch's ``requested_size`` (as written)
stream              Int64    the stream the segment was allocated for
segment_type        String   ``large`` or ``small`` pool
pool                String   ``segment_pool_id`` as ``a,b`` (``0,0``: the default pool; others: graphs)
is_expandable       Boolean  an expandable segment (``expandable_segments:True``); null if not said
blocks              Int64    blocks in the segment
==================  =======  ==============================================================

**blocks** (one row per block of a segment, in address order):

==================  =======  ==============================================================
segment, device     Int64    the block's segment and its device
address             Int64    the block's first byte
offset              Int64    bytes from the segment's start
size                Int64    the block's size (a live block: the rounded size it takes)
requested_size      Int64    bytes asked for (``torch.empty(...)``'s size; 0 or ``size`` if not written)
state               String   ``active_allocated``, ``active_pending_free`` (freed by Python, its
                             stream's work not yet done), or ``inactive`` (free)
stack               Int64    the allocation's stack (a row group of **stacks**), null without frames
==================  =======  ==============================================================

**events** (one row per entry of ``device_traces``: the allocator's last N actions per device):

==================  =======  ==============================================================
device              Int64    the trace's device (its place in ``device_traces``)
index               Int64    the entry's place in its device's trace (time order)
action              String   ``alloc``, ``free_requested``, ``free_completed``, ``segment_alloc``,
                             ``segment_free``, ``segment_map``, ``segment_unmap``, ``oom``, ``snapshot``
addr                Int64    the block's (or segment's) address; null where not written
size                Int64    bytes: the requested size of an alloc or free, a segment's size
stream              Int64    the stream
time_us             Int64    microseconds since the epoch; null where not written
device_free         Int64    an ``oom``'s free device memory as CUDA said; null otherwise
stack               Int64    the entry's stack (an alloc's, or a free's: the allocation's), or null
compile_context     String   torch.compile's context, as written (null if none)
user_metadata       String   ``_set_memory_metadata``'s text, as written (null if none)
==================  =======  ==============================================================

**stacks** (one row per frame of each distinct stack, innermost first):

==================  =======  ==============================================================
stack               Int64    the stack's number (shared by every block and event with it)
depth               Int64    0 for the innermost frame
name                String   function (a C++ frame: its symbol)
filename            String   file as written (``??`` for a C++ frame without one)
line                Int64    line number (0 for a C++ frame)
==================  =======  ==============================================================

**annotations** (``external_annotations``: one row per START or END of a ``record_function``
range or optimizer step that torch recorded): ``device`` Int64, ``time_us`` Int64, ``stage``
String (``START``/``END``), ``name`` String.

A text the pickle holds with a lone surrogate (a ``str`` no UTF-8 can hold, which Python's
unpickler makes from such bytes) is read with U+FFFD in its place, as invalid UTF-8 in a trace is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ...errors import ProfviewError

SEGMENT_SCHEMA: dict[str, pl.DataType] = {
    "segment": pl.Int64(), "device": pl.Int64(), "address": pl.Int64(), "total_size": pl.Int64(),
    "allocated_size": pl.Int64(), "active_size": pl.Int64(), "requested_size": pl.Int64(), "stream": pl.Int64(),
    "segment_type": pl.String(), "pool": pl.String(), "is_expandable": pl.Boolean(), "blocks": pl.Int64(),
}
BLOCK_SCHEMA: dict[str, pl.DataType] = {
    "segment": pl.Int64(), "device": pl.Int64(), "address": pl.Int64(), "offset": pl.Int64(), "size": pl.Int64(),
    "requested_size": pl.Int64(), "state": pl.String(), "stack": pl.Int64(),
}
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64(), "index": pl.Int64(), "action": pl.String(), "addr": pl.Int64(), "size": pl.Int64(),
    "stream": pl.Int64(), "time_us": pl.Int64(), "device_free": pl.Int64(), "stack": pl.Int64(),
    "compile_context": pl.String(), "user_metadata": pl.String(),
}
STACK_SCHEMA: dict[str, pl.DataType] = {
    "stack": pl.Int64(), "depth": pl.Int64(), "name": pl.String(), "filename": pl.String(), "line": pl.Int64(),
}
ANNOTATION_SCHEMA: dict[str, pl.DataType] = {
    "device": pl.Int64(), "time_us": pl.Int64(), "stage": pl.String(), "name": pl.String(),
}
#: The block states that hold memory (a block not yet freed).
LIVE_STATES = ("active_allocated", "active_pending_free")


@dataclass
class SnapshotFrames:
    """A memory snapshot as frames (the module docstring documents each), with what it said of the
    allocator's settings and what the file lacks."""

    segments: pl.DataFrame
    blocks: pl.DataFrame
    events: pl.DataFrame
    stacks: pl.DataFrame
    annotations: pl.DataFrame
    settings: dict[str, Any]
    devices: list[int]
    warnings: list[str] = field(default_factory=list)


def is_snapshot(obj: Any) -> bool:
    """Whether a loaded pickle's top level is a memory snapshot: a dict with ``segments`` or
    ``device_traces`` (a list each)."""
    return isinstance(obj, dict) and (
        isinstance(obj.get("segments"), list) or isinstance(obj.get("device_traces"), list)
    ) and all(isinstance(obj.get(key, []), list) for key in ("segments", "device_traces"))


def describe(obj: Any) -> str:
    """What a top level that is not a snapshot is, in a few words."""
    if isinstance(obj, dict):
        keys = ", ".join(repr(k)[:40] for k in list(obj)[:5])
        return f"a dict without 'segments' or 'device_traces' lists (keys: {keys or 'none'})"
    return f"a {type(obj).__name__}, not a dict with 'segments' and 'device_traces'"


class _Stacks:
    """Distinct stacks, numbered as first seen; frames lists (or their frame dicts) shared by the
    pickle's memo are looked up by identity, others by content.  Every list looked up is kept
    alive while the stacks are numbered, so no identity is reused."""

    def __init__(self) -> None:
        self.by_id: dict[int, int] = {}
        self.by_frame_ids: dict[tuple[int, ...], int] = {}
        self.by_content: dict[tuple[tuple[Any, Any, Any], ...], int] = {}
        self.keep: list[Any] = []  # the lists whose id() is a key stay alive while numbered
        self.columns: dict[str, list[Any]] = {name: [] for name in STACK_SCHEMA}

    def number(self, frames: Any, where: str) -> int | None:
        if not frames:
            return None
        known = self.by_id.get(id(frames))
        if known is not None:
            return known
        if not isinstance(frames, list):
            raise ProfviewError(None, f"{where}: 'frames' is a {type(frames).__name__}, not a list")
        same = tuple(map(id, frames))  # the frame dicts a pickle shares through its memo: one tuple of ids
        known = self.by_frame_ids.get(same)
        if known is not None:
            self.by_id[id(frames)] = known
            self.keep.append(frames)
            return known
        try:
            key = tuple((f.get("name"), f.get("filename"), f.get("line")) for f in frames)
        except AttributeError:
            raise ProfviewError(None, f"{where}: a frame is not a dict") from None
        number = self.by_content.get(key)
        if number is None:
            number = len(self.by_content)
            self.by_content[key] = number
            columns = self.columns
            for depth, (name, filename, line) in enumerate(key):
                columns["stack"].append(number)
                columns["depth"].append(depth)
                columns["name"].append(_text(name))
                columns["filename"].append(_text(filename))
                columns["line"].append(line if isinstance(line, int) else None)
        self.by_id[id(frames)] = number
        self.by_frame_ids[same] = number
        self.keep.append(frames)
        return number


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: Any) -> str | None:
    """``value`` as text (None stays None), a lone surrogate as U+FFFD."""
    text = None if value is None else value if isinstance(value, str) else str(value)
    return _SURROGATE.sub("\ufffd", text) if text is not None and _SURROGATE.search(text) else text


def _without_surrogates(data: Any) -> Any:
    """``data`` (lists, dicts, texts) with each lone surrogate of its texts as U+FFFD."""
    if isinstance(data, str):
        return _text(data)
    if isinstance(data, dict):
        return {key: _without_surrogates(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_without_surrogates(value) for value in data]
    return data


def _frame(data: Any, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """``pl.DataFrame(data, schema=schema)``; texts with a lone surrogate (which Polars cannot hold)
    are mended first, only when there are any."""
    try:
        return pl.DataFrame(data, schema=schema)
    except UnicodeEncodeError:
        return pl.DataFrame(_without_surrogates(data), schema=schema)


def _int(value: Any, where: str, key: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProfviewError(None, f"{where}: {key!r} is {type(value).__name__} {str(value)[:40]!r}, not a whole number")
    if not -(2**63) <= value < 2**63:
        raise ProfviewError(None, f"{where}: {key!r} = {value} is out of the 64-bit range")
    return value


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProfviewError(None, f"{where} is a {type(value).__name__}, not a dict")
    return value


def segment_row(segments: dict[str, list[Any]], number: int, seg: dict[str, Any], blocks: int) -> int | None:
    """Append segment ``number`` (its dict, without looking at its blocks, of which it has
    ``blocks``) to the segment columns; its address, the first block's default."""
    where = f"segments[{number}]"
    base = _int(seg.get("address"), where, "address")
    pool = seg.get("segment_pool_id")
    for name, value in (
        ("segment", number), ("device", _int(seg.get("device"), where, "device")), ("address", base),
        ("total_size", _int(seg.get("total_size"), where, "total_size")),
        ("allocated_size", _int(seg.get("allocated_size"), where, "allocated_size")),
        ("active_size", _int(seg.get("active_size"), where, "active_size")),
        ("requested_size", _int(seg.get("requested_size"), where, "requested_size")),
        ("stream", _int(seg.get("stream"), where, "stream")),
        ("segment_type", _text(seg.get("segment_type"))),
        ("pool", ",".join(str(p) for p in pool) if isinstance(pool, list | tuple) else _text(pool)),
        ("is_expandable", seg.get("is_expandable") if isinstance(seg.get("is_expandable"), bool) else None),
        ("blocks", blocks),
    ):
        segments[name].append(value)
    return base


def annotation_columns(snapshot: dict[str, Any]) -> dict[str, list[Any]]:
    """The ``external_annotations`` of a loaded snapshot as columns (:data:`ANNOTATION_SCHEMA`)."""
    annotations: dict[str, list[Any]] = {name: [] for name in ANNOTATION_SCHEMA}
    raw_annotations = snapshot.get("external_annotations") or []
    if isinstance(raw_annotations, list):
        for number, raw in enumerate(raw_annotations):
            where = f"external_annotations[{number}]"
            entry = _dict(raw, where)
            annotations["device"].append(_int(entry.get("device"), where, "device"))
            annotations["time_us"].append(_int(entry.get("time_us"), where, "time_us"))
            annotations["stage"].append(_text(entry.get("stage")))
            annotations["name"].append(_text(entry.get("name")))
    return annotations


NO_TRACES = (
    "no device_traces: the snapshot was taken without _record_memory_history, so there is no timeline, "
    "peak or OOM, only the end state"
)


def _allocation(block: dict[str, Any], where: str) -> tuple[Any, Any]:
    """A block's allocation stack and requested size.  A block without ``frames`` may be of the
    older layout, whose ``history`` lists the allocations made in it, the first one live
    (``frames`` and ``real_size``), as torch's own ``_memory_viz`` reads it."""
    if "frames" in block or "history" not in block:
        return block.get("frames"), block.get("requested_size")
    history = block["history"]
    if not isinstance(history, list):
        raise ProfviewError(None, f"{where}: 'history' is a {type(history).__name__}, not a list")
    if not history:
        return None, block.get("requested_size")
    first = _dict(history[0], f"{where}.history[0]")
    return first.get("frames"), first.get("real_size", block.get("requested_size"))


def snapshot_frames(snapshot: dict[str, Any]) -> SnapshotFrames:
    """The frames of a loaded snapshot (a dict :func:`is_snapshot` accepted); a malformed entry is
    a :class:`ProfviewError` naming it (its path is set by the caller)."""
    stacks = _Stacks()
    segments: dict[str, list[Any]] = {name: [] for name in SEGMENT_SCHEMA}
    blocks: dict[str, list[Any]] = {name: [] for name in BLOCK_SCHEMA}
    for number, raw in enumerate(snapshot.get("segments") or []):
        where = f"segments[{number}]"
        seg = _dict(raw, where)
        _int(seg.get("address"), where, "address")  # named before the blocks, as it always was
        seg_blocks = seg.get("blocks") or []
        if not isinstance(seg_blocks, list):
            raise ProfviewError(None, f"{where}: 'blocks' is not a list")
        base = segment_row(segments, number, seg, len(seg_blocks))
        device = segments["device"][-1]
        address = base
        for index, raw_block in enumerate(seg_blocks):
            bwhere = f"{where}.blocks[{index}]"
            block = _dict(raw_block, bwhere)
            size = _int(block.get("size"), bwhere, "size")
            written = _int(block.get("address"), bwhere, "address")
            at = written if written is not None else _int(address, bwhere, "address (the block before's end)")
            state = _text(block.get("state"))
            frames, asked = _allocation(block, bwhere)
            requested = _int(asked, bwhere, "requested_size")
            blocks["segment"].append(number)
            blocks["device"].append(device)
            blocks["address"].append(at)
            blocks["offset"].append(None if at is None or base is None else _int(at - base, bwhere, "offset"))
            blocks["size"].append(size)
            blocks["requested_size"].append(requested)
            blocks["state"].append(state)
            blocks["stack"].append(stacks.number(frames, bwhere))
            if at is not None and size is not None:
                address = at + size
    parts: list[pl.DataFrame] = []
    traces = snapshot.get("device_traces") or []
    for device, trace in enumerate(traces):
        if not isinstance(trace, list):
            raise ProfviewError(None, f"device_traces[{device}] is not a list")
        parts.append(_trace_frame(device, trace, stacks))
    events = pl.concat(parts) if parts else pl.DataFrame(schema=EVENT_SCHEMA)
    annotations = annotation_columns(snapshot)
    settings = snapshot.get("allocator_settings")
    segment_frame = _frame(segments, SEGMENT_SCHEMA)
    devices = sorted(
        {int(d) for d in segment_frame["device"].drop_nulls().to_list()}
        | {d for d, trace in enumerate(traces) if trace}
    )
    warnings: list[str] = []
    if not traces:
        warnings.append(NO_TRACES)
    return SnapshotFrames(
        segments=segment_frame,
        blocks=_frame(blocks, BLOCK_SCHEMA),
        events=events,
        stacks=_frame(stacks.columns, STACK_SCHEMA),
        annotations=_frame(annotations, ANNOTATION_SCHEMA),
        settings=settings if isinstance(settings, dict) else {},
        devices=devices,
        warnings=warnings,
    )


def _column(trace: list[dict[str, Any]], key: str, device: int) -> pl.Series:
    """One whole-number field of every entry as an Int64 column, checked in one pass by Polars
    (and for bools, which Polars would take as 0 and 1); a bad entry is then found and named by
    the slow path."""
    values = [e.get(key) for e in trace]
    try:
        if bool in set(map(type, values)):
            raise TypeError("a bool")
        return pl.Series(key, values, dtype=pl.Int64(), strict=True)
    except (TypeError, OverflowError, pl.exceptions.PolarsError):
        for index, value in enumerate(values):
            _int(value, f"device_traces[{device}][{index}]", key)
        raise ProfviewError(None, f"device_traces[{device}]: {key!r} is not a whole number everywhere") from None


def _text_column(name: str, values: list[Any], blank: tuple[Any, ...] = ()) -> pl.Series:
    """A text field of every entry as a String column: a value that is not a string is written as
    its ``str``; one of ``blank`` (torch's placeholders) is null."""
    try:
        column = pl.Series(name, values, dtype=pl.String(), strict=True)
    except (TypeError, UnicodeEncodeError, pl.exceptions.PolarsError):
        column = pl.Series(name, [_text(v) for v in values], dtype=pl.String())
    if blank and column.null_count() < column.len():
        column = column.set(column.is_in([str(b) for b in blank if b is not None]), None)  # type: ignore[arg-type]
    return column


def _stack_column(trace: list[dict[str, Any]], stacks: _Stacks, where: str) -> pl.Series:
    """Each entry's stack number: the frames lists are numbered once per distinct list (the
    pickle's memo shares one list between the entries with the same stack), then looked up."""
    frames = [e.get("frames") for e in trace]
    ids = list(map(id, frames))
    numbers = {key: stacks.number(value, where) for key, value in dict(zip(ids, frames, strict=True)).items()}
    return pl.Series("stack", [numbers[key] for key in ids], dtype=pl.Int64())


def _trace_frame(device: int, trace: list[Any], stacks: _Stacks) -> pl.DataFrame:
    """One device's trace entries as event rows (:data:`EVENT_SCHEMA`), built column by column:
    a snapshot of millions of events is read at list-comprehension speed, each column converted
    once."""
    if not all(type(raw) is dict for raw in trace):
        index, raw = next((i, r) for i, r in enumerate(trace) if type(r) is not dict)
        raise ProfviewError(None, f"device_traces[{device}][{index}] is a {type(raw).__name__}, not a dict")
    count = len(trace)
    columns = {
        "device": pl.repeat(device, count, dtype=pl.Int64(), eager=True).alias("device"),
        "index": pl.int_range(count, dtype=pl.Int64(), eager=True).alias("index"),
        "action": _text_column("action", [e.get("action") for e in trace]),
        **{key: _column(trace, key, device) for key in ("addr", "size", "stream", "time_us", "device_free")},
        "stack": _stack_column(trace, stacks, f"device_traces[{device}]"),
        "compile_context": _text_column(
            "compile_context", [e.get("compile_context") for e in trace], blank=(None, "N/A", "")
        ),
        "user_metadata": _text_column("user_metadata", [e.get("user_metadata") for e in trace], blank=(None, "")),
    }
    return pl.DataFrame(columns, schema=EVENT_SCHEMA)
