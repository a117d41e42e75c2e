"""Chrome-trace JSON (PyTorch profiler / Kineto, and other tools) → the events frame.

The hot path never builds a Python object per event: msgspec splits the ``traceEvents`` array
into raw byte slices (it validates the JSON but decodes nothing inside an event), the slices are
joined into newline-delimited JSON and Polars' multi-threaded NDJSON reader types the columns.
Any JSON layout works (one event over several lines, one per line, everything on one line),
with the top-level keys in any order.  A document cut short (a killed job) is read up to its last
complete event, with a warning.
"""

from __future__ import annotations

import json
import mmap
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, overload

import msgspec
import polars as pl

from ..errors import ProfviewError
from . import json_repair
from .chunked import BOM, WINDOW_BYTES, Chunked, NotChunkable, read_chunked
from .fast_chrome import FastScan, scan_fast
from .metadata_keys import METADATA_KEYS
from .nesting import refuse_deep_nesting
from .schema import ARG_COLUMNS, EVENT_SCHEMA, NUMBER_OR_TEXT_ARGS, empty_events, kind_expr
from .source import STREAM_CHUNK_BYTES, SourceStream, read_source
from .trace_file import TraceFile

_ANY_DEFAULT: Any = None
_TraceDocument = msgspec.defstruct(
    "_TraceDocument",
    [("traceEvents", list[msgspec.Raw], msgspec.field(default_factory=list))]
    + [(key, Any, _ANY_DEFAULT) for key in METADATA_KEYS],
)
_RAW_LIST = list[msgspec.Raw]


class _Document(Protocol):
    """A decoded ``_TraceDocument`` (``defstruct`` builds the class, so mypy sees only a Struct)."""

    traceEvents: list[msgspec.Raw]


# JSON allows raw newlines only as whitespace, so mapping them to spaces keeps every event valid
# and makes each raw slice one NDJSON line.
_FLATTEN = bytes.maketrans(b"\n\r", b"  ")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')

_ARG_DTYPES: dict[str, pl.DataType] = {key: dtype for _column, keys, dtype in ARG_COLUMNS for key in keys}
# ROCm writes "stream" as text on some events: read it as text and convert, so it is not lost.
for _column, _keys, _dtype in ARG_COLUMNS:
    if _column in NUMBER_OR_TEXT_ARGS:
        _ARG_DTYPES.update(dict.fromkeys(_keys, pl.String()))
_READ_SCHEMA: dict[str, pl.DataType] = {
    "ph": pl.String(),
    "cat": pl.String(),
    "name": pl.String(),
    "pid": pl.String(),
    "tid": pl.String(),
    "ts": pl.Float64(),
    "dur": pl.Float64(),
    "id": pl.Int64(),
    # With ignore_errors a value of the wrong type (an id above int64, say) becomes null without
    # costing the rest of the event.
    "args": pl.Struct(_ARG_DTYPES),
}
#: Events are typed in chunks of about this many bytes, to bound the memory of the NDJSON copy.
CHUNK_BYTES = 16 * 2**20


@dataclass
class ChromeTrace:
    """The events frame and metadata parsed from one Chrome-trace document."""

    events: pl.DataFrame
    metadata: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False


@overload
def flatten_newlines(data: bytearray) -> bytearray: ...


@overload
def flatten_newlines(data: bytes) -> bytes: ...


def flatten_newlines(data: bytes | bytearray) -> bytes | bytearray:
    """Newlines → spaces; a bytearray is changed in place (a slice at a time, no second copy)."""
    if not isinstance(data, bytearray):
        return data.translate(_FLATTEN)
    step = 16 * 2**20
    for start in range(0, len(data), step):
        data[start : start + step] = data[start : start + step].translate(_FLATTEN)
    return data


@refuse_deep_nesting
def parse_chrome_trace(data: bytes | bytearray | mmap.mmap, path: str) -> ChromeTrace:
    """Parse a Chrome-trace document (object with ``traceEvents`` or a bare event array).

    The compiled scanner reads well-formed traces (see :mod:`profview.parsers.fast_chrome`); the
    rest come here.  A ``bytearray`` is modified in place (newlines become spaces) to save a copy.
    Pass the only reference to a large buffer: it is freed as soon as it has been scanned.
    """
    scan = scan_fast(data, METADATA_KEYS)
    if scan is not None:
        del data  # the columns are built after the decompressed trace has gone
        return from_scan(scan, path)
    flat = flatten_newlines(data if isinstance(data, bytes | bytearray) else bytearray(data))
    if flat[:3] == BOM:  # a byte-order mark is no JSON whitespace; editors on Windows write one
        flat = bytearray(flat) if isinstance(flat, bytes) else flat
        flat[:3] = b"   "
    warnings: list[str] = []
    truncated = False
    metadata: dict[str, Any] = {}
    start = _first_byte(flat)
    if start not in (b"[", b"{"):
        raise ProfviewError(path, "not JSON: a Chrome trace starts with '{' or '['")
    try:
        raw_events, metadata = _decode(flat, start, path)
        if start == b"{" and flat.count(b'"traceEvents"') > 1:
            raw_events = _every_event_array(flat, raw_events, warnings)
    except msgspec.DecodeError as exc:
        document_end = _trailing_from(str(exc))
        if document_end is not None:  # one complete document, then junk or a second document
            try:
                raw_events, metadata = _decode(flat[:document_end], start, path)
                warnings.append(f"ignored {len(flat) - document_end:,} bytes after the end of the JSON document")
                events = _checked(events_from_raw(raw_events, path), path, False, warnings)
                return ChromeTrace(events, metadata, warnings, False)
            except msgspec.DecodeError:
                pass
        repaired = _repaired(flat, warnings, str(exc))
        try:
            if repaired is None:
                raise exc
            raw_events, metadata = _decode(repaired, start, path)
        except msgspec.DecodeError:
            raw_events, metadata, problem = _recover_prefix(repaired or flat, path, str(exc))
            truncated = True
            warnings.append(f"{problem}; read {len(raw_events):,} complete events up to the cut")
    events = _checked(events_from_raw(raw_events, path), path, truncated, warnings)
    return ChromeTrace(events, metadata, warnings, truncated)


def from_scan(scan: FastScan, path: str) -> ChromeTrace:
    """The trace the compiled scanner read (whole or in chunks)."""
    events, warnings = scan.frame(), []
    if scan.truncated:
        warnings.append(f"the trace is truncated; read {events.height:,} complete events up to the cut")
    events = _checked(events, path, scan.truncated, warnings)
    return ChromeTrace(events, _valid_metadata(scan.metadata), warnings, scan.truncated)


def read_chrome(
    file: TraceFile, *, chunk_bytes: int = STREAM_CHUNK_BYTES, window_bytes: int = WINDOW_BYTES
) -> ChromeTrace:
    """The trace of a Chrome-trace file as :func:`read_trace_file` left it: scanned, whole, or to read.

    Without the compiled scanner the general reader reads the file in chunks (the same answer as
    reading it whole: where it cannot promise that, it reads it whole).  The source's warnings
    (a damaged gzip stream) are added to ``file.warnings``.
    """
    if file.scan is not None:
        scan, file.scan = file.scan, None
        return from_scan(scan, file.path)
    if file.source is None:
        stream = SourceStream(file.path, chunk_bytes)
        reader = _RawWindows(file.path)
        try:
            trace = reader.finish(read_chunked(stream.chunks(), reader, window_bytes))
            file.warnings += stream.warnings
            return trace
        except (NotChunkable, RecursionError):  # deep nesting: parse_chrome_trace refuses it in one line
            file.source = read_source(file.path)
    source, file.source = file.source, None
    file.warnings += source.warnings
    return parse_chrome_trace(source.release(), file.path)


class _RawWindows:
    """The general reader as the window reader of :func:`read_chunked`: each window's complete
    events as raw slices, typed by Polars' NDJSON reader; the document's end read as a document."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.frames: list[pl.DataFrame] = []
        self.count = 0
        self.surrogates = False  # a surrogate escape was read: a cut document's repair would touch it

    def __call__(self, window: bytearray, start: int) -> int:
        flatten_newlines_from(window, start)
        limit = len(window)
        for _ in range(_BRACE_TRIES):
            brace = window.rfind(b"}", start, limit)
            if brace < 0:
                return start
            comma = _SPACE.match(window, brace + 1).end()  # type: ignore[union-attr]
            if window[comma : comma + 1] != b",":  # not followed by another element (yet)
                limit = brace
                continue
            text = b"[" + window[start : brace + 1] + b"]"
            try:
                raw = msgspec.json.decode(text, type=_RAW_LIST)
            except msgspec.DecodeError as exc:
                where = _ERROR_BYTE.search(str(exc))
                if where is not None and int(where.group(1)) < len(text) - 1:
                    raise NotChunkable(str(exc)) from None  # invalid before the guess: the whole reader explains
                limit = brace  # the brace closes something inside the next event, or sits in a string
                continue
            self.surrogates = self.surrogates or json_repair.has_surrogate_escape(text)
            self.frames.append(events_from_raw(raw, self.path, strict=True))
            self.count += len(raw)
            return comma + 1
        return start

    def finish(self, chunked: Chunked) -> ChromeTrace:
        """The whole trace: the windows' events, then the document's end (NotChunkable: read it whole)."""
        flat = flatten_newlines(chunked.rest_document())
        if flat[:3] == BOM:
            flat[:3] = b"   "
        start = _first_byte(flat)
        warnings: list[str] = []
        truncated = False
        try:
            raw_events, metadata = _decode(flat, start, self.path)
            if start == b"{" and flat.count(b'"traceEvents"') > 1:
                raise NotChunkable("a second traceEvents key")
        except ProfviewError as exc:
            raise NotChunkable(str(exc)) from None
        except msgspec.DecodeError as exc:
            error = str(exc)
            cut = "truncated" in error.lower() and _trailing_from(error) is None
            if not cut or self.surrogates or _needs_repair_before_recovery(flat, error):
                raise NotChunkable(error) from None  # repairs or recovery over the whole document
            try:
                raw_events, metadata, problem = _recover_prefix(bytes(flat), self.path, error)
            except ProfviewError as refused:
                raise NotChunkable(str(refused)) from None
            truncated = True
            warnings.append(f"{problem}; read {self.count + len(raw_events):,} complete events up to the cut")
        self.frames.append(events_from_raw(raw_events, self.path, strict=True))
        frames, self.frames = self.frames, []
        events = pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]
        events = _checked(events, self.path, truncated, warnings)
        return ChromeTrace(events, metadata, warnings, truncated)


def _needs_repair_before_recovery(flat: bytes | bytearray, error: str) -> bool:
    """Whether the whole reader would repair a cut document before recovering its events."""
    nan = (b"NaN" in flat or b"Infinity" in flat) and _NON_STANDARD_NUMBER.search(flat) is not None
    return nan or json_repair.has_surrogate_escape(flat) or "out of range" in error


def flatten_newlines_from(data: bytearray, start: int) -> None:
    """:func:`flatten_newlines` on ``data[start:]``, in place."""
    data[start:] = data[start:].translate(_FLATTEN)


_SPACE = re.compile(rb"[ \t\r\n]*")

#: NaN / Infinity as Python's json module writes them: not JSON, read as null.
_NON_STANDARD_NUMBER = re.compile(rb"([:,\[]\s*+)(?:-?Infinity|NaN)(?=\s*[,\]}])")


def _every_event_array(flat: bytes | bytearray, last: list[msgspec.Raw], warnings: list[str]) -> list[msgspec.Raw]:
    """The events of every ``traceEvents`` array of a document that repeats the key, in order.

    A JSON decoder keeps only the last of repeated keys; a trace written by two tools (or
    concatenated by hand) would silently lose the first array's events.
    """
    arrays: list[list[msgspec.Raw]] = []
    for match in _EVENTS_KEY.finditer(flat):
        begin = match.end() - 1
        try:
            arrays.append(msgspec.json.decode(flat[begin:], type=_RAW_LIST))
        except msgspec.DecodeError as exc:
            end = _trailing_from(str(exc))
            if end is None:
                return last
            try:
                arrays.append(msgspec.json.decode(flat[begin : begin + end], type=_RAW_LIST))
            except msgspec.DecodeError:
                return last
    if len(arrays) < 2:
        return last
    warnings.append(f"the trace has {len(arrays)} 'traceEvents' arrays; read the events of all of them")
    return [event for array in arrays for event in array]


def _trailing_from(error: str) -> int | None:
    """Where the document ends, when the decode error says that text follows it."""
    match = re.search(r"trailing characters \(byte (\d+)\)", error)
    return int(match.group(1)) - 1 if match else None  # msgspec names the byte after the first extra one


def _repaired(flat: bytes | bytearray, warnings: list[str], error: str) -> bytes | None:
    """``flat`` with NaN/Infinity, lone surrogates and out-of-range numbers made readable, or None.

    Cheap tests come first (a substring, a literal-prefixed pattern), so a trace that is simply
    cut (a killed job) goes on to recovery without a pass of the slow repairs.
    """
    repaired: bytes | bytearray | None = None
    if (b"NaN" in flat or b"Infinity" in flat) and _NON_STANDARD_NUMBER.search(flat):
        repaired = _NON_STANDARD_NUMBER.sub(rb"\1null", flat)
        warnings.append("non-standard NaN/Infinity values were read as missing")
    if json_repair.has_surrogate_escape(repaired or flat) or "out of range" in error:
        repaired, _count = json_repair.repair(repaired or flat)
    return None if repaired is None else bytes(repaired)


def _decode(flat: bytes | bytearray, start: bytes, path: str) -> tuple[list[msgspec.Raw], dict[str, Any]]:
    """(raw events, metadata) of a complete document; DecodeError if it is not valid JSON."""
    try:
        if start == b"[":
            return msgspec.json.decode(flat, type=_RAW_LIST), {}
        doc = cast(_Document, msgspec.json.decode(flat, type=_TraceDocument))
    except msgspec.ValidationError as exc:
        if "out of range" in str(exc) and (repaired := _numbers_in_range(flat)) is not None:
            return _decode(repaired, start, path)  # 1e400 in metadata: a missing value, as in events
        raise ProfviewError(path, f"JSON but not a Chrome trace ({exc})") from None
    except UnicodeDecodeError:  # invalid UTF-8 in a metadata string: replaced, as in event names
        return _decode(bytes(flat).decode("utf-8", "replace").encode(), start, path)
    if not doc.traceEvents and "traceEvents" not in _top_keys(flat):
        raise ProfviewError(path, "JSON object without 'traceEvents': not a Chrome trace")
    return doc.traceEvents, _valid_metadata({k: getattr(doc, k) for k in METADATA_KEYS})


def _numbers_in_range(flat: bytes | bytearray) -> bytes | None:
    """``flat`` with numbers out of range made null (see :mod:`json_repair`), or None when none was."""
    repaired, count = json_repair.repair(flat)
    return repaired if count else None


def _checked(events: pl.DataFrame, path: str, truncated: bool, warnings: list[str]) -> pl.DataFrame:
    """Drop entries that are not events; refuse a trace with none; note suspicious values."""
    is_event = pl.col("ph").is_not_null() | pl.col("cat").is_not_null()
    complete = is_event & (pl.col("ph") == "X")
    implausible = is_event & _implausible_time(complete)
    counts = events.select(
        implausible.sum().alias("implausible"),
        is_event.sum().alias("events"),
        (complete & (pl.col("ts").is_null() | pl.col("dur").is_null())).sum().alias("no_time"),
        (complete & (pl.col("dur") < 0)).sum().alias("negative"),
    ).row(0, named=True)
    if counts["events"] == 0:
        if truncated:
            raise ProfviewError(path, "the trace is cut before its first complete event")
        raise ProfviewError(path, "the trace has no events")
    if counts["events"] < events.height:  # copy only when something must go
        warnings.append(f"skipped {events.height - counts['events']:,} entries of traceEvents that are not events")
        events = events.filter(is_event)
    if counts["implausible"]:  # one answer in every view: the event has no time (as a null ts)
        warnings.append(
            f"{counts['implausible']:,} events with a time past 2^53 µs (285 years, where a microsecond is no "
            "longer exact) were left out of the tables"
        )
        events = events.with_columns(pl.when(implausible).then(None).otherwise(pl.col("ts")).alias("ts"))
    if counts["no_time"]:
        warnings.append(f"{counts['no_time']:,} complete events without a valid ts or dur were left out of the tables")
    if counts["negative"]:
        warnings.append(f"{counts['negative']:,} events with a negative duration were counted as 0")
    # -0 and 0 are one value (both readers give 0.0, as Polars writes it without a sign); the
    # columns are copied only where a -0 is there to change (8 MB of gpt2_train_big's peak)
    signed = events.select(_negative_zero(name).any().alias(name) for name in ("ts", "dur")).row(0, named=True)
    return events.with_columns(
        pl.when(pl.col(name) == 0).then(pl.lit(0.0)).otherwise(pl.col(name)).alias(name)
        for name, has_negative_zero in signed.items()
        if has_negative_zero
    )


#: The largest time (µs) an event may have: past 2^53 a float holds no exact microsecond, so an
#: event's end less its start is no longer its duration (ts 1e300: 1e300 + 40 - 1e300 is 0), and
#: the span, the GPU's busy time and the kernel totals would disagree.
MAX_TIME_US = float(2**53)


def _implausible_time(complete: pl.Expr) -> pl.Expr:
    """Whether an event's ``ts`` (or a complete event's end, or duration) is past :data:`MAX_TIME_US`."""
    ts, dur = pl.col("ts"), pl.col("dur")
    late = ts.abs() > MAX_TIME_US
    long = complete & ((dur > MAX_TIME_US) | ((ts + dur.clip(lower_bound=0)).abs() > MAX_TIME_US))
    return (ts.is_not_null() & (late | long)).fill_null(False)  # no ts: said as an event without time


def _negative_zero(name: str) -> pl.Expr:
    """Whether each zero of the float column ``name`` is -0.0 (1/x is -inf): the zeros alone, so
    that no column as long as the frame is made to find out."""
    zeros = pl.col(name).filter(pl.col(name) == 0)
    return (1.0 / zeros) < 0


def _first_byte(data: bytes | bytearray) -> bytes:
    """The first non-whitespace byte of a document (without copying the document)."""
    match = re.compile(rb"\s*").match(data)
    return bytes(data[match.end() : match.end() + 1]) if match else b""


def _top_keys(flat: bytes | bytearray) -> set[str]:
    try:
        return set(msgspec.json.decode(flat, type=dict[str, msgspec.Raw]))
    except msgspec.MsgspecError:
        return set()


def _recover_prefix(flat: bytes | bytearray, path: str, error: str) -> tuple[list[msgspec.Raw], dict[str, Any], str]:
    """Read the complete events of a document that was cut short (or is broken mid-way)."""
    match = _EVENTS_KEY.search(flat)
    header: bytes | bytearray
    if _first_byte(flat) == b"[":
        header, body = b"", flat[flat.index(b"[") :]
    elif match:
        header, body = flat[: match.start()], flat[match.end() - 1 :]
    else:
        raise ProfviewError(path, f"invalid JSON ({error}) and no 'traceEvents' array found") from None
    events = _longest_valid_prefix(body)
    if events is None:
        raise ProfviewError(path, f"invalid JSON ({error}); no complete event could be read") from None
    kind = "truncated" if "truncated" in error.lower() else f"broken ({error})"
    return events, _header_metadata(header), f"the trace is {kind}"


def _longest_valid_prefix(body: bytes | bytearray) -> list[msgspec.Raw] | None:
    """The events of ``body`` (a JSON array cut anywhere) up to its last complete event.

    Closing braces, from the end, are tried as the end of the last event: the first one that
    makes ``body[:brace + 1] + "]"`` a valid array is exactly the end of the last complete event,
    since a brace inside an unfinished event leaves a string or a bracket open.  A failed try
    whose error names a byte skips every brace after that byte (a damaged byte mid-file costs a
    few tries, not one per later event); after ``_BRACE_TRIES`` tries without success (a cut
    inside a long string full of braces) a linear walk over the array takes over.
    """
    limit = len(body)
    for _ in range(_BRACE_TRIES):
        pos = body.rfind(b"}", 0, limit)
        if pos < 0:
            return [] if body.startswith(b"[") else None
        try:
            return msgspec.json.decode(body[: pos + 1] + b"]", type=_RAW_LIST)
        except msgspec.MsgspecError as exc:
            where = _ERROR_BYTE.search(str(exc))
            limit = min(pos, int(where.group(1))) if where else pos
    return _walk_events(body[:limit])


_BRACE_TRIES = 24
_TEXT_SPACE = re.compile(r"\s*")
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


def _walk_events(body: bytes | bytearray) -> list[msgspec.Raw] | None:
    """The complete elements at the start of a JSON array, one at a time (linear, slower)."""
    if not body.startswith(b"["):
        return None
    text = body.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    events: list[msgspec.Raw] = []
    idx = _after_space(text, 1)
    while idx < len(text):
        try:
            _, end = decoder.raw_decode(text, idx)
        except ValueError:
            break
        if text[idx] == "{":
            events.append(msgspec.Raw(text[idx:end].encode()))
        idx = _after_space(text, end)
        if text[idx : idx + 1] != ",":
            break
        idx = _after_space(text, idx + 1)
    return events


def _after_space(text: str, pos: int) -> int:
    """The first non-whitespace position of ``text`` from ``pos``."""
    match = _TEXT_SPACE.match(text, pos)
    assert match is not None  # ``\s*`` matches, perhaps empty, at every position
    return match.end()


def _header_metadata(header: bytes | bytearray) -> dict[str, Any]:
    """Metadata keys that precede ``traceEvents`` in a document whose end is missing."""
    text = header.rstrip().rstrip(b",")
    if not text.lstrip().startswith(b"{"):
        return {}
    try:
        doc = msgspec.json.decode(text.decode("utf-8", "replace").encode() + b"}")
    except msgspec.MsgspecError:
        return {}
    return _valid_metadata({k: doc.get(k) for k in METADATA_KEYS}) if isinstance(doc, dict) else {}


def _valid_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata without missing values, and without a ``deviceProperties`` that is not a list of objects."""
    devices = metadata.get("deviceProperties")
    if devices is not None and not (isinstance(devices, list) and all(isinstance(d, dict) for d in devices)):
        metadata["deviceProperties"] = None
    return {k: v for k, v in metadata.items() if v is not None}


def events_from_raw(raw_events: list[msgspec.Raw], path: str, *, strict: bool = False) -> pl.DataFrame:
    """Type a list of raw event slices into the events frame, a bounded chunk at a time.

    ``strict``: a chunk that Polars refuses raises NotChunkable instead of being repaired (a
    repair applies to a whole chunk, so only the whole document's chunks give the whole answer).
    """
    if not raw_events:
        return empty_events()
    total = len(raw_events)
    chunks = max(1, -(-_raw_size(raw_events) // CHUNK_BYTES))
    step = -(-total // chunks)
    frames = [_read_chunk(raw_events[i : i + step], path, strict) for i in range(0, total, step)]
    return frames[0] if len(frames) == 1 else pl.concat(frames, rechunk=False)


def _raw_size(raw_events: list[msgspec.Raw]) -> int:
    """Approximate byte size of the events (from a sample, to avoid a loop over all of them)."""
    sample = raw_events[:: max(1, len(raw_events) // 1000)]
    return sum(len(e) for e in sample) * len(raw_events) // len(sample)


def _read_chunk(raw_events: list[msgspec.Raw], path: str, strict: bool = False) -> pl.DataFrame:
    ndjson = b"\n".join(raw_events)
    try:
        raw = pl.read_ndjson(ndjson, schema=_READ_SCHEMA, ignore_errors=True)
    except pl.exceptions.ComputeError as exc:
        if strict:
            raise NotChunkable(str(exc)) from None
        try:  # invalid UTF-8 inside names, numbers out of range: repaired rather than lose the trace
            fixed = ndjson.decode("utf-8", "replace").encode("utf-8")
            if json_repair.needs_repair(fixed):
                fixed = json_repair.repair(fixed)[0]
            raw = pl.read_ndjson(fixed, schema=_READ_SCHEMA, ignore_errors=True)
        except pl.exceptions.PolarsError as exc:
            raise ProfviewError(path, f"events could not be read ({exc})") from None
    return normalise_events(raw)


def normalise_events(raw: pl.DataFrame) -> pl.DataFrame:
    """Raw NDJSON columns → the documented events frame (typed columns, normalised kind)."""
    args = pl.col("args").struct
    columns: list[pl.Expr] = [
        pl.col("ph"),
        pl.col("cat"),
        kind_expr().alias("kind"),
        pl.col("name"),
        pl.col("pid"),
        pl.col("tid"),
        pl.col("ts"),
        pl.col("dur"),
        pl.col("id").alias("flow_id"),
    ]
    for column, keys, dtype in ARG_COLUMNS:
        fields = [args.field(key) for key in keys]
        value = fields[0] if len(fields) == 1 else pl.coalesce(fields)
        columns.append(value.cast(dtype, strict=False).alias(column))
    produced = {"ph", "cat", "kind", "name", "pid", "tid", "ts", "dur", "flow_id"} | {c for c, _k, _d in ARG_COLUMNS}
    return (
        raw.select(columns)
        .with_columns(
            pl.col("name").fill_null(""),
            # External id 0 means "none" in Kineto.
            pl.when(pl.col("external_id") != 0).then(pl.col("external_id")).alias("external_id"),
        )
        .select(
            # A column no Chrome trace writes (``short_name``) is null.
            (pl.col(column) if column in produced else pl.lit(None)).cast(dtype).alias(column)
            for column, dtype in EVENT_SCHEMA.items()
        )
    )
