"""``profview summary DIR`` for a directory of per-rank memory snapshots: a row per rank, the
rank with the highest peak, the rank that ran out of memory first (text or JSON)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import polars as pl

from ..frames import fmt_bytes
from ..jobs.snapshot_job import job_verdict, numbering_note, rank_rows
from .frame_text import frame_lines
from .profile_summary import dump_json

SCHEMA = "profview.memory-snapshot-job/1"


def snapshot_job_document(source: str, paths: list[str]) -> dict[str, Any]:
    """The job's figures: each rank's row and the verdict."""
    rows = rank_rows(paths)
    return {"schema": SCHEMA, "source": source, "ranks": rows, **job_verdict(rows), "rank_note": numbering_note(rows)}


def print_snapshot_job(source: str, paths: list[str], as_json: bool, stream: TextIO | None = None) -> None:
    """The job's summary on stdout."""
    out = stream or sys.stdout
    document = snapshot_job_document(source, paths)
    if as_json:
        out.write(dump_json(document))
        return
    rows = document["ranks"]
    table = pl.DataFrame(
        [
            {
                "rank": r["rank"],
                "reserved": fmt_bytes(r["reserved_bytes"]),
                "allocated": fmt_bytes(r["allocated_bytes"]),
                "peak": fmt_bytes(r["peak_active_bytes"]),
                "ooms": r["ooms"],
                "first_oom_us": r["first_oom_time_us"],
                "file": r["file"],
            }
            for r in rows
        ]
    )
    note = document["rank_note"]
    lines = [f"{source}: {len(rows)} memory snapshots", *([note] if note else []), *frame_lines(table, 120)]
    first = document["first_oom_rank"]
    lines.append(
        "first OOM: "
        + (f"rank {first}" if first is not None else "no rank recorded an OOM event")
        + " (each rank's own clock)"
    )
    lines.append(f"highest peak: rank {document['highest_peak_rank']}")
    out.write("\n".join(lines) + "\n")
