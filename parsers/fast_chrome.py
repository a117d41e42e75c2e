"""The fast path for Chrome-trace JSON: the compiled scanner (``native/fastscan.c``) on threads.

The ``traceEvents`` array is cut into byte ranges at guessed event boundaries; each range is
scanned on its own thread (the scanner holds no GIL) into typed column buffers, and the buffers of
all ranges become one frame.  A range counts only if it starts exactly where the range before it
stopped, so a wrong guess (a ``}, {`` inside a string) is caught and the rest is scanned in one
piece.  A document that ends inside the array (a killed job) keeps its complete events.

:func:`scan_fast` returns None whenever the scanner cannot promise the general reader's result
(invalid JSON, NaN, a value it does not render itself, no compiled module): the caller then
uses :mod:`profview.parsers.chrome_trace`'s reader, which handles every case.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, cast

import msgspec

from ..compiled import compiled_module
from .chunked import Chunked, NotChunkable
from .resources import give_back_freed_memory, scan_threads

if TYPE_CHECKING:
    import polars as pl

# NumPy and Polars are imported only to build the frame: a chunked scan (ChunkedScan) runs
# while they import (profview.prefetch).
_fastscan = compiled_module("_fastscan")  # None: the general reader does the work

#: What the scanner reads: any contiguous buffer (the C functions take ``y*``).
Buffer = bytes | bytearray | mmap.mmap


class _Scanner(Protocol):
    """The compiled module's functions (``native/fastscan.c``)."""

    def scan_events(self, data: Buffer, start: int, stop: int, final: bool = True, /) -> tuple[Any, ...]: ...

    def next_event(self, data: Buffer, pos: int, stop: int, /) -> int: ...

    def members(self, data: Buffer, pos: int, opening: bool, /) -> tuple[list[tuple[str, int, int]], int]: ...

    def arrow_column(self, column: object, format: str, length: int, /) -> tuple[object, object]: ...


def _scanner() -> _Scanner:
    """The compiled scanner; callers ask :func:`available` first, so its absence here is a bug."""
    if _fastscan is None:
        raise RuntimeError("profview._fastscan is not built or PROFVIEW_PURE_PYTHON is set: check available()")
    return cast(_Scanner, _fastscan)


#: Largest and smallest bytes per scanned range: about four ranges per thread in between, so
#: that many cores share even a mid-sized trace; ranges run on :func:`scan_threads` threads.
RANGE_BYTES = 32 * 2**20
MIN_RANGE_BYTES = 4 * 2**20
INT_NULL = -(2**63)


def available() -> bool:
    """Whether the compiled scanner was built."""
    return _fastscan is not None


#: Threads that build the frame's columns from the scanned ranges (at most; fewer CPUs, fewer).
#: Each column is Polars work on Polars' own threads: on a 16-core node, with 16 builders a read
#: of gpt2_train_big peaked at 244 MB, with 4 at 199 MB, in the same time (benchmarks/threads.py).
COLUMN_THREADS = 4


@dataclass
class FastScan:
    """A trace read by the scanner: its ranges (column buffers) and metadata."""

    parts: list[Scanned]
    metadata: dict[str, Any]
    truncated: bool = False  # the data ends inside the event array: the events before the cut
    #: Read on the calling thread alone (a small trace): its columns are built there too.
    one_thread: bool = False

    def frame(self) -> pl.DataFrame:
        """The events frame (one chunk per column); the range buffers are released on the way."""
        parts, self.parts = self.parts, []
        return _frame(parts, self.one_thread)


def scan_fast(
    data: bytes | bytearray | mmap.mmap, metadata_keys: Sequence[str], *, one_thread: bool = False
) -> FastScan | None:
    """The scanned events and metadata of a well-formed trace, or None to use the general reader.

    ``one_thread``: scan the events as one range on this thread and build the frame here too (a
    small trace, e.g. a job's rank: a thread pool's start and hand-overs cost more than they save,
    and every range costs the frame its own pieces of every column).
    """
    if _fastscan is None:
        return None
    try:
        return _parse(data, metadata_keys, one_thread=one_thread)
    except (ValueError, UnicodeDecodeError, msgspec.MsgspecError):
        return None


def _parse(
    data: bytes | bytearray | mmap.mmap,
    metadata_keys: Sequence[str],
    cut_may_be_empty: bool = False,
    one_thread: bool = False,
) -> FastScan | None:
    """Find the event array (top-level object members before and after it), scan it, read metadata.

    ``cut_may_be_empty``: ``data`` is the end of a chunked read whose windows held events, so a cut
    before its first event is still a trace cut after those events.  ``one_thread``: see
    :func:`scan_fast`.
    """
    start = _skip_space(data, 0)
    members: list[tuple[str, int, int]] = []
    if data[start : start + 1] == b"[":
        array = start
    else:
        members, array = _scanner().members(data, start, True)
        if array < 0 or data[array : array + 1] != b"[":
            return None
    first = _skip_space(data, array + 1)
    if cut_may_be_empty and first == len(data):  # the windows read every event up to the cut and
        # the comma after the last of them: the document ends there (a file cut after "}, ")
        return FastScan([], _metadata(data, members, metadata_keys), truncated=True, one_thread=one_thread)
    if data[first : first + 1] != b"{":
        return None  # empty, or not an array of objects: the general reader explains
    parts, after = _scan_array(data, first, one_thread)
    truncated = parts[-1].cut  # a cut file (a killed job): the complete events, the metadata before them
    if truncated:
        if not cut_may_be_empty and not any(part.rows for part in parts):
            return None  # nothing before the cut: the general reader says so
    elif array == start:
        if _skip_space(data, after) != len(data):
            return None
    else:
        rest, again = _scanner().members(data, after, False)
        if again >= 0:
            return None  # a second traceEvents key
        members += rest
    return FastScan(parts, _metadata(data, members, metadata_keys), truncated, one_thread)


def _metadata(data: Buffer, members: list[tuple[str, int, int]], metadata_keys: Sequence[str]) -> dict[str, Any]:
    """The values of the top-level members that are metadata keys."""
    return {key: msgspec.json.decode(data[lo:hi]) for key, lo, hi in members if key in metadata_keys}


class ChunkedScan:
    """The compiled scanner as the window reader of :func:`profview.parsers.chunked.read_chunked`.

    Each window's complete events are scanned on threads (ranges at guessed event boundaries, as
    for a whole document) and kept as column buffers; ``finish`` reads the document's end.
    """

    def __init__(self) -> None:
        self.parts: list[Scanned] = []
        self._pool: Executor | None = None

    def __call__(self, window: bytearray, start: int) -> int:
        try:
            parts, after = _scan_window(window, start, self._threads())
        except ValueError as exc:
            raise NotChunkable(str(exc)) from None
        self.parts += parts
        return after

    def _threads(self) -> Executor | None:
        if self._pool is None and scan_threads() > 1:
            self._pool = ThreadPoolExecutor(scan_threads(), thread_name_prefix="profview-scan")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def finish(self, chunked: Chunked, metadata_keys: Sequence[str]) -> FastScan | None:
        """The whole trace: the windows' events, then the document's end read as a document."""
        self.close()
        try:
            end = _parse(chunked.rest_document(), metadata_keys, cut_may_be_empty=any(p.rows for p in self.parts))
        except (ValueError, UnicodeDecodeError, msgspec.MsgspecError):
            return None  # as scan_fast: the general reader answers for the whole document
        if end is None:
            return None
        parts, self.parts = [*self.parts, *end.parts], []
        return FastScan(parts, end.metadata, end.truncated)


def _scan_window(window: bytearray, start: int, pool: Executor | None) -> tuple[list[Scanned], int]:
    """The complete events of ``window`` from ``start`` (ranges on ``pool``), and where the rest begins."""
    size = len(window)
    starts = [start]
    if pool is not None:
        step = max(MIN_RANGE_BYTES // 4, (size - start) // scan_threads())
        while len(starts) < scan_threads() and (guess := _scanner().next_event(window, starts[-1] + step, size)) >= 0:
            starts.append(guess)
    stops = [*starts[1:], size]
    if pool is None or len(starts) == 1:  # no pool: only one range was guessed
        results: Iterable[Scanned | ValueError] = [_scan_chunk(window, start, size)]
    else:
        results = pool.map(_scan_chunk, [window] * len(starts), starts, stops)
    parts: list[Scanned] = []
    expected = start
    for begin, result in zip(starts, results, strict=True):
        if begin != expected or isinstance(result, ValueError) or (parts and parts[-1].cut):
            continue  # a wrong guess, or past the cut: read on from the last confirmed boundary
        parts.append(result)
        expected = result.after
    while not (parts and parts[-1].cut) and expected < size:
        result = _scan_chunk(window, expected, size)
        if isinstance(result, ValueError):
            raise result
        parts.append(result)
        expected = result.after
    return parts, expected


def _scan_chunk(window: bytearray, start: int, stop: int) -> Scanned | ValueError:
    """One range of a window (not the document's end: the scan stops where the window may cut)."""
    try:
        return Scanned(*_scanner().scan_events(window, start, stop, False))
    except ValueError as exc:
        return exc


class Scanned(NamedTuple):
    """What the scanner read from one range: buffers per column (see native/fastscan.c)."""

    rows: int
    after: int
    ended: bool
    cut: bool
    floats: dict[str, Any]
    ints: dict[str, Any]
    texts: dict[str, tuple[Any, list[str | None]]]


_SPACE = re.compile(rb"[ \t\r\n]*")


def _skip_space(data: bytes | bytearray | mmap.mmap, pos: int) -> int:
    """The first non-whitespace position from ``pos`` (a UTF-8 byte-order mark first counts as space)."""
    if pos == 0 and data[:3] == b"\xef\xbb\xbf":
        pos = 3
    match = _SPACE.match(data, pos)
    return match.end() if match else pos


def _scan_array(
    data: bytes | bytearray | mmap.mmap, first: int, one_thread: bool = False
) -> tuple[list[Scanned], int]:
    """The ranges of events from ``first`` to the array's end, and the byte after its ']'
    (``one_thread``: one range, scanned on this thread)."""
    if one_thread:
        return _join(data, [first], [_scan_range(data, first, len(data))])
    threads = scan_threads()
    step = min(RANGE_BYTES, max(MIN_RANGE_BYTES, (len(data) - first) // (4 * threads)))
    starts = [first]
    while (guess := _scanner().next_event(data, starts[-1] + step, len(data))) >= 0:
        starts.append(guess)
    stops = [*starts[1:], len(data)]
    if threads == 1 or len(starts) == 1:
        return _join(data, starts, (_scan_range(data, lo, hi) for lo, hi in zip(starts, stops, strict=True)))
    pool = ThreadPoolExecutor(min(threads, len(starts)), thread_name_prefix="profview-scan")
    try:
        return _join(data, starts, pool.map(_scan_range, [data] * len(starts), starts, stops))
    finally:  # on Ctrl+C (or an error) the ranges not yet started are dropped, not scanned
        pool.shutdown(wait=True, cancel_futures=True)


def _scan_range(data: bytes | bytearray | mmap.mmap, start: int, stop: int) -> Scanned | ValueError:
    try:
        scanned = Scanned(*_scanner().scan_events(data, start, stop))
    except ValueError as exc:  # maybe only a wrong guess of where this range starts
        return exc
    if isinstance(data, mmap.mmap):  # a mapped file: its scanned pages can go (they re-read if needed)
        first, last = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE, scanned.after // mmap.PAGESIZE * mmap.PAGESIZE
        if last > first:
            data.madvise(mmap.MADV_DONTNEED, first, last - first)
    return scanned


def _join(data: Buffer, starts: list[int], results: Iterable[Scanned | ValueError]) -> tuple[list[Scanned], int]:
    """Keep ranges while each starts where the one before stopped; scan the rest in one piece."""
    parts: list[Scanned] = []
    expected = starts[0]
    for start, result in zip(starts, results, strict=False):  # results may stop early
        if start != expected or isinstance(result, ValueError):
            break
        parts.append(result)
        if result.ended or result.cut:
            return parts, result.after
        expected = result.after
    while True:  # the rest, from the last confirmed boundary, without guessing
        result = _scan_range(data, expected, len(data))
        if isinstance(result, ValueError):
            raise result
        parts.append(result)
        if result.ended or result.cut:
            return parts, result.after
        expected = result.after


#: What a column builder of :func:`_frame` gives: a column, a constant, or several of them.
Built: TypeAlias = "pl.Series | pl.Expr | list[pl.Series | pl.Expr]"


def _frame(parts: list[Scanned], one_thread: bool = False) -> pl.DataFrame:
    """One frame (one chunk per column) with the events-frame columns, from the scanned ranges.

    Columns are built on threads (Polars works without the GIL); each releases its range buffers
    once built.  A column with no value at all is a constant null column, which costs no memory.
    ``one_thread`` (a small trace): the columns are built on this thread, and the freed buffers
    given back once at the end rather than after each column.
    """
    import polars as pl

    from .schema import EVENT_SCHEMA

    rows = sum(part.rows for part in parts)
    columns: dict[str, pl.Series] = {}
    # the kinds first, on a builder's thread like the other columns (their Python per range was the
    # frame's serial part), then ph and cat, whose codes the kinds read (_kinds leaves them as Series)
    builders: list[Callable[[], Built]] = [partial(_kind_columns, parts, rows)]
    builders += [partial(_text_column, parts, name, rows) for name in parts[0].texts if name not in ("ph", "cat")]
    builders += [partial(_number_column, parts, "floats", name, rows) for name in parts[0].floats]
    builders += [partial(_number_column, parts, "ints", name, rows) for name in parts[0].ints]
    constants: list[pl.Expr] = []
    threads = min(scan_threads(), COLUMN_THREADS)
    pool = None if one_thread else ThreadPoolExecutor(threads, thread_name_prefix="profview-columns")
    built = (build() for build in builders) if pool is None else pool.map(_built_and_trimmed, builders)
    try:
        for made in built:
            for column in made if isinstance(made, list) else [made]:
                if isinstance(column, pl.Series):
                    columns[column.name] = column
                else:
                    constants.append(column)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    give_back_freed_memory()
    named = {column.meta.output_name() for column in constants}
    # A column no Chrome trace writes (``short_name``): a null constant, no memory.
    constants += [
        _constant(None, dtype, name) for name, dtype in EVENT_SCHEMA.items() if name not in {*columns, *named}
    ]
    frame = pl.DataFrame([columns[name] for name in EVENT_SCHEMA if name in columns])
    return frame.with_columns(constants).select(list(EVENT_SCHEMA)) if constants else frame


def _built_and_trimmed(build: Callable[[], Built]) -> Built:
    """A column (or columns) built; the range buffers released go back to the system, not to the peak."""
    column = build()
    give_back_freed_memory()
    return column


def _kind_columns(parts: list[Scanned], rows: int) -> list[pl.Series | pl.Expr]:
    """The ``kind`` column (:func:`_kinds` per range, each (ph, cat) pair's kind found once for the
    trace), then the ``ph`` and ``cat`` columns, made from the codes the kinds read."""
    import polars as pl

    known: dict[tuple[str | None, str | None], str | None] = {}  # the kind of each (ph, cat) seen
    kind = pl.concat([_kinds(part, known) for part in parts], rechunk=True)
    return [kind, _text_column(parts, "ph", rows), _text_column(parts, "cat", rows)]


def _text_column(parts: list[Scanned], name: str, rows: int) -> pl.Series | pl.Expr:
    """A text column: the ranges' codes, shifted onto one list of their uniques, gathered."""
    import polars as pl

    from .schema import EVENT_SCHEMA

    dtype = EVENT_SCHEMA[name]  # String or Categorical: the gather copies 16 or 4 bytes a row
    missing = "" if name == "name" else None  # an event without a name has the empty name
    if all(part.texts[name][0] is None for part in parts):  # no range has a value
        for part in parts:
            del part.texts[name]
        return _constant(missing, dtype, name)
    codes: list[pl.Series] = []
    uniques: list[str | None] = []
    for part in parts:
        buffer, values = part.texts.pop(name)
        # a range without a value: every row is code 0, the missing value
        scanned = _buffer_series(buffer, "I", part.rows, pl.UInt32)
        codes.append(scanned + len(uniques) if uniques else scanned)
        uniques += [missing, *values[1:]]
    return pl.Series(name, uniques, dtype=dtype).gather(pl.concat(codes, rechunk=True))


def _number_column(parts: list[Scanned], group: str, name: str, rows: int) -> pl.Series | pl.Expr:
    """A float64 or int64 column, with the scanner's null markers (NaN, INT64_MIN) as nulls."""
    import polars as pl

    dtype = pl.Float64 if group == "floats" else pl.Int64
    if all(getattr(part, group)[name] is None for part in parts):  # no range has a value
        for part in parts:
            del getattr(part, group)[name]
        return _constant(None, dtype, name)
    null = float("nan") if group == "floats" else INT_NULL
    pieces = [
        _buffer_series(getattr(part, group).pop(name), "d" if group == "floats" else "q", part.rows, dtype, null)
        for part in parts
    ]
    values = pl.concat(pieces, rechunk=True).alias(name)
    del pieces
    if group == "floats":
        return values.fill_nan(None)
    is_null = values == INT_NULL
    return values.set(is_null, None) if is_null.any() else values


def _buffer_series(buffer: Any, code: str, rows: int, dtype: type[pl.DataType], missing: float | None = 0) -> pl.Series:
    """The first ``rows`` values of a scanner column (``I`` uint32, ``q`` int64, ``d`` float64) as
    a Series, without NumPy (not imported for a read: 13 MB of RSS): the column's buffer is handed
    to Polars as an Arrow array, without a copy (the column is left empty).  ``missing``
    throughout where the range has no column."""
    import polars as pl

    if isinstance(buffer, pl.Series):  # made already (_kinds reads ph and cat first)
        return buffer
    if buffer is None:
        return pl.repeat(missing, rows, dtype=dtype, eager=True)
    if not hasattr(_fastscan, "arrow_column"):  # a module built before it (reinstall): copied
        return pl.Series(memoryview(buffer).cast("B").cast(code)[:rows], dtype=dtype)  # type: ignore[call-overload]
    return pl.Series(_ArrowColumn(_scanner().arrow_column(buffer, _ARROW_FORMATS[code], rows)))


#: Arrow C data interface formats of the scanner's column types.
_ARROW_FORMATS = {"I": "I", "q": "l", "d": "g"}


class _ArrowColumn:
    """A scanner column as an Arrow array (the Arrow PyCapsule interface, which ``pl.Series`` takes)."""

    def __init__(self, capsules: tuple[object, object]) -> None:
        self._capsules = capsules

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        return self._capsules


def _constant(value: str | None, dtype: pl.DataType | type[pl.DataType], name: str) -> pl.Expr:
    """A column with one value throughout, as a constant: no buffer of one value per row.

    ``pl.repeat`` would reserve the buffers of a full column (address space that ``ulimit -v``
    counts: 0.9 GB for the 17 empty columns of a 3-million-event trace).
    """
    import polars as pl

    return pl.lit(value, dtype=dtype).alias(name)


#: (ph, cat) pairs of uniques up to which every pair is looked up (a real trace has a few dozen
#: ph values and categories); beyond, only the pairs the rows hold are.
KIND_PAIRS_CROSS = 1 << 16
#: Pairs of uniques up to which a range's pairs are taken from the kinds already found for the
#: ranges before it (``known``), so that kind_expr runs once per new pair, not once per range.
KIND_PAIRS_KNOWN = 1 << 12


def _kinds(part: Scanned, known: dict[tuple[str | None, str | None], str | None]) -> pl.Series:
    """The ``kind`` column of a range: :func:`kind_expr` on each (ph, cat) pair of uniques, by code.

    Every pair of uniques while there are few; else only the pairs present (3,000 distinct ``ph``
    and ``cat`` values in a 300 KB file made 9 million pairs: 1.1 GB, where the rows hold 3,000).
    The ranges of one trace hold the same few pairs: each pair's kind is found once, in ``known``
    (kind_expr per range cost 1.3 ms of the main thread for each of gpt2_train_big's 42 ranges).
    """
    import polars as pl

    from ..frames import KIND
    from .schema import kind_expr

    ph_codes, ph_uniques = part.texts["ph"]
    cat_codes, cat_uniques = part.texts["cat"]
    # a range without a value in the column: code 0 (null) throughout; the codes stay for the columns
    ph_series = _buffer_series(ph_codes, "I", part.rows, pl.UInt32)
    cat_series = _buffer_series(cat_codes, "I", part.rows, pl.UInt32)
    part.texts["ph"], part.texts["cat"] = (ph_series, ph_uniques), (cat_series, cat_uniques)
    index = ph_series.cast(pl.Int64) * len(cat_uniques) + cat_series
    if len(ph_uniques) * len(cat_uniques) <= KIND_PAIRS_KNOWN:
        pairs = [(ph, cat) for ph in ph_uniques for cat in cat_uniques]  # pair number ph code * width + cat code
        new = list(dict.fromkeys(pair for pair in pairs if pair not in known))
        if new and len(known) + len(new) > KIND_PAIRS_CROSS:  # hostile input: new pairs in every
            known.clear()  # range: the pairs held go, this range's are found again (the same answer)
            new = list(dict.fromkeys(pairs))
        if new:
            found = pl.DataFrame(
                {"ph": [ph for ph, _cat in new], "cat": [cat for _ph, cat in new]},
                schema={"ph": pl.String, "cat": pl.String},
            ).select(kind_expr().alias("kind"))["kind"]
            known.update(zip(new, found.to_list(), strict=True))
        return pl.Series("kind", [known[pair] for pair in pairs], dtype=KIND).gather(index)
    if len(ph_uniques) * len(cat_uniques) <= KIND_PAIRS_CROSS:
        every_pair = pl.int_range(len(ph_uniques) * len(cat_uniques), eager=True)
        return _pair_kinds(ph_uniques, cat_uniques, every_pair).gather(index)
    present = index.unique()
    kinds = _pair_kinds(ph_uniques, cat_uniques, present)
    mapped: pl.Series = index.replace_strict(present, kinds, return_dtype=kinds.dtype)
    return mapped.alias("kind")


def _pair_kinds(ph_uniques: list[str | None], cat_uniques: list[str | None], pairs: pl.Series) -> pl.Series:
    """:func:`kind_expr` of each pair number (``ph code * len(cat_uniques) + cat code``)."""
    import polars as pl

    from .schema import kind_expr

    width = len(cat_uniques)
    frame = pl.DataFrame(
        {
            "ph": pl.Series(ph_uniques, dtype=pl.String).gather(pairs // width),
            "cat": pl.Series(cat_uniques, dtype=pl.String).gather(pairs % width),
        }
    )
    return frame.select(kind_expr().alias("kind"))["kind"]
