"""What the viewer's first screen waits for, in order: one cold open, headless at 100x30.

    python benchmarks/first_screen_waits.py [TRACE]

Seconds from the process's start to each step of ``profview TRACE`` as the CLI starts it: the read
begun on its background thread (:class:`profview.profiles.background.BackgroundLoad`), the viewer
imported, the UI's load thread waiting for the read, the read done, the kernel table built (the
first screen of a large trace), the main screen switched in and its first frame painted.  The
cache is a fresh temporary folder (a cold open).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

BIG = Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "gpt2_train_big.pt.trace.json.gz"

PROBE = r"""
import asyncio, sys, time
start = time.perf_counter()
marks = []
def mark(what):
    marks.append((time.perf_counter() - start, what))
from profview.collector import hold, until_first_screen
hold(); until_first_screen()  # as the profview command does
from profview.profiles import background
from profview.tui.lifecycle import prepare_early
pending = background.BackgroundLoad(sys.argv[1], then=prepare_early)
mark("the read started (background thread)")
from profview.tui.app import ProfviewApp
from profview.tui.main.screen import MainScreen
mark("the viewer imported (Textual, the app)")
from profview.profiles import trace_profile
kernels, result = trace_profile.Profile.kernels, background.BackgroundLoad.result
def timed_kernels(self, *args, **kwargs):
    out = kernels(self, *args, **kwargs)
    if not any(what == "the kernel table built" for _t, what in marks):  # its first call builds it
        mark("the kernel table built")
    return out
def timed_result(self):
    mark("the UI's load thread waits for the read")
    out = result(self)
    mark("the read done")
    return out
trace_profile.Profile.kernels, background.BackgroundLoad.result = timed_kernels, timed_result
async def main():
    app = ProfviewApp(sys.argv[1], pending=pending)
    async with app.run_test(size=(100, 30)) as pilot:
        mark("the app running (its loading screen)")
        while not isinstance(app.screen, MainScreen):
            await pilot.pause(0.005)
        mark("the main screen switched in")
        await pilot.pause(0)
        mark("its first frame painted")
    for seconds, what in sorted(marks):
        print(f"  {seconds:7.3f} s  {what}")
asyncio.run(main())
"""


def main() -> None:
    trace = Path(sys.argv[1] if len(sys.argv) > 1 else BIG).resolve()
    env = {**os.environ, "PROFVIEW_CACHE_DIR": tempfile.mkdtemp(prefix="profview-cache-")}
    print(f"{trace.name}: the viewer's first screen, cold, headless at 100x30")
    subprocess.run([sys.executable, "-c", PROBE, str(trace)], env=env, check=True)


if __name__ == "__main__":
    main()
