"""Cyclic garbage collection is held while the profview command starts and resumed once it is over.

The command holds it from its first line; the first trace read resumes it (freezing the start's
objects), except in the viewer, where the first screen does; a program that imports profview as
a library keeps the collector as it had it. Each check runs in a fresh interpreter: the collector
is process-wide.
"""

from __future__ import annotations

from pathlib import Path

from support import fresh_python_output, raw_events, sample

TESTS = Path(__file__).resolve().parent
TRACE = "gpt2_train_bf16.pt.trace.json.gz"

COMMAND = """
import gc, sys
from profview.cli import main
try:
    main(["export", sys.argv[1], "-v", "kernels", "-o", sys.argv[2], "--no-cache"])
except SystemExit as exit:
    assert not exit.code, exit.code
print("COLLECTING:", gc.isenabled(), gc.get_freeze_count() > 0)
"""

LIBRARY = """
import gc, sys
import profview
profview.load(sys.argv[1], use_cache=False).kernels()
print("COLLECTING:", gc.isenabled(), gc.get_freeze_count() > 0)
"""

VIEWER = """
import asyncio, gc, sys
sys.path.insert(0, sys.argv[1])
from profview import collector
collector.hold()
collector.until_first_screen()
import profview
profview.load(sys.argv[2], use_cache=False)
print("AFTER THE READ:", gc.isenabled())
from pilot import screen_text, wait_loaded
from profview.tui.app import ProfviewApp

async def main():
    app = ProfviewApp(sys.argv[2], no_cache=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.pause(0.2)
        print("FIRST SCREEN:", gc.isenabled(), "GPU busy" in screen_text(app))

asyncio.run(main())
"""


def test_the_command_collects_again_once_its_trace_is_read(tmp_path: Path) -> None:
    out = tmp_path / "kernels.csv"
    assert "COLLECTING: True True" in fresh_python_output(COMMAND, str(sample(TRACE)), str(out), tmp_path=tmp_path)
    kernels = {e["name"] for e in raw_events(TRACE) if e.get("cat") == "kernel"}
    assert kernels and all(name.replace('"', '""') in out.read_text() for name in list(kernels)[:20])


def test_a_library_keeps_its_collector_as_it_was(tmp_path: Path) -> None:
    assert "COLLECTING: True False" in fresh_python_output(LIBRARY, str(sample(TRACE)), tmp_path=tmp_path)


def test_the_viewer_collects_again_at_its_first_screen(tmp_path: Path) -> None:
    text = fresh_python_output(VIEWER, str(TESTS), str(sample(TRACE)), tmp_path=tmp_path)
    assert "AFTER THE READ: False" in text
    assert "FIRST SCREEN: True True" in text


PAUSED = """
import gc
from profview.collector import Paused
seen = []
with Paused() as pause:
    seen.append(gc.isenabled())
    pause.end()
    seen.append(gc.isenabled())
seen.append(gc.isenabled())
gc.disable()  # a program that had stopped collection keeps it stopped
with Paused():
    seen.append(gc.isenabled())
seen.append(gc.isenabled())
print("SEEN:", seen)
"""


def test_a_pause_stops_collection_and_restores_it_as_it_was(tmp_path: Path) -> None:
    assert "SEEN: [False, True, True, False, False]" in fresh_python_output(PAUSED, tmp_path=tmp_path)
