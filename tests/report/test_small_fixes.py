"""Small fixes, each against the raw file: CSV floats at the trace's resolution, the
overview of a trace without steps or devices, the loading screen's decompressed size, the export
name (trace, view, step), and an invalid filter regex kept and explained."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from pilot import type_text, wait_loaded
from rich.console import Console
from support import loaded, sample, viewer

from profview.report.export import write_table
from profview.tui.dialogs.loading import size_text
from profview.tui.main.overview import overview_renderable
from profview.tui.widgets.filter_bar import FilterBar

RESNET = "resnet50_train_amp.pt.trace.json.gz"
NO_STEPS = "tracelens_b200_nccl_eager_no_steps.json.gz"
XLA = "xla_style_trace.json"


def raw(name: str) -> list[dict]:
    path = sample(name)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    return data["traceEvents"] if isinstance(data, dict) else data


def test_csv_floats_carry_three_decimals_of_a_microsecond(tmp_path: Path) -> None:
    totals: dict[str, float] = defaultdict(float)
    for event in raw(RESNET):
        if event.get("cat") == "kernel":
            totals[event["name"]] += event["dur"]
    target = tmp_path / "kernels.csv"
    write_table(loaded(RESNET).kernels(), str(target))
    rows = {r["name"]: r for r in csv.DictReader(target.open())}
    for name, total in totals.items():
        cell = rows[name]["total_us"]
        assert len(cell.split(".")[1]) == 3  # no binary noise such as 91166.83600000152
        assert cell == f"{total:.3f}"


def overview_text(name: str) -> str:
    console = Console(width=100, file=io.StringIO(), record=True)
    console.print(overview_renderable(loaded(name), 100))
    return console.export_text()


def test_overview_of_a_trace_without_steps_says_so() -> None:
    assert not any(str(e.get("name", "")).startswith("ProfilerStep") for e in raw(NO_STEPS))
    text = overview_text(NO_STEPS)
    assert "no ProfilerStep ranges" in text and "0 steps" not in text
    assert "the whole trace 87.413 ms (no steps)" in text and "average step" not in text


def test_overview_of_a_trace_without_devices_says_it_once() -> None:
    with open(sample(XLA)) as fh:
        assert "deviceProperties" not in json.load(fh)
    text = overview_text(XLA)
    assert "device: not recorded in this trace" in text and "device device" not in text


def test_loading_screen_gives_the_decompressed_size() -> None:
    path = str(sample(RESNET))
    inflated = len(gzip.decompress(Path(path).read_bytes()))
    compressed = Path(path).stat().st_size
    assert size_text(path) == f"{compressed / 1e6:,.1f} MB compressed, {inflated / 1e6:,.1f} MB of JSON"
    plain = str(sample(XLA))
    assert size_text(plain) == f"{Path(plain).stat().st_size / 1e6:,.1f} MB"


@pytest.mark.asyncio
async def test_export_name_says_trace_view_and_step() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4", "down", "enter", "2", "e")
        await pilot.pause()
        step = app.main_screen().step
        assert step is not None
        field = app.screen.query_one("#export-path")
        assert field.value.endswith(f"profview-resnet50-train-amp-kernels-step-{step}.csv")


@pytest.mark.asyncio
async def test_invalid_filter_regex_is_explained_and_enter_keeps_the_bar() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash")
        await type_text(pilot, "gemm(")
        await pilot.press("enter")
        await pilot.pause()
        bar = app.screen.query_one(FilterBar)
        assert bar.display and bar.value == "gemm("
        problem = "not a regex: unclosed group at position 4"
        assert bar.border_subtitle == f"{problem} · fix it, or Esc to clear"
        await pilot.press(*["backspace"] * 5)  # in the bar, Backspace edits (it goes back elsewhere)
        await type_text(pilot, "nvjet")
        await pilot.press("enter")
        await pilot.pause()
        assert not bar.display
        names = loaded(RESNET).kernels()["name"].to_list()
        assert app.screen.query_one("#kernels").displayed.height == sum("nvjet" in n.lower() for n in names)


def test_count_only_kernels_say_calls_and_no_time() -> None:
    """A README listing kernel counts only ("copy_" : 6150): the overview says so, not '- 0.0%'."""
    name = "seed_readme_kernel_counts_stacks.md"
    listed = re.search(r'^"copy_" : (\d+)$', sample(name).read_text(), re.M)
    assert listed is not None
    text = overview_text(name)
    line = next(line for line in text.splitlines() if line.startswith("copy_ "))
    assert line.split()[1:] == [f"{int(listed.group(1)):,}", "calls", "no", "time"]
    assert "- 0.0%" not in text
