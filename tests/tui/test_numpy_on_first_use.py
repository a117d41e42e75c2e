"""The viewer imports NumPy when a chart or a drill-down first needs it, not with the viewer.

Importing NumPy holds the interpreter's lock for about 36 ms while the trace is read on other
threads, and the first screen (the Overview) draws no chart: importing the viewer's app and main
screen modules must leave NumPy out, and the Steps timeline, drawn when its pane is first shown,
must then work with it (its lanes the trace's ``ProfilerStep#`` names, counted from the raw JSON).
Each check runs in a fresh interpreter, the only way to see what a run imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support import raw_events, sample

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


def run(script: str, *args: str, tmp_path: Path) -> str:
    env = {"PROFVIEW_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_viewers_modules_leave_numpy_out(tmp_path: Path) -> None:
    assert "NUMPY: False" in run(IMPORTS, tmp_path=tmp_path)


def test_the_steps_timeline_imports_numpy_when_first_drawn(tmp_path: Path) -> None:
    trace = sample("gpt2_train_bf16.pt.trace.json.gz")
    names = (str(event.get("name", "")) for event in raw_events("gpt2_train_bf16.pt.trace.json.gz"))
    steps = {name for name in names if name.startswith("ProfilerStep#")}
    assert steps, "the sample has ProfilerStep# ranges"
    assert "STEPS: True True" in run(STEPS, str(TESTS), str(trace), tmp_path=tmp_path)
