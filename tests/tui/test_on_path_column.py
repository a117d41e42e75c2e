"""The Kernels and Operators tabs gain an on-path column once the critical path, computed
by a thread worker, arrives; the context line says whose path it is, or why there is none.

Witness: the figures on screen are Profile.critical_path_names()'s (a second load of the trace),
which tests/cli/test_on_path_cli.py checks against the path's own length."""

from __future__ import annotations

import threading

import pytest
from pilot import screen_text, wait_loaded, wait_path
from support import sample

import profview
from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen
from profview.tui.messages import StepChosen

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def cutlass_on_path(step: int | None) -> float:
    names = profview.load(sample(GPT2), use_cache=False).critical_path_names(step)
    row = names.filter(names["kind"] == "kernel").row(0, named=True)  # the first: most on the path
    assert row["name"].startswith("void cutlass::Kernel2")
    return float(row["on_path_us"])


async def test_kernels_tab_gains_the_column_after_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path is held back until the Kernels tab is on screen without it, then let through."""
    from profview.tui.main import overview

    monkeypatch.setattr(overview, "PATH_ON_THE_SPOT", 0)  # the Overview computes it off the UI thread too
    fresh = profview.load(sample(GPT2), use_cache=False)  # no critical path computed yet
    go = threading.Event()
    computed = fresh.step_paths

    def held_back(step: int | None = None, rules: str = "profview"):  # type: ignore[no-untyped-def]
        assert go.wait(30)
        return computed(step, rules)

    monkeypatch.setattr(fresh, "step_paths", held_back)
    app = ProfviewApp(str(sample(GPT2)), no_cache=True, profile=fresh)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app, path=False)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot.press("2")
        await pilot.pause()
        # issue 34: the columns are reserved, empty, where they will come (none shifts when it arrives)
        assert "on path: computing…" in screen_text(app) and "on_path_us" in screen_text(app)
        waiting = screen.frame_for("kernels")
        assert waiting.columns[2:5] == ["total_us", "on_path_us", "path_pct"]
        assert waiting["on_path_us"].null_count() == waiting.height
        go.set()
        await wait_path(pilot, screen)
        kernels = screen.frame_for("kernels")
        assert kernels.columns[2:5] == ["total_us", "on_path_us", "path_pct"]
        text = screen_text(app)
        assert "on path: all steps' critical paths" in text and "on_path_us" in text
        top = kernels.sort("on_path_us", descending=True).row(0, named=True)
        assert top["on_path_us"] == cutlass_on_path(None) == 19884.191
        assert f"{top['on_path_us']:,.3f}" in text or f"{top['on_path_us']:.3f}" in text
        # Step 3 chosen: the column is that step's path, recomputed by the worker.
        screen.post_message(StepChosen(3))
        await pilot.pause()
        await wait_path(pilot, screen)
        assert "on path: step 3's critical path" in screen_text(app)
        top = screen.frame_for("kernels").sort("on_path_us", descending=True).row(0, named=True)
        assert top["on_path_us"] == cutlass_on_path(3)
        await pilot.press("3")
        await pilot.pause()
        ops = screen.frame_for("ops")
        assert "on_path_us" in ops.columns and "on path: step 3's critical path" in screen_text(app)


async def test_a_trace_without_runtime_events_says_why() -> None:
    app = ProfviewApp(str(sample("hta_large_integer_comms_id.json.gz")), no_cache=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_loaded(pilot, app)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot.press("2")
        await wait_path(pilot, screen)
        assert "no on-path column: no runtime events" in screen_text(app)
        assert "on_path_us" not in screen.frame_for("kernels").columns
