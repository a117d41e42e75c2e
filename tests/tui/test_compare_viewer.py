"""The viewer in compare mode (``profview diff BEFORE AFTER``): tabs, header, glyphs, drill-down
into either side, export; figures checked against the raw events (see test_diff)."""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text
from rich.text import Text
from support import ROOT
from witness import AFTER, BEFORE, raw_kernels

from profview.tui.app import ProfviewApp
from profview.tui.compare.screen import CompareScreen
from profview.tui.dialogs.export import ExportDialog
from profview.tui.drill.screen import DrillScreen

BEFORE_REL = "samples/hta_diff_control_a100.json.gz"  # relative: the same screen on every machine
AFTER_REL = "samples/hta_diff_test_v100.json.gz"


def compare_app(**options: object) -> ProfviewApp:
    return ProfviewApp(str(BEFORE), no_cache=True, compare={"after": str(AFTER), **options})


async def wait_compare(pilot, app: ProfviewApp) -> CompareScreen:  # type: ignore[no-untyped-def]
    for _ in range(400):
        if isinstance(app.screen, CompareScreen):
            break
        await pilot.pause(0.05)
    await pilot.pause()
    assert isinstance(app.screen, CompareScreen), f"the comparison did not load ({app.error})"
    return app.screen


async def test_compare_tabs_header_and_glyphs() -> None:
    app = compare_app()
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await wait_compare(pilot, app)
        text = screen_text(app)
        # file names, not paths, one line each (issue 22)
        assert f"BEFORE  {BEFORE.name} · 6 steps · span 465.275 ms" in text
        assert f"AFTER   {AFTER.name} · 6 steps · span 745.341 ms" in text
        view = app.frame_view()
        assert view is not None and view.view == "diff_kernels"
        before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
        assert view.displayed.height == len(before.keys() | after.keys())
        top = view.displayed.row(0, named=True)  # the biggest change first, witnessed by the raw events
        assert top["name"] not in before and top["total_us_after"] == after[top["name"]][1] == 60134
        assert top["change"] == "▲ new"
        glyphs = dict(zip(view.displayed["status"], view.displayed["change"], strict=False))
        assert glyphs == {"added": "▲ new", "removed": "▼ gone", "increased": "▲", "decreased": "▼", "unchanged": "="}
        assert "▲ new" in text and "▼ gone" in text  # glyphs, not only colour (NO_COLOR)
        cell = view.table._get_cell_renderable(0, 0)  # type: ignore[union-attr]
        assert isinstance(cell, Text) and cell.plain == "▲ new" and "red" in str(cell.style)
        await pilot.press("2")
        assert screen.pane == "ops" and app.frame_view().view == "diff_ops"  # type: ignore[union-attr]
        await pilot.press("tab")
        assert screen.pane == "steps"
        steps = app.frame_view().displayed  # type: ignore[union-attr]
        assert steps["name"].to_list()[0] == "Step" and round(steps["mean_us_after"][0] / 1e3, 1) == 124.2
        await pilot.press("enter")  # the mean step has no drill-down: a note, no screen
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("tab")
        assert screen.pane == "moved"
        moved = app.frame_view().displayed  # type: ignore[union-attr]
        assert moved.drop("change", "status").select(screen.comparison.moved().columns).equals(
            screen.comparison.moved()
        )
        assert set(moved.filter(pl.col("op") == "aten::mm")["change"]) <= {"▲", "▼"}
        await pilot.press("enter")  # issue 34: a moved row drills into the aligned calls it sums, both sides
        for _ in range(100):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen)
        first = moved.row(0, named=True)
        steps = [screen.comparison.representative_step(w) for w in ("before", "after")]
        kernels = f"{first['kernels_before']} → {first['kernels_after']}"
        assert app.screen.path == [f"Moved · step {steps[0]} vs {steps[1]}", f"op {first['op']}: {kernels}"]
        assert app.screen.frame_view().displayed.height == first["calls"]
        await pilot.press("escape")
        await pilot.press("tab")
        assert screen.pane == "phases"  # training runs: one phase, "unknown" (no serving annotation)
        await pilot.press("tab")
        assert screen.pane == "kernels"


async def test_w_drills_into_either_side_alone() -> None:
    app = compare_app()
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_compare(pilot, app)
        view = app.frame_view()
        assert view is not None
        names = view.displayed["name"].to_list()
        both = names.index("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")
        await pilot.press("w")  # both sides → AFTER only
        await pilot.press(*["down"] * both, "enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.path[0] == "AFTER Kernels"
        comparison = screen.comparison
        after = comparison.after.kernel_launches(names[both])
        assert app.screen.frame.equals(after) and after["calls"].sum() == raw_kernels(AFTER)[names[both]][0]
        await pilot.press("escape")
        await pilot.press("w", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.path[0] == "BEFORE Kernels"
        assert app.screen.frame["calls"].sum() == raw_kernels(BEFORE)[names[both]][0] == 18
        await pilot.press("enter")  # deeper: the launching operator, still on the BEFORE side
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.path[0] == "BEFORE Kernels"
        assert app.screen.view == "op_launches"
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.press("g", "enter")  # an added row drills into AFTER even with BEFORE chosen
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.path[0] == "AFTER Kernels"


async def test_export_from_compare_mode(tmp_path: Path) -> None:
    app = compare_app(match="normalized")
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_compare(pilot, app)
        await pilot.press("slash", *"sgemm", "enter", "e")
        await pilot.pause()
        assert isinstance(app.screen, ExportDialog)
        target = tmp_path / "cmp.csv"
        app.screen.query_one("Input").value = str(target)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
        rows = list(csv.DictReader(target.open()))
        before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
        assert rows and all("sgemm" in r["name"].lower() for r in rows)
        for r in rows:
            b = before.get(r["name"], (0, 0))[1] if r["status"] != "added" else 0
            a = after.get(r["name_after"], (0, 0))[1] if r["status"] != "removed" else 0
            assert float(r["delta_us"]) == a - b
        assert {r["match_rule"] for r in rows} >= {"arch", "unmatched"}


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_compare_layout(snap_compare, in_repo) -> None:  # type: ignore[no-untyped-def]
    async def loaded(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_compare(pilot, pilot.app)

    app = ProfviewApp(BEFORE_REL, no_cache=True, compare={"after": AFTER_REL})
    assert snap_compare(app, terminal_size=(80, 24), run_before=loaded)


def test_compare_steps_layout(snap_compare, in_repo) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_compare(pilot, pilot.app)
        await pilot.press("3")

    app = ProfviewApp(BEFORE_REL, no_cache=True, compare={"after": AFTER_REL})
    assert snap_compare(app, terminal_size=(80, 24), run_before=steps)


def test_compare_drill_down_layout(snap_compare, in_repo) -> None:  # type: ignore[no-untyped-def]
    """A kernel's launch paths on both sides at 80x24: the change and the delta first."""

    async def drill(pilot) -> None:  # type: ignore[no-untyped-def]
        await wait_compare(pilot, pilot.app)
        await pilot.press("down", "enter")
        for _ in range(100):
            if isinstance(pilot.app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        await pilot.pause()

    app = ProfviewApp(BEFORE_REL, no_cache=True, compare={"after": AFTER_REL})
    assert snap_compare(app, terminal_size=(80, 24), run_before=drill)


async def test_hostile_names_are_inert_in_compare_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel name with escape sequences and markup, on one side only: shown as text everywhere."""
    import gzip
    import json

    from support import SAMPLES, run_cli

    source = SAMPLES / "ddp_nccl_streams.pt.trace.json.gz"
    with gzip.open(source, "rt") as fh:
        doc = json.load(fh)
    evil = "\x1b[2J\x1b]0;pwned\x07[bold red]boom[/] [@click=app.quit]x[/]"
    totals: dict[str, float] = {}
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel":
            totals[event["name"]] = totals.get(event["name"], 0) + event.get("dur", 0)
    longest = max(totals, key=totals.__getitem__)  # the biggest kernel: first in the summary
    for event in doc["traceEvents"]:
        if event.get("cat") == "kernel" and event["name"] == longest:
            event["name"] = evil + event["name"]
    trace = tmp_path / "evil.json"
    trace.write_text(json.dumps(doc))
    assert run_cli(["diff", str(source), str(trace), "--summary", "--top", "3", "--no-cache"]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "▲ new" in printed and "␛[2J␛]0;pwned\\x07[bold red]boom" in printed
    app = ProfviewApp(str(source), no_cache=True, compare={"after": str(trace)})
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_compare(pilot, app)
        await pilot.press("slash", *"boom", "enter")
        await pilot.pause()
        shot = screen_text(app)
        assert "[bold red]boom[/]" in shot and "␛[2J" in shot and "\x1b[2J" not in shot
        view = app.frame_view()
        assert view is not None and view.displayed.height >= 1 and set(view.displayed["status"]) == {"added"}
        assert app.is_running
