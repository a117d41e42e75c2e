"""A rocprofv3 run through the commands and the viewer, as a user meets it: summary, export and
query give the kernel table the raw records give (rocprof_witness), and the viewer opens at 80x24."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest
from pilot import screen_text, wait_loaded, wait_until
from rocprof_witness import SAMPLE, SHARED_FILE, document, kernel_witness
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


@pytest.mark.parametrize("shared", (False, True))
def test_dispatches_read_as_kernels_are_not_said_unread(
    shared: bool, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """rocprofv3 names its records' kinds (``KERNEL_DISPATCH``): the dispatches are the kernels the
    summary counts, so no note says they were not read."""
    if shared:
        request.getfixturevalue("shared_dir")
    path = SHARED_FILE if shared else sample(SAMPLE)
    dispatches = sum(len(p["buffer_records"]["kernel_dispatch"]) for p in document(path)["rocprofiler-sdk-tool"])
    assert dispatches > 0
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"({dispatches:,} GPU events)" in text
    assert "were not read" not in text


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
        await wait_until(pilot, lambda: "ncclDevKernel_Generic" in screen_text(app))
        assert "ncclDevKernel_Generic" in screen_text(app)  # the top kernel, by time
        await pilot.press("7")
        unlinked = "no launching call: this rocprofv3 run recorded no HIP"
        await wait_until(pilot, lambda: unlinked in screen_text(app), seconds=30)
        # the Timeline's inspector says why no kernel has a launching call, not a guess at it
        assert unlinked in screen_text(app)
        await pilot.press("q")


def test_diff_and_the_gate_read_two_rocprof_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same run against itself passes the gate; with the dispatches of the busiest steady kernel
    (the most time among those whose calls stay within 2× of each other; the NCCL kernel's calls
    spread 10,000× as they wait on peers) made 50% longer in the raw records, the gate names that
    kernel as the one regression (exit 1).  NCCL has 98.6% of the time and that GEMM 0.033%, so
    the rule tests from 0.01%."""
    doc = json.loads(gzip.decompress(sample(SAMPLE).read_bytes()))
    process = doc["rocprofiler-sdk-tool"][0]
    names = {s["kernel_id"]: s["formatted_kernel_name"] for s in process["kernel_symbols"]}
    witness = kernel_witness(sample(SAMPLE))
    steady = {name: figures for name, figures in witness.items() if figures[0] >= 20 and figures[3] < 2 * figures[2]}
    top = max(steady.items(), key=lambda item: item[1][1])[0]
    for record in process["buffer_records"]["kernel_dispatch"]:
        if names[record["dispatch_info"]["kernel_id"]] == top:
            span = record["end_timestamp"] - record["start_timestamp"]
            record["end_timestamp"] = record["start_timestamp"] + span * 3 // 2
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(doc))
    rule = ["--fail-if", "kernels.total_us > +5%", "--min-share", "0.01", "--no-cache"]
    assert run_cli(["diff", str(sample(SAMPLE)), str(sample(SAMPLE)), *rule]) == 0
    capsys.readouterr()
    assert run_cli(["diff", str(sample(SAMPLE)), str(slower), *rule]) == 1
    regressions = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("regression ")]
    assert len(regressions) == 1 and top[:40] in regressions[0]
