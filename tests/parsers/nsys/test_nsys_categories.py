"""NVTX ranges carry the category Kineto writes for their kind, so the summary does not say that they
were not read; the NCCL domain's ranges (``ncclCommCount``, ``ncclGroupStart``) are user annotations
read like the others; a record another reader gave a kind of work is read whatever its category."""

from __future__ import annotations

import polars as pl
import pytest
from nsys_witness import connect, export_path
from support import run_cli

import profview
from profview.parsers.schema import unknown_categories

EXPORTS = ["nsysai__h100_2gpu_1s.sqlite", "nsysai__mfu_2gpu_before.sqlite", "nsysai__mfu_2gpu_after.sqlite"]


@pytest.mark.parametrize("name", EXPORTS)
def test_ranges_are_of_known_categories(
    name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    request.getfixturevalue("shared_dir")
    path = export_path(name)
    with connect(path) as db:
        (closed,) = db.execute('SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND "end" IS NOT NULL').fetchone()
        # ranges of a domain other than the default one: NCCL's, where the export has them
        outside = {
            str(text)
            for (text,) in db.execute(
                "SELECT DISTINCT coalesce(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId"
                ' WHERE e.eventType = 59 AND e."end" IS NOT NULL AND e.domainId != 0'
            )
        }
    events = profview.load(path, use_cache=False).events
    assert events is not None
    ranges = events.filter(pl.col("kind").is_in(["cpu_op", "user_annotation"]) & (pl.col("ph") == "X"))
    assert ranges.height == closed > 0
    assert (ranges["cat"].cast(pl.String) == ranges["kind"].cast(pl.String)).all()
    if "mfu" in name:  # the before/after pair records NCCL's own NVTX domain
        assert outside and all(text.startswith("nccl") for text in outside)
        assert outside <= set(ranges["name"].cast(pl.String).to_list())
    assert unknown_categories(events) == (0, [])
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    assert "were not read" not in capsys.readouterr().out
