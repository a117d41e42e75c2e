"""Snapshot tests guarding the viewer's layout at 80x24 (update with --snapshot-update)."""

from __future__ import annotations

import pytest
from support import ROOT

from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen

TRACE = "samples/resnet50_train_amp.pt.trace.json.gz"  # relative: the same path on every machine


async def loaded(pilot) -> None:  # type: ignore[no-untyped-def]
    """Linked, and the critical path in the Kernels and Operators tables (issue 26: a worker adds
    their on-path column)."""
    for _ in range(400):  # a trace of 100,000+ events shows its first screen before it is linked
        screen = pilot.app.screen
        if isinstance(screen, MainScreen) and pilot.app.linked and screen.path_settled():
            break
        await pilot.pause(0.05)
    await pilot.pause()


@pytest.fixture(autouse=True)
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_overview_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=loaded)


def test_kernels_filtered_sorted_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("2", "slash", *"batchnorm", "enter", "right", "s")

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_drill_down_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("3", "slash", *"^aten::convolution_backward$", "enter", "enter")
        await pilot.pause()

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_steps_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("4", "down", *["right"] * 20)

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


# -- memory and modules (issue 15) --------------------------------------------------------------


def test_memory_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("5")
        await pilot.pause()

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_modules_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("6", "x")
        await pilot.pause()

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_timeline_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("7")
        for _ in range(200):  # the lanes are built off the UI thread when the tab is first shown
            if pilot.app.screen.query("TraceTimeline"):
                break
            await pilot.pause(0.05)
        await pilot.pause()
        await pilot.press("t", "n", "n")
        await pilot.pause()

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_kernel_details_line_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """At 80 columns the details line under the table shows the whole name of the row."""

    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("2", "down", "down")
        await pilot.pause()

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


# -- tables and history (issue 13) -------------------------------------------------------------


def test_breadcrumb_after_two_drill_downs_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Kernels › kernel … › op …, fitted to 80 columns, over the operator's launches."""

    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("2", "enter")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.5)

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


def test_no_color_cursor_row_layout(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Under NO_COLOR the cursor's row is in reverse video and its cell bold and underlined."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("2", "down", "down", "right")

    assert snap_compare(ProfviewApp(TRACE, no_cache=True), terminal_size=(80, 24), run_before=steps)


# -- steps sorted, outliers marked (issue 13) ------------------------------------------------------


def test_steps_sorted_with_outlier_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def steps(pilot) -> None:  # type: ignore[no-untyped-def]
        await loaded(pilot)
        await pilot.press("4", "s")  # by duration: ProfilerStep#1014 first, marked !
        await pilot.pause()

    app = ProfviewApp("samples/hta_diff_control_a100.json.gz", no_cache=True)
    assert snap_compare(app, terminal_size=(80, 24), run_before=steps)
