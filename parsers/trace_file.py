"""A trace file read for loading: a Chrome trace in chunks, anything else whole.

:func:`read_trace_file` decides from the first decompressed chunk.  A Chrome trace is read in
bounded chunks (:mod:`profview.parsers.chunked`) by the compiled scanner, here, without Polars
(so that the read can run while Polars imports, see :mod:`profview.prefetch`); without the
scanner the general reader reads the chunks later (:func:`profview.parsers.chrome_trace.read_chrome`).
Text formats, pipes, and Chrome traces that only the whole-document code can answer for are read
whole (:func:`profview.parsers.source.read_source`).

A large plain (not compressed) Chrome trace is not streamed: it is mapped and its event array cut
into ranges that the scanning threads read in place (:func:`_read_mapped`). There is then nothing
to copy: no reading thread copying the file into chunks, no window assembled from them and searched
on the calling thread, which were the read's serial part (0.8 s of a 1 GB trace's 3.3 CPU seconds
on 2 threads; mapped, 0.004 s, benchmarks/parallel_fraction.py). Each range's pages are dropped
from the mapping once scanned, so the process holds a few ranges of the file at a time.
"""

from __future__ import annotations

import mmap
import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from .chunked import (
    BOM,
    HEAD_LIMIT,
    WINDOW_BYTES,
    NotChunkable,
    looks_like_chrome_trace,
    may_hold_events_later,
    read_chunked,
    squeeze_space,
    starts_as_json,
)
from .fast_chrome import ChunkedScan, FastScan, available, scan_fast
from .foreign import refuse_foreign
from .metadata_keys import METADATA_KEYS
from .rocprof.sniff import looks_like_rocprof
from .source import BASE_MEMORY, STREAM_CHUNK_BYTES, SourceBytes, SourceStream, check_memory, memory_factor, read_source

#: Decompressed bytes that decide the format (as the whole-file reader looked at).
HEAD_BYTES = 65536
#: A plain Chrome trace of at least this many bytes is mapped and scanned in place (see the
#: module's note); a smaller one is read in chunks (or in one piece: :func:`_read_small`).
MAP_SCAN_BYTES = 64 * 2**20


@dataclass
class TraceFile:
    """One input file, read as far as can be done without Polars.

    Exactly one of: ``scan`` (a Chrome trace the compiled scanner read in chunks), ``source``
    (the whole content: a text format, a pipe, or a Chrome trace read whole) or neither, with
    ``chrome`` set (a Chrome trace for the general reader to read in chunks).
    """

    path: str
    chrome: bool
    scan: FastScan | None = None
    source: SourceBytes | None = None
    warnings: list[str] = field(default_factory=list)  # the source's (a damaged gzip stream)
    #: Which version of the file was read: its identity, taken by the caller *before* reading
    #: (a cache stores the events only if the file still has it after the parse).
    identity: dict[str, Any] | None = None


def read_trace_file(
    path: str | os.PathLike[str],
    *,
    compiled: bool = True,
    chunk_bytes: int = STREAM_CHUNK_BYTES,
    window_bytes: int = WINDOW_BYTES,
) -> TraceFile:
    """Read ``path``: in chunks with the compiled scanner when it is a Chrome trace and ``compiled``."""
    name = os.fspath(path)
    stream = SourceStream(name, chunk_bytes)
    if stream.whole is not None:  # a pipe or a device: already in memory
        source = stream.whole
        sniffed = bytes(source.data[:HEAD_BYTES])
        refuse_foreign(name, sniffed, compressed=source.compressed)
        if may_hold_events_later(sniffed):
            at = source.data.find(b'"traceEvents"', 0, HEAD_LIMIT)
            sniffed = bytes(source.data[: at + 64]) if at >= 0 else sniffed
        return TraceFile(name, looks_like_chrome_trace(sniffed), source=source)
    if compiled and available() and not stream.compressed and stream.size <= 2 * max(chunk_bytes, window_bytes):
        return _read_small(stream)
    chunks = stream.chunks()
    head = bytearray()
    for chunk in chunks:  # the format is decided on the first HEAD_BYTES, whatever the chunk size
        head += chunk
        if len(head) >= HEAD_BYTES and starts_as_json(head):  # 100 MB of spaces before '{' hid the JSON
            squeeze_space(head, 3 if head[:3] == BOM else 0)
        if len(head) >= HEAD_BYTES:
            break
    refuse_foreign(name, head[:HEAD_BYTES], compressed=stream.compressed)
    # A JSON object whose events come after other keys: read on (up to HEAD_LIMIT) for the key
    # (not a rocprofv3 document: its one key says what it is, and it is read whole).
    if may_hold_events_later(bytes(head[:HEAD_BYTES])) and not looks_like_rocprof(head):
        looked = 0
        squeezed = len(head)
        for chunk in chunks:
            head += chunk
            if len(head) >= 2 * squeezed:  # whitespace runs between the keys held as one byte each
                squeeze_space(head, 0)
                squeezed, looked = max(len(head), HEAD_BYTES), 0
            if head.find(b'"traceEvents"', max(0, looked - 16)) >= 0 or len(head) >= HEAD_LIMIT:
                break
            looked = len(head)
    if not looks_like_chrome_trace(bytes(head[: max(HEAD_BYTES, head.find(b'"traceEvents"') + 64)])):
        chunks.close()
        return TraceFile(name, False, source=read_source(name))
    if not (compiled and available()):
        chunks.close()
        return TraceFile(name, True)
    if not stream.compressed and stream.size >= MAP_SCAN_BYTES:
        chunks.close()
        mapped = _read_mapped(stream)
        if mapped is not None:
            return mapped
        chunks, head = stream.chunks(), bytearray()  # not mappable (a file that shrank, a filesystem
        # without mmap): read in chunks from the start
    scanner = ChunkedScan()
    ahead = ReadAhead(chunks) if chunk_bytes >= READ_AHEAD_MIN_BYTES else chunks  # tiny chunks (tests): inline
    try:
        scan = scanner.finish(read_chunked(chain([bytes(head)], ahead), scanner, window_bytes), METADATA_KEYS)
    except (NotChunkable, RecursionError):  # deep nesting: the whole-document reader refuses it in one line
        scan = None
    finally:
        scanner.close()
        ahead.close()
        chunks.close()
    if scan is None:  # only the whole-document readers answer for this one
        return TraceFile(name, True, source=read_source(name))
    return TraceFile(name, True, scan=scan, warnings=list(stream.warnings))


def _read_mapped(stream: SourceStream) -> TraceFile | None:
    """A large plain Chrome trace (its format decided on its head, as for a chunked read) mapped
    and scanned in place on the scanning threads (:func:`scan_fast`: the ranges, their boundaries
    checked, the document's end and metadata); what the scanner refuses goes to the whole-document
    readers, as from a chunked read.  None: the file cannot be mapped (read it in chunks instead).

    The memory check is the chunked read's at its end (the whole file read); the mapping itself
    holds at most the ranges being scanned (each range's pages are dropped once it is read)."""
    name = stream.path
    check_memory(name, int(stream.size * memory_factor(chunked=True)) + BASE_MEMORY)
    try:
        with open(name, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file (it shrank since it was looked at)
        return None
    try:
        scan = scan_fast(data, METADATA_KEYS)
    except RecursionError:  # deep nesting: the whole-document reader refuses it in one line
        scan = None
    finally:
        data.close()
    if scan is None:
        return TraceFile(name, True, source=read_source(name))
    return TraceFile(name, True, scan=scan)


def _read_small(stream: SourceStream) -> TraceFile:
    """A plain file of at most two windows (a job's rank), read the shortest way: in one piece,
    its events scanned as one range on this thread (:func:`scan_fast` ``one_thread``).

    A chunked read of it would hold about as much at once (a window, then the rest as a document)
    and pay for the read-ahead thread, the scan pool, the window copies and one range per window.
    The format is decided as the chunked read decides it; what the scanner refuses goes to the
    whole-document readers, as there.
    """
    name = stream.path
    stream.chunk_bytes = max(stream.chunk_bytes, stream.size)  # one piece (unless it grew meanwhile)
    data = b"".join(stream.chunks())
    refuse_foreign(name, data[:HEAD_BYTES], compressed=stream.compressed)
    at = data.find(b'"traceEvents"', 0, HEAD_LIMIT)
    if not looks_like_chrome_trace(data[: max(HEAD_BYTES, at + 64)]):
        return TraceFile(name, False, source=read_source(name))
    try:
        scan = scan_fast(data, METADATA_KEYS, one_thread=True)
    except RecursionError:  # deep nesting: the whole-document reader refuses it in one line
        scan = None
    if scan is None:
        return TraceFile(name, True, source=read_source(name))
    return TraceFile(name, True, scan=scan, warnings=list(stream.warnings))


#: Chunks inflated ahead of the scanner (each STREAM_CHUNK_BYTES): the memory bound grows by this
#: many.  One keeps inflating and scanning overlapped; two held 8 MB more at the read's peak (its
#: last window) for no measured gain (gpt2_train_big: 188 MB -> 180 MB, 1.02 s either way).
READ_AHEAD = 1
#: Chunks smaller than this are not worth a thread's hand-over (measured: 0.45 s against 0.50 s
#: for inflating and scanning gpt2_train_big with 8 MiB chunks ahead, on 2 busy cores).
READ_AHEAD_MIN_BYTES = 64 * 1024


class ReadAhead(Iterator[bytes]):
    """``chunks`` produced on a thread, up to :data:`READ_AHEAD` ahead of the consumer.

    ISA-L inflates without the GIL, so the next chunk is inflated while the scanner reads this
    one.  What the producer raises is raised to the consumer; ``close`` stops the producer.
    """

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._queue: queue.Queue[tuple[str, object]] = queue.Queue(READ_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(chunks,), name="profview-inflate", daemon=True)
        self._thread.start()
        self._done = False

    def _produce(self, chunks: Iterator[bytes]) -> None:
        try:
            for chunk in chunks:
                if not self._put(("chunk", chunk)):
                    return
            self._put(("end", None))
        except BaseException as exc:  # handed to the consumer
            self._put(("error", exc))

    def _put(self, item: tuple[str, object]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __next__(self) -> bytes:
        if self._done:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "chunk":
            return value  # type: ignore[return-value]
        self._done = True
        if kind == "error":
            raise value  # type: ignore[misc]
        raise StopIteration

    def close(self) -> None:
        """Stop the producer (a read that ended early) and wait for it."""
        self._stop.set()
        self._thread.join()
