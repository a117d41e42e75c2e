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
#: A JSON string (to its closing quote, or to the end of the data when it is cut there), or a run
#: of two or more whitespace bytes outside strings: the run is replaced by its first byte.
_STRING_OR_RUN = re.compile(rb'("[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z))|([ \t\r\n])[ \t\r\n]+', re.DOTALL)
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


def squeeze_space(data: bytearray, start: int) -> None:
    """Each run of whitespace outside strings in ``data[start:]`` becomes its first byte, in place.

    ``start`` must be outside a string (an event's '{', the document's start).  JSON reads the
    same either way, but a run inside an event, between keys, inside ``args`` or after the events'
    ``]`` was held (and copied, and parsed) whole until the event or the document ended: 100 MB
    of spaces there held 280 MB (the compiled scanner) to 750 MB (the general reader).  An
    unterminated string (cut by the data's end) is left as it is, with everything after it.
    """
    if _LONG_SPACE.search(data, start) is None:
        return
    data[start:] = _STRING_OR_RUN.sub(rb"\1\2", data[start:])


#: A run of whitespace long enough to be worth squeezing (pretty-printed indentation is shorter).
_LONG_SPACE = re.compile(rb"[ \t\r\n]{64}")


def starts_as_json(head: bytes | bytearray) -> bool:
    """Whether ``head`` (after a byte-order mark) starts with whitespace, '{' or '[': text that
    :func:`squeeze_space` may squeeze for the format to be decided (binary formats keep their bytes)."""
    return (head[3:4] if head[:3] == BOM else head[:1]) in (b" ", b"\t", b"\r", b"\n", b"{", b"[")


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
    """Feed ``chunks`` through a bounded window to ``read_window``; the head and end to the caller."""
    pending = bytearray()
    head: bytes | None = None
    wanted = window_bytes
    windows = 0
    for chunk in chunks:
        pending += chunk
        if len(pending) < wanted:
            continue
        if head is None:
            at = _events_start(pending)
            if at is None:  # more head to read: whitespace in it is kept as one byte a run
                squeeze_space(pending, 3 if pending[:3] == BOM else 0)
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
        else:  # an unfinished event (or the document's end) filling the window: a whitespace run
            squeeze_space(pending, start)  # in it is held as one byte, not until the event ends
        wanted = max(window_bytes, 2 * len(pending))  # an unfinished event: try again once it may be whole
    if head is None:  # a document shorter than a window: all of it is its end
        at = _events_start(pending)
        if at is None:
            raise NotChunkable("no traceEvents array found")
        head = bytes(pending[:at])
        del pending[:at]
    return Chunked(head, pending, windows)


#: The key whose second appearance (or appearance in a string) only the whole reader answers for.
_EVENTS_KEY_TEXT = b'"traceEvents"'


def holds_events_key(data: bytes | bytearray) -> bool:
    """Whether ``"traceEvents"`` occurs in ``data``: the compiled module's search (memmem, without
    the GIL) when built, else Python's, the same answer.  The reader's thread searches every window
    before the scanner reads it; Python's search took 5.8 ms per 8 MiB of a trace, memmem 3.1 ms."""
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
