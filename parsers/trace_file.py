"""A trace file read for loading: a Chrome trace in chunks, anything else whole.

:func:`read_trace_file` decides from the first decompressed chunk.  A Chrome trace is read in
bounded chunks (:mod:`profview.parsers.chunked`) by the compiled scanner, here, without Polars
(so that the read can run while Polars imports, see :mod:`profview.prefetch`); without the
scanner the general reader reads the chunks later (:func:`profview.parsers.chrome_trace.read_chrome`).
Text formats, pipes, and Chrome traces that only the whole-document code can answer for are read
whole (:func:`profview.parsers.source.read_source`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import chain

from .chunked import WINDOW_BYTES, NotChunkable, looks_like_chrome_trace, read_chunked
from .fast_chrome import ChunkedScan, FastScan, available
from .metadata_keys import METADATA_KEYS
from .source import STREAM_CHUNK_BYTES, SourceBytes, SourceStream, read_source

#: Decompressed bytes that decide the format (as the whole-file reader looked at).
HEAD_BYTES = 65536


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
        return TraceFile(name, looks_like_chrome_trace(bytes(source.data[:HEAD_BYTES])), source=source)
    chunks = stream.chunks()
    head = bytearray()
    for chunk in chunks:  # the format is decided on the first HEAD_BYTES, whatever the chunk size
        head += chunk
        if len(head) >= HEAD_BYTES:
            break
    if not looks_like_chrome_trace(bytes(head[:HEAD_BYTES])):
        chunks.close()
        return TraceFile(name, False, source=read_source(name))
    if not (compiled and available()):
        chunks.close()
        return TraceFile(name, True)
    scanner = ChunkedScan()
    try:
        scan = scanner.finish(read_chunked(chain([bytes(head)], chunks), scanner, window_bytes), METADATA_KEYS)
    except (NotChunkable, RecursionError):  # deep nesting: the whole-document reader refuses it in one line
        scan = None
    finally:
        scanner.close()
        chunks.close()
    if scan is None:  # only the whole-document readers answer for this one
        return TraceFile(name, True, source=read_source(name))
    return TraceFile(name, True, scan=scan, warnings=list(stream.warnings))
