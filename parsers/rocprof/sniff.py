"""Whether a document is rocprofv3's JSON, from its first bytes (no Polars, no decoding: the
reader of a file calls it before Polars is imported)."""

from __future__ import annotations

import re

#: The document's one top-level key: what tells a rocprofv3 JSON file from any other JSON.
TOOL_KEY = "rocprofiler-sdk-tool"
#: A document that starts with the tool's key (after a byte-order mark and white space).
_START = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*\{\s*\"" + re.escape(TOOL_KEY.encode()) + rb"\"\s*:")


def looks_like_rocprof(head: bytes | bytearray | memoryview) -> bool:
    """Whether a document's first bytes are a rocprofv3 JSON document's (its one top-level key)."""
    return _START.match(bytes(head[:4096])) is not None
