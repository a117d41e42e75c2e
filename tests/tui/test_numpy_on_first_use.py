"""The viewer imports NumPy when a chart or a drill-down first needs it, not with the viewer.

Importing NumPy holds the interpreter's lock for about 36 ms while the trace is read on other
threads, and the first screen (the Overview) draws no chart: importing the viewer's app and main
screen modules must leave NumPy out, and the Steps timeline, drawn when its pane is first shown,
must then work with it (its lanes the trace's ``ProfilerStep#`` names, counted from the raw JSON).
Each check runs in a fresh interpreter, the only way to see what a run imports.
"""

from __future__ import annotations

from pathlib import Path

from support import fresh_python_output, raw_events, sample

TESTS = Path(__file__).resolve().parents[1]

IMPORTS = """
import sys
import profview.profiles.background, profview.tui.app, profview.tui.main.screen
print("NUMPY:", "numpy" in sys.modules)
"""

STEPS = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pilot import screen_text, wait_loaded
from profview.tui.app import ProfviewApp

async def main():
    app = ProfviewApp(sys.argv[2], no_cache=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        for _ in range(100):
            await pilot.pause(0.05)
            if "ProfilerStep#" in screen_text(app):
                break
        print("STEPS:", "numpy" in sys.modules, "ProfilerStep#" in screen_text(app))

asyncio.run(main())
"""


def test_the_viewers_modules_leave_numpy_out(tmp_path: Path) -> None:
    assert "NUMPY: False" in fresh_python_output(IMPORTS, tmp_path=tmp_path)


def test_the_steps_timeline_imports_numpy_when_first_drawn(tmp_path: Path) -> None:
    trace = sample("gpt2_train_bf16.pt.trace.json.gz")
    names = (str(event.get("name", "")) for event in raw_events("gpt2_train_bf16.pt.trace.json.gz"))
    steps = {name for name in names if name.startswith("ProfilerStep#")}
    assert steps, "the sample has ProfilerStep# ranges"
    assert "STEPS: True True" in fresh_python_output(STEPS, str(TESTS), str(trace), tmp_path=tmp_path)


REOPEN = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pilot import screen_text
from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen

async def main():
    app = ProfviewApp(sys.argv[2])
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(400):
            await pilot.pause(0.05)
            text = screen_text(app) if isinstance(app.screen, MainScreen) else ""
            if "critical path" in text and "computing" not in text:
                break
        shown = [name for name in ("numpy", "profview.tui.main.timeline.widget") if name in sys.modules]
        print("SHOWN:", "critical path" in text, "IMPORTED:", ",".join(shown) or "-")
        while sys.argv[3] == "settle" and app.threads.busy():  # the first open: its cache written
            await pilot.pause(0.05)

asyncio.run(main())
"""


def test_a_cached_reopen_shows_its_overview_before_numpy_and_the_timeline(tmp_path: Path) -> None:
    """A re-open from the cache draws the whole Overview (its critical-path line read from the
    cache) with neither NumPy nor the Timeline's widget modules imported: both wait for the tab that
    draws them. The first open computes the path, with NumPy; the second reads what it kept."""
    trace = sample("gpt2_train_bf16.pt.trace.json.gz")
    first = fresh_python_output(REOPEN, str(TESTS), str(trace), "settle", tmp_path=tmp_path)
    assert "SHOWN: True" in first
    again = fresh_python_output(REOPEN, str(TESTS), str(trace), "once", tmp_path=tmp_path)
    assert "SHOWN: True IMPORTED: -" in again, again
