"""``--step-range REGEX`` wherever a trace is read: ``diff`` (its steps view and its gate), ``query``
and the viewer make the NVTX ranges the regex names an export's steps, as ``summary`` does; each
figure is recomputed from the export with plain ``sqlite3`` (:func:`nsys_witness.saxpy_steps`)."""

from __future__ import annotations

import csv
import io
import shutil
import statistics
from pathlib import Path
from typing import Any

import orjson
import pytest
from nsys_witness import export_path, saxpy_steps
from pilot import screen_text, wait_loaded, wait_until
from support import run_cli

from profview.tui.app import ProfviewApp

SAXPY = export_path("nsys_saxpy_mpi_a100_2022.sqlite")
REGEX = "^saxpy$"


def durations_us() -> list[float]:
    """Each ``saxpy`` step's duration in µs, from the export itself."""
    return [(end - start) / 1000 for start, end in saxpy_steps(SAXPY)]


@pytest.fixture
def after(tmp_path: Path) -> Path:
    """The same export under another name: a diff of two equal sides."""
    copy = tmp_path / "after.sqlite"
    shutil.copy(SAXPY, copy)
    return copy


def test_diff_steps_view_reads_both_sides_with_the_regex(after: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["diff", str(SAXPY), str(after), "--view", "steps", "-o", "-", "--no-cache"]
    assert run_cli([*args, "--step-range", REGEX]) == 0
    rows = {row["name"]: row for row in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    mean = statistics.fmean(durations_us())
    assert float(rows["Step"]["mean_us_before"]) == pytest.approx(mean, abs=1e-3)
    assert float(rows["Step"]["mean_us_after"]) == pytest.approx(mean, abs=1e-3)


def test_the_gate_tests_the_steps_the_regex_names(after: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rule = ["--fail-if", "steps.duration_us > +3%", "--format", "json", "--no-cache"]
    assert run_cli(["diff", str(SAXPY), str(after), *rule, "--step-range", REGEX]) == 0
    report: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    (result,) = report["rules"][0]["results"]
    assert result["samples"] == [len(durations_us())] * 2
    assert result["before"] == pytest.approx(statistics.fmean(durations_us()), abs=1e-3)
    steps = next(check for check in report["comparability"]["checks"] if check["what"] == "steps")
    assert steps["before"] == steps["after"] == str(len(durations_us()))


def test_query_sees_the_steps(capsys: pytest.CaptureFixture[str]) -> None:
    sql = "SELECT step, duration_us FROM steps ORDER BY step"
    assert run_cli(["query", str(SAXPY), "--step-range", REGEX, "-q", sql, "-o", "-", "--no-cache"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(row["step"]) for row in rows] == list(range(len(durations_us())))
    assert [float(row["duration_us"]) for row in rows] == pytest.approx(durations_us(), abs=1e-3)


def test_a_job_or_a_snapshot_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for rank in (0, 1):
        shutil.copy(SAXPY, tmp_path / f"rank{rank}.sqlite")
    assert run_cli(["query", str(tmp_path), "--step-range", REGEX, "-q", "SELECT 1"]) == 2
    assert "--step-range: one Nsight Systems export's option" in capsys.readouterr().err


def test_the_viewer_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from profview.tui import launch

    given: dict[str, Any] = {}
    monkeypatch.setattr(launch, "run", lambda path, **options: given.update(options, path=path) or 0)
    assert run_cli([str(SAXPY), "--step-range", REGEX, "--no-cache"]) == 0
    assert given["step_range"] == REGEX
    assert given["pending"].result().step_numbers() == list(range(len(durations_us())))


async def test_the_viewer_shows_the_steps_at_80x24() -> None:
    app = ProfviewApp(str(SAXPY), no_cache=True, step_range=REGEX)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        assert app.profile is not None
        assert app.profile.step_numbers() == list(range(len(durations_us())))
        await pilot.press("4")  # the Steps tab
        rows = [f"step {n}      {us / 1000:.3f} ms" for n, us in enumerate(durations_us())]
        await wait_until(pilot, lambda: all(row in screen_text(app) for row in rows))
        text = screen_text(app)
        assert all(row in text for row in rows), text
