"""Every answer bounded: rows (``top``/``limit`` up to :data:`MAX_ROWS`), bytes (the JSON text of
a table's rows at most :data:`MAX_BYTES`; rows beyond are cut and ``truncated`` says so) and
time (a call that runs past its limit is answered with a one-line error)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from ..errors import ProfviewError

#: The most rows one answer holds, whatever ``top`` or ``limit`` asks.
MAX_ROWS = 10_000
#: The most bytes of JSON one answer's rows take (an agent's context is not a disk).
MAX_BYTES = 1_000_000
#: Seconds a call may run before it is answered with an error (``profview mcp --timeout``).
DEFAULT_TIMEOUT_S = 300.0

def check_count(name: str, value: int | None, default: int) -> int:
    """``value`` (``top``, ``limit``) as a count from 0 to :data:`MAX_ROWS` (``default`` for None)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProfviewError(None, f"{name} must be a whole number from 0 to {MAX_ROWS:,}, not {value!r}")
    return min(value, MAX_ROWS)


def frame_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as the CLI's JSON export writes them (Polars' ``write_json``: NaN as null)."""
    loaded: list[dict[str, Any]] = json.loads(frame.write_json())
    return loaded


def bounded(frame: pl.DataFrame, limit: int, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """``{columns, rows, total_matched, truncated}``: the first ``limit`` rows of ``frame`` (each a
    list in the order of ``columns``), fewer where their JSON passes ``max_bytes``."""
    head = frame.head(limit)
    columns = list(frame.columns)
    rows = [[row.get(c) for c in columns] for row in frame_rows(head)]
    size = len(json.dumps(columns)) + 2
    kept = 0
    for row in rows:
        size += len(json.dumps(row, default=str)) + 2  # and its separator, ", "
        if size > max_bytes:
            break
        kept += 1
    return {
        "columns": columns,
        "rows": rows[:kept],
        "total_matched": frame.height,
        "truncated": kept < frame.height,
    }
