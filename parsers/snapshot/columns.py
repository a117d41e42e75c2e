"""A memory snapshot read by the compiled opcode reader (``native/snapshot_reader.c``): the
pickle's events and blocks go straight into columns, with no Python object per entry, and the
frames are built from those columns with the same values as :func:`.frames.snapshot_frames`.

The reader is a fast path only: whatever it does not recognise (an opcode of code, one it does
not implement, a value of a kind the columns do not take, damage) it hands back, and the file
is read by the no-globals unpickler as before, so the answer, or the refusal, is the one that
path gives.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

from ...compiled import compiled_module
from ..source import BASE_MEMORY, GZIP_MAGIC, check_memory
from .frames import (
    ANNOTATION_SCHEMA,
    BLOCK_SCHEMA,
    EVENT_SCHEMA,
    NO_TRACES,
    SEGMENT_SCHEMA,
    STACK_SCHEMA,
    SnapshotFrames,
    annotation_columns,
    segment_row,
)

_reader = compiled_module("_snapshot_reader")
#: Memory a summary needs per byte of an uncompressed pickle read this way (kept at 5 for margin: measured 4.6-5.1x
#: with benchmarks/snapshot_read.py before the nulls-only columns and the walk in NumPy, 2.7-3.0x after).
COLUMN_MEMORY_FACTOR = 5


def available() -> bool:
    """Whether the compiled reader was built and may be used."""
    return _reader is not None


def read_raw(name: str) -> dict[str, Any] | tuple[str, str]:
    """The compiled reader's columns of the snapshot at ``name`` (plain or gzipped), or
    ``("fallback", why)`` where it hands the file back."""
    assert _reader is not None
    with open(name, "rb") as fh:
        gzipped = fh.read(2) == GZIP_MAGIC
        fh.seek(0)
        size = os.fstat(fh.fileno()).st_size
        if gzipped:
            from .unpickle import _CheckedGzip

            check_memory(name, size * 2 + BASE_MEMORY)
            data = _CheckedGzip(name, fh).read()
            return _reader.read(data, False)  # type: ignore[no-any-return]
        check_memory(name, size * COLUMN_MEMORY_FACTOR + BASE_MEMORY)
        if size == 0:
            return ("fallback", "an empty file")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as view:
            return _reader.read(view, True)  # type: ignore[no-any-return]


def _ints(raw: dict[str, Any], name: str, count: int) -> Any:
    """An Int64 column from the reader's values and presence bytes (zero-copy where none is null)."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    present = np.frombuffer(raw.pop(f"{name}_present"), dtype=np.uint8, count=count).astype(bool)
    if count and not present.any():  # all null: a column of nulls holds no values (its pages are never touched)
        raw.pop(name)
        return pl.repeat(None, count, dtype=pl.Int64(), eager=True).alias(name)
    values = np.frombuffer(raw.pop(name), dtype=np.int64, count=count)
    if present.all():
        return pl.Series(name, values, dtype=pl.Int64())
    mask = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pl.Series(name, pl.from_arrow(pa.Array.from_buffers(pa.int64(), count, [mask, pa.py_buffer(values)])))


def _codes(raw: dict[str, Any], name: str, count: int) -> Any:
    """The reader's int32 codes of ``name``, taken out of ``raw`` (its buffer is freed with the codes)."""
    import numpy as np

    return np.frombuffer(raw.pop(name), dtype=np.int32, count=count)


def _texts(name: str, codes: Any, strings: Any, blank: tuple[str, ...] = ()) -> Any:
    """A String column from codes into ``strings`` (-1: null); a text of ``blank`` is null."""
    import polars as pl

    if len(codes) and (codes < 0).all():  # all null: no views written (a column of nulls holds no values)
        return pl.repeat(None, len(codes), dtype=pl.String(), eager=True).alias(name)
    if blank:
        codes = codes.copy()
        for text in blank:
            found = strings.index(text) if text in strings else -1
            if found >= 0:
                codes[codes == found] = -1
    index = pl.Series(codes, dtype=pl.Int32())
    if (codes < 0).any():
        index = index.set(pl.Series(codes < 0), None)  # type: ignore[arg-type]
    return pl.Series(strings, dtype=pl.String()).gather(index).alias(name)


def frames_from_raw(raw: dict[str, Any]) -> SnapshotFrames:
    """The documented frames of the compiled reader's columns: the same values, rows and stack
    numbers :func:`.frames.snapshot_frames` gives for the same pickle."""
    import numpy as np
    import polars as pl

    strings: list[str] = raw["strings"]
    trace_lengths = np.asarray(raw["trace_lengths"], dtype=np.int64)
    block_lengths = np.asarray(raw["block_lengths"], dtype=np.int64)
    n_events = int(trace_lengths.sum())
    n_blocks = int(block_lengths.sum())
    # stacks: numbered as the Python path numbers them, first seen over the blocks then the events
    block_stack = _codes(raw["blocks"], "stack", n_blocks)
    event_stack = _codes(raw["events"], "stack", n_events)
    seen = np.concatenate([block_stack, event_stack])
    seen = seen[seen >= 0]
    distinct, first = np.unique(seen, return_index=True)
    order = distinct[np.argsort(first, kind="stable")]
    renumber = np.full(len(raw["stacks"]) + 1, -1, dtype=np.int64)
    renumber[order] = np.arange(len(order), dtype=np.int64)

    def stack_column(ids: Any) -> Any:
        numbers = renumber[ids]  # -1 indexes the last slot, which stays -1
        column = pl.Series("stack", numbers, dtype=pl.Int64())
        return column.set(pl.Series(numbers < 0), None) if (numbers < 0).any() else column  # type: ignore[arg-type]

    frame_ids = [raw["stacks"][int(s)] for s in order]
    lengths = np.fromiter((len(f) for f in frame_ids), dtype=np.int64, count=len(frame_ids))
    flat = np.fromiter((i for f in frame_ids for i in f), dtype=np.int64, count=int(lengths.sum()))
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    name_codes = np.frombuffer(raw["frame_name"], dtype=np.int32)[flat]
    file_codes = np.frombuffer(raw["frame_filename"], dtype=np.int32)[flat]
    lines = np.frombuffer(raw["frame_line"], dtype=np.int64)[flat]
    has_line = np.frombuffer(raw["frame_has_line"], dtype=np.uint8)[flat].astype(bool)
    line_column = pl.Series("line", lines, dtype=pl.Int64())
    if not has_line.all():
        line_column = line_column.set(pl.Series(~has_line), None)  # type: ignore[arg-type]
    stacks = pl.DataFrame(
        {
            "stack": np.repeat(np.arange(len(order), dtype=np.int64), lengths),
            "depth": np.arange(len(flat), dtype=np.int64) - starts,
            "name": _texts("name", name_codes, strings),
            "filename": _texts("filename", file_codes, strings),
            "line": line_column,
        },
        schema=STACK_SCHEMA,
    )
    # segments: their own fields as the Python path reads them
    segments: dict[str, list[Any]] = {name: [] for name in SEGMENT_SCHEMA}
    bases: list[int | None] = []
    for number, seg in enumerate(raw["segments"]):
        bases.append(segment_row(segments, number, seg, int(block_lengths[number])))
    segment_frame = pl.DataFrame(segments, schema=SEGMENT_SCHEMA)
    # blocks: a block without an address starts where the one before it ended
    braw = raw["blocks"]
    segment_of = np.repeat(np.arange(len(block_lengths), dtype=np.int64), block_lengths)
    address = _ints(braw, "address", n_blocks)
    size = _ints(braw, "size", n_blocks)
    base_column = pl.Series("base", bases, dtype=pl.Int64()).gather(pl.Series(segment_of))
    if address.null_count():
        at: list[int | None] = []
        written, sizes = address.to_list(), size.to_list()
        start = 0
        for number, count in enumerate(block_lengths.tolist()):
            running = bases[number]
            for i in range(start, start + count):
                here = written[i] if written[i] is not None else running
                at.append(here)
                if here is not None and sizes[i] is not None:
                    running = here + sizes[i]
            start += count
        address = pl.Series("address", at, dtype=pl.Int64())
    device_column = (
        segment_frame["device"].gather(pl.Series(segment_of)) if n_blocks else pl.Series([], dtype=pl.Int64())
    )
    blocks = pl.DataFrame(
        {
            "segment": segment_of,
            "device": device_column,
            "address": address,
            "offset": _offsets(address, base_column),
            "size": size,
            "requested_size": _ints(braw, "requested_size", n_blocks),
            "state": _texts("state", _codes(braw, "state", n_blocks), strings),
            "stack": stack_column(block_stack),
        },
        schema=BLOCK_SCHEMA,
    )
    # events
    eraw = raw["events"]
    starts_e = np.repeat(np.cumsum(trace_lengths) - trace_lengths, trace_lengths)
    events = pl.DataFrame(
        {
            "device": np.repeat(np.arange(len(trace_lengths), dtype=np.int64), trace_lengths),
            "index": np.arange(n_events, dtype=np.int64) - starts_e,
            "action": _texts("action", _codes(eraw, "action", n_events), strings),
            **{key: _ints(eraw, key, n_events) for key in ("addr", "size", "stream", "time_us", "device_free")},
            "stack": stack_column(event_stack),
            "compile_context": _texts(
                "compile_context", _codes(eraw, "compile_context", n_events), strings, blank=("N/A", "")
            ),
            "user_metadata": _texts("user_metadata", _codes(eraw, "user_metadata", n_events), strings, blank=("",)),
        },
        schema=EVENT_SCHEMA,
    )
    other = raw["other"]
    annotations = annotation_columns(other)
    settings = other.get("allocator_settings")
    devices = sorted(
        {int(d) for d in segment_frame["device"].drop_nulls().to_list()}
        | {d for d, count in enumerate(trace_lengths.tolist()) if count}
    )
    warnings = [] if len(trace_lengths) else [NO_TRACES]
    return SnapshotFrames(
        segments=segment_frame,
        blocks=blocks,
        events=events,
        stacks=stacks,
        annotations=pl.DataFrame(annotations, schema=ANNOTATION_SCHEMA),
        settings=settings if isinstance(settings, dict) else {},
        devices=devices,
        warnings=warnings,
    )


def _offsets(address: Any, base: Any) -> Any:
    """Each block's bytes from its segment's start (Polars Series); an ``OverflowError`` where one
    is past int64 (Int64 arithmetic would wrap), so that the unpickler's path names the block."""
    import polars as pl

    wide = address.cast(pl.Int128()) - base.cast(pl.Int128())
    if wide.len() and wide.null_count() < wide.len():
        low, high = wide.min(), wide.max()
        if low < -(2**63) or high >= 2**63:  # type: ignore[operator]
            raise OverflowError("a block's offset is past the 64-bit range")
    return wide.cast(pl.Int64()).alias("offset")
