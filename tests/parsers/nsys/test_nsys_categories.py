"""NVTX ranges carry the category Kineto writes for their kind, so the summary does not say that they
were not read; the NCCL domain's ranges keep theirs (``nccl``)."""

from __future__ import annotations

import polars as pl
import pytest
from nsys_witness import connect, export_path
from support import run_cli

import profview


def test_ranges_are_of_known_categories(request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> None:
    request.getfixturevalue("shared_dir")
    path = export_path("nsysai__h100_2gpu_1s.sqlite")
    with connect(path) as db:
        (closed,) = db.execute('SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND "end" IS NOT NULL').fetchone()
    events = profview.load(path, use_cache=False).events
    assert events is not None
    ranges = events.filter(pl.col("kind").is_in(["cpu_op", "user_annotation"]) & (pl.col("ph") == "X"))
    assert ranges.height == closed > 0
    assert (ranges["cat"].cast(pl.String) == ranges["kind"].cast(pl.String)).all()
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    assert "were not read" not in capsys.readouterr().out
