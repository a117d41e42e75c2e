"""The viewer a newcomer opens: ``--step N`` opens narrowed to the step as Enter on it in Steps does,
an unknown step is one line, and the path the README's tour walks (Overview → Steps → a step →
Kernels → Enter → the Python line of the kernel's launch) works at 80x24."""

from __future__ import annotations

from pilot import screen_text, wait_loaded, wait_until
from support import loaded, sample

from profview.tui.app import ProfviewApp
from profview.tui.drill.screen import DrillScreen

TRACE = "resnet50_train_amp.pt.trace.json.gz"


async def test_open_narrowed_to_a_step_as_enter_on_it() -> None:
    profile = loaded(TRACE)
    steps = profile.step_numbers()
    assert len(steps) >= 2
    chosen = steps[1]
    app = ProfviewApp(str(sample(TRACE)), no_cache=True, profile=profile, step=chosen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await wait_until(pilot, lambda: main.step == chosen)
        assert main.step == chosen
        await pilot.pause(0.2)
        assert f"step {chosen}" in screen_text(app)
    by_key = ProfviewApp(str(sample(TRACE)), no_cache=True, profile=profile)
    async with by_key.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, by_key)
        await pilot.press("4", "down", "enter")  # the second step, as Enter chooses it
        await wait_until(pilot, lambda: by_key.screen.step is not None)
        assert by_key.screen.step == chosen


async def test_an_unknown_step_is_one_line_and_exit_2() -> None:
    app = ProfviewApp(str(sample(TRACE)), no_cache=True, step=999)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.error is not None)
    assert app.return_code == 2
    assert "no step 999" in str(app.error) and str(loaded(TRACE).step_numbers()) in str(app.error)


async def test_the_readme_tour_reaches_the_python_line_at_80x24() -> None:
    """Steps sorted, the slowest step chosen, Kernels, Enter on a forward kernel: the drill-down's
    details show the Python frame that launched it (the trace's own ``python_function`` event)."""
    profile = loaded(TRACE)
    app = ProfviewApp(str(sample(TRACE)), no_cache=True, profile=profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        main = app.screen
        await pilot.press("4", "s")  # Steps: duration ↓
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_until(pilot, lambda: main.step is not None)
        slowest = profile.steps().sort("duration_us", descending=True)["step"][0]
        assert main.step == slowest
        await pilot.press("2", "slash", *"batchnorm_fwtr", "enter", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        await pilot.pause(0.5)
        text = screen_text(app)
        assert "python stack" in text
        assert "torch/nn/functional.py(" in text and "batch_norm" in text
