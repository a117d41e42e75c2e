"""A directory of per-rank memory snapshots (``profview runs/oom/``, ``summary``, ``export``): each
rank's totals, peak and OOMs, the rank with the highest peak and the rank that ran out of memory first.

The snapshots are read one at a time (each released before the next), so the job needs the
memory of its largest snapshot, not of all of them.
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl

from ..errors import ProfviewError
from ..parsers.snapshot.reader import looks_like_snapshot
from ..profiles.snapshot_profile import load_snapshot
from .inputs import rank_from_name

#: The job's one view (``export DIR -o ranks.csv``, the viewer's table): one row per rank.
RANKS_SCHEMA: dict[str, pl.DataType] = {
    "rank": pl.Int64(),
    "peak_active_bytes": pl.Int64(),
    "ooms": pl.Int64(),
    "first_oom_time_us": pl.Int64(),
    "first_oom": pl.Boolean(),
    "highest_peak": pl.Boolean(),
    "reserved_bytes": pl.Int64(),
    "allocated_bytes": pl.Int64(),
    "peak_time_us": pl.Int64(),
    "first_oom_requested_bytes": pl.Int64(),
    "top_site_at_peak": pl.String(),
    "file": pl.String(),
    "rank_from": pl.String(),
}
SNAPSHOT_JOB_VIEWS = {
    "ranks": "one per rank's snapshot: totals, peak, OOMs, and which rank peaked highest and ran out of memory first"
}


def snapshot_directory(path: str) -> list[str] | None:
    """The memory snapshots directly in the directory ``path`` (by content), or None when it is not a
    directory or holds none (then it is a job of traces, or nothing profview reads)."""
    if not os.path.isdir(path):
        return None
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    found = [os.path.join(path, n) for n in names if looks_like_snapshot(os.path.join(path, n))]
    return found or None


def rank_rows(paths: list[str]) -> list[dict[str, Any]]:
    """One row per snapshot: its rank (from its name, else its place), file, totals, peak and
    first OOM (time and size asked; null without one)."""
    rows = []
    for place, path in enumerate(paths):
        profile = load_snapshot(path)
        figures = profile.summary(1)
        first_oom = min(figures["oom_events"], key=lambda o: (o["time_us"] is None, o["time_us"] or 0), default=None)
        peak = max(
            (d for d in figures["devices"] if d["peak_active_bytes"] is not None),
            key=lambda d: d["peak_active_bytes"],
            default=None,
        )
        named = rank_from_name(path)
        rows.append(
            {
                "rank": named if named is not None else place,
                "rank_from": "file name" if named is not None else "file order",
                "file": os.path.basename(path),
                "reserved_bytes": figures["reserved_bytes"],
                "allocated_bytes": figures["allocated_bytes"],
                "peak_active_bytes": peak["peak_active_bytes"] if peak else None,
                "peak_time_us": peak["peak_time_us"] if peak else None,
                "ooms": figures["ooms"],
                "first_oom_time_us": first_oom["time_us"] if first_oom else None,
                "first_oom_requested_bytes": first_oom["requested_bytes"] if first_oom else None,
                "top_site_at_peak": figures["top_sites_at_peak"][0]["site"] if figures["top_sites_at_peak"] else None,
            }
        )
        del profile
    ranks = [r["rank"] for r in rows]
    if len(set(ranks)) != len(ranks):
        raise ProfviewError(None, "two snapshots of the directory name the same rank: name each file with its rank")
    return sorted(rows, key=lambda r: r["rank"])


def numbering_note(rows: list[dict[str, Any]]) -> str | None:
    """One line where some rank is numbered by its file's place in name order (its name gives no
    rank, and a snapshot records none), so that no view passes the place off as a rank."""
    placed = sum(r["rank_from"] == "file order" for r in rows)
    if not placed:
        return None
    which = "no file name gives a rank" if placed == len(rows) else f"{placed} of {len(rows)} file names give no rank"
    return f"ranks numbered by file-name order ({which})"


def job_verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rank with the highest peak and the rank whose OOM came first (by its own clock: time_us
    is microseconds since the epoch on each rank's host), or None where no rank recorded one."""
    peaks = [r for r in rows if r["peak_active_bytes"] is not None]
    ooms = [r for r in rows if r["first_oom_time_us"] is not None]
    return {
        "highest_peak_rank": max(peaks, key=lambda r: r["peak_active_bytes"])["rank"] if peaks else None,
        "first_oom_rank": min(ooms, key=lambda r: r["first_oom_time_us"])["rank"] if ooms else None,
    }


def ranks_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """The rows of :func:`rank_rows` as the ``ranks`` view (:data:`RANKS_SCHEMA`), the verdict of
    :func:`job_verdict` marked on its ranks (``highest_peak``, ``first_oom``)."""
    verdict = job_verdict(rows)
    return pl.DataFrame(
        [
            {
                **row,
                "highest_peak": row["rank"] == verdict["highest_peak_rank"],
                "first_oom": row["rank"] == verdict["first_oom_rank"],
            }
            for row in rows
        ],
        schema=RANKS_SCHEMA,
    )
