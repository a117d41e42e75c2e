"""A Chrome trace read in bounded chunks: the head, the events in windows, the document's end.

The decompressed document passes through a window of bounded size and is never whole in memory.
The window is cut only between events: the reader (the compiled scanner or the general reader)
takes the complete events at its start and says where the first event it could not finish
begins; that event's bytes (a string, a number or an escape cut by the chunk's end) are carried
into the next window and read again from its '{' with the rest.  The state kept across a chunk
boundary is therefore the events read so far and the bytes of at most one unfinished event.

Three parts of the document are left to the readers' whole-document code, on a small document:

* the **head**, up to the ``[`` of the events (metadata members, a byte-order mark);
* the **end**: the array's last event, the ``]`` and what follows (metadata, a cut, junk) are
  read as ``head + "[" + end``;
* anything the window reader refuses (invalid JSON mid-way, values only the general reader's
  repairs read, a second ``traceEvents`` key) makes :class:`NotChunkable` stop the chunked
  read: the caller reads the whole document instead, so every odd input keeps its answer.

Imports nothing heavy: the compiled scanner's chunked read runs while Polars imports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import msgspec

from ..compiled import compiled_module

#: The compiled module, for its byte search alone (None: Python's search gives the same answer).
_compiled = compiled_module("_fastscan")

#: Bytes of a document's start searched for its ``traceEvents`` key before giving up on chunks.
HEAD_LIMIT = 64 * 2**20
#: A window is read once it holds this many bytes (and again when it has doubled since the last
#: try that found no complete event, so that tiny chunks cost linear time, not quadratic).
WINDOW_BYTES = 8 * 2**20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_SPACE = re.compile(rb"[ \t\r\n]*")
#: The UTF-8 byte-order mark some editors put first.
BOM = b"\xef\xbb\xbf"


def looks_like_chrome_trace(head: bytes) -> bool:
    """Whether the first bytes of a document look like a Chrome trace."""
    text = head.removeprefix(BOM).lstrip()
    return text[:1] == b"[" or (text[:1] == b"{" and b'"traceEvents"' in head) or b'"ph"' in head[:4096]


def may_hold_events_later(head: bytes) -> bool:
    """Whether a document that does not yet look like a Chrome trace might, read further: a JSON
    object whose ``traceEvents`` key may come after other top-level keys (a sorted-keys dump puts
    ``deviceProperties`` first: 64 KiB of it or more hid the events, issue 35)."""
    return head.removeprefix(BOM).lstrip()[:1] == b"{" and b'"traceEvents"' not in head


class NotChunkable(Exception):
    """The document cannot be read in chunks with the same answer: read it whole."""


#: Reads the complete events of ``window[start:]`` (``start`` is an event's '{'); returns where
#: the first unread event begins (``start`` when none could be read yet); raises NotChunkable.
WindowReader = Callable[[bytearray, int], int]


@dataclass
class Chunked:
    """What a chunked read leaves for the whole-document code: the head and the document's end."""

    head: bytes  # the document up to and including the '[' of its events
    end: bytearray  # from the first event not read in a window to the end of the document
    windows: int  # windows read (each handed some events to the reader)

    def rest_document(self) -> bytearray:
        """``head + end``: a complete document of the events not read in windows, with all the metadata."""
        document = bytearray(self.head)
        document += self.end
        self.end = bytearray()
        return document


def read_chunked(chunks: Iterable[bytes], read_window: WindowReader, window_bytes: int = WINDOW_BYTES) -> Chunked:
    """Feed ``chunks`` through a bounded window to ``read_window``; the head and end to the caller.

    A reader that reads any buffer in place (``reads_in_place``: the compiled scanner, which does
    not write to its window) is handed each chunk itself instead of a copy of it appended to the
    window: the window is then only the carried bytes of one unfinished event, finished on a
    short *stitch* (those bytes and the chunk's first :data:`STITCH_BYTES`), and the chunk is read
    from the first event the stitch left.  The same events are read, in the same order, to the
    same window ends: the answer is the one the copying window gives, one copy of the document
    fewer (:func:`_read_in_place`).
    """
    in_place = bool(getattr(read_window, "reads_in_place", False))
    pending = bytearray()
    head: bytes | None = None
    wanted = window_bytes
    windows = 0
    for chunk in chunks:
        if in_place and head is not None and len(pending) + len(chunk) >= wanted:
            pending, read = _read_in_place(pending, chunk, read_window)
            windows += read
            wanted = max(window_bytes, 2 * len(pending))
            continue
        pending += chunk
        if len(pending) < wanted:
            continue
        if head is None:
            at = _events_start(pending)
            if at is None:
                wanted = max(window_bytes, 2 * len(pending))
                continue
            head = bytes(pending[:at])
            del pending[:at]
        start = _SPACE.match(pending).end()  # type: ignore[union-attr]
        if start == len(pending):  # whitespace between events means nothing: keep none of it, so
            pending.clear()  # that a run of it is matched once, not again at every chunk
            continue
        if holds_events_key(pending):  # a second array, or the key in a string: the whole reader decides
            raise NotChunkable("a second traceEvents key")
        used = read_window(pending, start)
        if used > start:
            windows += 1
            del pending[:used]
        wanted = max(window_bytes, 2 * len(pending))  # an unfinished event: try again once it may be whole
    if head is None:  # a document shorter than a window: all of it is its end
        at = _events_start(pending)
        if at is None:
            raise NotChunkable("no traceEvents array found")
        head = bytes(pending[:at])
        del pending[:at]
    return Chunked(head, pending, windows)


#: Bytes of the next chunk put after the carried bytes of an unfinished event to finish it (an
#: event of a real trace is a few hundred bytes; a longer one is read from a copied window).
STITCH_BYTES = 64 * 1024
#: The key whose second appearance (or appearance in a string) only the whole reader answers for.
_EVENTS_KEY_TEXT = b'"traceEvents"'


def _read_in_place(pending: bytearray, chunk: bytes, read_window: WindowReader) -> tuple[bytearray, int]:
    """One window attempt on ``pending + chunk`` without copying ``chunk`` into the window.

    Exactly what :func:`read_chunked`'s copying loop does with the window ``pending + chunk``
    (whitespace skipped, the events key refused, the complete events read, the rest kept), in
    its coordinates: the carried bytes are finished on a stitch, then ``chunk`` is read in place
    from the first event the stitch left.  If the stitch cannot get past the carried bytes (an
    event longer than the stitch), the window is copied as before.  Returns the bytes left (the
    unfinished event, a copy of at most one event) and 1 if any event was read, else 0.
    """
    carried = len(pending)
    start = _SPACE.match(pending).end()  # type: ignore[union-attr]
    if start == carried:
        start = carried + _SPACE.match(chunk).end()  # type: ignore[union-attr]
        if start == carried + len(chunk):  # whitespace only: none of it is kept
            return bytearray(), 0
    if (
        holds_events_key(pending)
        or holds_events_key(pending[-len(_EVENTS_KEY_TEXT) :] + chunk[: len(_EVENTS_KEY_TEXT)])
        or holds_events_key(chunk)
    ):
        raise NotChunkable("a second traceEvents key")
    if start >= carried:  # nothing carried but whitespace: the chunk is the window
        used = carried + _read_chunk(read_window, chunk, start - carried)
    else:
        stitch = pending + chunk[:STITCH_BYTES]
        used = read_window(stitch, start)
        del stitch
        if used > carried:  # the carried event is finished: read on in the chunk itself, from
            # its next event (the stitch may end after an event's ',' or inside the space after it)
            at = _SPACE.match(chunk, used - carried).end()  # type: ignore[union-attr]
            used = carried + (_read_chunk(read_window, chunk, at) if at < len(chunk) else at)
        elif len(chunk) > STITCH_BYTES:  # still inside the carried bytes: the window is copied
            window = pending + chunk
            used = read_window(window, used)
            if used > start:
                del window[:used]
            return window, int(used > start)
    if used <= start:  # nothing read: the window is kept whole, as the copying loop keeps it
        pending += chunk
        return pending, 0
    if used <= carried:
        del pending[:used]
        pending += chunk
        return pending, 1
    return bytearray(memoryview(chunk)[used - carried :]), 1


def _read_chunk(read_window: WindowReader, chunk: bytes, start: int) -> int:
    """``read_window`` on a chunk itself (an in-place reader takes any buffer, bytes included)."""
    return read_window(chunk, start)  # type: ignore[arg-type]


def holds_events_key(data: bytes | bytearray) -> bool:
    """Whether ``"traceEvents"`` occurs in ``data`` (the compiled module's memmem when built: the
    main thread searches every window, and Python's own search took 5 ms per 8 MiB against 3)."""
    if _compiled is not None and hasattr(_compiled, "contains"):
        return bool(_compiled.contains(data, _EVENTS_KEY_TEXT))
    return _EVENTS_KEY_TEXT in data


def _events_start(data: bytearray) -> int | None:
    """Where the events of a document begin (just after their '['), None to read on first.

    A bare array begins at its '['; an object at its top-level ``"traceEvents": [`` (the
    members before it must read as the start of a JSON object).  NotChunkable when the start is
    anything else.
    """
    first = _SPACE.match(data, 3 if data[:3] == BOM else 0).end()  # type: ignore[union-attr]
    if first == len(data):
        if len(data) > HEAD_LIMIT:
            raise NotChunkable("only whitespace")
        return None
    if data[first : first + 1] == b"[":
        return first + 1
    if data[first : first + 1] != b"{":
        raise NotChunkable("not a JSON object or array")
    match = _EVENTS_KEY.search(data)
    if match is None:
        if len(data) > HEAD_LIMIT:
            raise NotChunkable("no traceEvents key near the start")
        return None
    members = bytes(data[first : match.start()]).rstrip(b" \t\r\n")
    try:
        opened = members == b"{" or (
            members.endswith(b",") and isinstance(msgspec.json.decode(members[:-1] + b"}"), dict)
        )
    except (msgspec.DecodeError, UnicodeDecodeError):
        opened = False
    if not opened:  # the key sits inside a string or a nested value
        raise NotChunkable("traceEvents is not a top-level key")
    return match.end()
