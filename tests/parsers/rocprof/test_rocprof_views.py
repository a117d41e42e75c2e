"""A rocprofv3 run through the commands and the viewer, as a user meets it: summary, export and
query give the kernel table the raw records give (rocprof_witness), and the viewer opens at 80x24."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from pilot import screen_text, wait_loaded
from rocprof_witness import SAMPLE, kernel_witness
from support import run_cli, sample

from profview.tui.app import ProfviewApp


def test_summary_names_the_format_the_device_and_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(SAMPLE)), "--no-cache", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "rocprofv3 JSON"
    assert set(summary["missing"]) == {"launches", "ops"}
    assert run_cli(["summary", str(sample(SAMPLE)), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "(rocprofv3 JSON)" in text and "AMD Instinct MI350X" in text
    assert "no ops view: this rocprofv3 run recorded no HIP API calls" in " ".join(text.split())


def test_export_writes_the_kernel_table_of_the_raw_records(tmp_path: Path) -> None:
    out = tmp_path / "kernels.csv"
    assert run_cli(["export", str(sample(SAMPLE)), "-v", "kernels", "-o", str(out), "--no-cache"]) == 0
    with out.open() as fh:
        rows = {row["name"]: row for row in csv.DictReader(fh)}
    witness = kernel_witness(sample(SAMPLE))
    assert set(rows) == set(witness)
    for name, (count, total_ns, *_rest) in witness.items():
        assert int(rows[name]["calls"]) == count
        assert float(rows[name]["total_us"]) == pytest.approx(total_ns / 1000, rel=1e-9)


def test_query_sees_the_same_kernels(tmp_path: Path) -> None:
    out = tmp_path / "q.csv"
    sql = "SELECT name, calls FROM kernels ORDER BY calls DESC"
    assert run_cli(["query", str(sample(SAMPLE)), "-q", sql, "-o", str(out), "--no-cache"]) == 0
    with out.open() as fh:
        counted = {row["name"]: int(row["calls"]) for row in csv.DictReader(fh)}
    assert counted == {name: w[0] for name, w in kernel_witness(sample(SAMPLE)).items()}


async def test_the_viewer_opens_a_rocprof_run_at_80x24() -> None:
    app = ProfviewApp(str(sample(SAMPLE)), no_cache=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "ncclDevKernel_Generic" in text  # the top kernel, by time
        await pilot.press("7")
        await pilot.pause(0.5)
        # the Timeline's inspector says why no kernel has a launching call, not a guess at it
        assert "no launching call: this rocprofv3 run recorded no HIP" in screen_text(app)
        await pilot.press("q")
