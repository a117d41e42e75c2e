"""Profiles of tools profview does not read, named from their first bytes so the refusal says
what the file is and what to do (one line, exit 2), instead of "not a recognised profile".

Each is told by what its writer puts first, never by the file's name:

- an XLA/TensorFlow XPlane (``*.xplane.pb``): a protobuf ``XSpace`` whose first field is a
  plane (field 1) whose name (field 2, after an optional id, field 1) is one of the profiler's
  plane names, ``/host:CPU``, ``/device:GPU:0``, ``/device:TPU:0``, ``/host:metadata``, ``Task
  Environment`` (tsl/profiler's ``xplane.proto`` and plane names);
- a Perfetto trace (``*.pftrace``, rocprofv3 ``--output-format pftrace``): a protobuf ``Trace``,
  packets (field 1) one after another, one of the first of which carries
  ``trusted_packet_sequence_id`` (TracePacket field 10, a varint) as every producer's do;
- a PyTorch execution trace (``ExecutionTraceObserver``, Chakra's input): a JSON object that
  starts with ``"schema": "…-chakra…"`` or holds ``"schema"`` and ``"nodes"``;
- a rocmProfileData RPD database (SQLite): its tables, read from the database opened read-only
  (RPD's ``rocpd_api`` and ``rocpd_op``).  A rocprofv3 rocpd database (``rocpd_…`` tables with
  rocprofiler-sdk's names) is told apart here too (:func:`rocpd_kind`), and read by
  :mod:`profview.parsers.rocprof.rocpd`; other SQLite files are not named here (an Nsight Systems
  export is another reader's).

No I/O but the read-only look at an SQLite file's table names, and no Polars: the file reader
calls :func:`refuse_foreign` on the first bytes before Polars is imported.
"""

from __future__ import annotations

import os
import re

from ..errors import ProfviewError

SQLITE_MAGIC = b"SQLite format 3\x00"
#: The plane names tsl/profiler writes (a prefix is enough: ``/device:GPU:3``).
XPLANE_NAMES = (b"/host:", b"/device:", b"Task Environment", b"/host:metadata")
#: Perfetto's TracePacket field that each producer's packets carry.
TRUSTED_PACKET_SEQUENCE_ID = 10
_CHAKRA = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"schema"\s*:\s*"([^"]{0,80})"')
_NODES = re.compile(rb'"nodes"\s*:\s*\[')


def _varint(data: bytes, at: int) -> tuple[int, int] | None:
    """A protobuf varint at ``at``: (value, the position after it), or None if it runs off the data."""
    value = shift = 0
    while at < len(data) and shift < 70:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7
    return None


def _fields(data: bytes, at: int, end: int) -> list[tuple[int, int, int, int]]:
    """The protobuf fields in ``data[at:end]`` as far as they parse whole: (number, wire type,
    start of the value, end of the value) each (a varint's value is its own bytes)."""
    found = []
    while at < end:
        tag = _varint(data, at)
        if tag is None or tag[0] >> 3 == 0:
            break
        number, wire, at = tag[0] >> 3, tag[0] & 7, tag[1]
        if wire == 0:
            value = _varint(data, at)
            if value is None:
                break
            found.append((number, wire, at, value[1]))
            at = value[1]
        elif wire == 2:
            size = _varint(data, at)
            if size is None:
                break
            start, stop = size[1], size[1] + size[0]
            found.append((number, wire, start, stop))
            at = stop
        elif wire in (1, 5):
            stop = at + (8 if wire == 1 else 4)
            found.append((number, wire, at, stop))
            at = stop
        else:
            break
    return found


def xplane_name(head: bytes) -> str | None:
    """The first plane's name of an XPlane ``XSpace``, or None when ``head`` is not one."""
    top = _fields(head, 0, len(head))
    if not top or top[0][:2] != (1, 2):
        return None
    plane = _fields(head, top[0][2], min(top[0][3], len(head)))
    inner = [f for f in plane if f[0] in (1, 2)][:2]
    named = [f for f in inner if f[:2] == (2, 2)]
    if not named or (inner[0][:2] not in ((1, 0), (2, 2))):
        return None
    name = head[named[0][2] : named[0][3]]
    return name.decode("utf-8", "replace") if name.startswith(XPLANE_NAMES) else None


def is_perfetto(head: bytes) -> bool:
    """Whether ``head`` starts a Perfetto ``Trace``: only packets (field 1) at the top, one of the
    first eight holding ``trusted_packet_sequence_id``."""
    top = _fields(head, 0, len(head))
    # Packets only, and to the end of what was read (text that happens to parse a little way does not)
    if not top or any(f[:2] != (1, 2) for f in top) or top[-1][3] < len(head):
        return False
    for _number, _wire, start, stop in top[:8]:
        if any(f[:2] == (TRUSTED_PACKET_SEQUENCE_ID, 0) for f in _fields(head, start, min(stop, len(head)))):
            return True
    return False


def chakra_schema(head: bytes) -> str | None:
    """The ``schema`` of a PyTorch execution trace, or None when ``head`` is not one."""
    found = _CHAKRA.match(head)
    if found is None:
        return None
    schema = found.group(1)
    return schema.decode("utf-8", "replace") if b"chakra" in schema or _NODES.search(head) else None


def sqlite_tables(path: str) -> list[str] | None:
    """The table and view names of an SQLite file, opened read-only; None if it cannot be opened."""
    import sqlite3
    from urllib.parse import quote

    try:
        connection = sqlite3.connect(f"file:{quote(path)}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return None
    try:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    return [str(name) for (name,) in rows]


def rocpd_kind(tables: list[str]) -> str | None:
    """``rocpd`` for rocprofv3's database, ``rpd`` for rocmProfileData's, None for any other."""
    names = set(tables)
    if any(re.match(r"rocpd_(kernel_dispatch|info_agent|info_node|region)", t) for t in names):
        return "rocpd"
    if {"rocpd_api", "rocpd_op"} <= names:
        return "rpd"
    return None


def foreign_problem(path: str, head: bytes, *, compressed: bool = False) -> str | None:
    """What ``head`` (a file's first decompressed bytes) is, when it is a profile of a tool
    profview does not read, and what to do; None otherwise."""
    if head.startswith(SQLITE_MAGIC):
        if compressed or not os.path.isfile(path):  # only a database file on disk can be opened
            return None
        kind = rocpd_kind(sqlite_tables(path) or [])
        if kind == "rpd":
            return (
                "a rocmProfileData (RPD) database, which profview does not read: convert it to a Chrome "
                "trace with rocmProfileData's tools/rpd2tracing.py trace.rpd trace.json"
            )
        return None
    name = xplane_name(head)
    if name is not None:
        return (
            f"an XLA XPlane protobuf (first plane {name!r}), which profview does not read: export a "
            "Chrome trace too, jax.profiler.trace(DIR, create_perfetto_trace=True) writes "
            "perfetto_trace.json.gz beside the .xplane.pb, and profview reads it"
        )
    if is_perfetto(head):
        return (
            "a Perfetto protobuf trace, which profview does not read: profview reads Chrome-trace JSON "
            "(Perfetto's traceconv json FILE OUT.json converts it); from rocprofv3, record with "
            "--output-format json, which profview reads whole"
        )
    schema = chakra_schema(head)
    if schema is not None:
        return (
            f"a PyTorch execution trace (schema {schema}): the operator graph without GPU timings, which "
            "profview does not read; record a Kineto trace with torch.profiler (prof.export_chrome_trace(PATH) "
            "or tensorboard_trace_handler)"
        )
    return None


def refuse_foreign(path: str, head: bytes | bytearray | memoryview, *, compressed: bool = False) -> None:
    """Raise :class:`ProfviewError` naming the format when ``head`` starts a profile of a tool
    profview does not read (:func:`foreign_problem`)."""
    problem = foreign_problem(path, bytes(head[:65536]), compressed=compressed)
    if problem is not None:
        raise ProfviewError(path, problem)
