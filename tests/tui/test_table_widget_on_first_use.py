"""The viewer imports its table widget when a first table is built, not with the viewer.

The table widget (``textual_fastdatatable``) imports pyarrow, and the first screen (the Overview) has
no table: importing the viewer's app modules must leave both out, and opening a trace must show the
whole Overview without them, then build a real table the moment a table pane is first shown (the
Kernels tab), its rows the trace's kernel names counted from the raw JSON with the standard library.
Each check runs in a fresh interpreter, the only way to see what a run imports.
"""

from __future__ import annotations

from pathlib import Path

from support import fresh_python_output, raw_events, sample

DEFERRED = ("pyarrow", "textual_fastdatatable")
TESTS = Path(__file__).resolve().parents[1]

IMPORTS = """
import sys
import profview.profiles.background, profview.tui.app, profview.tui.job.app, profview.tui.compare.screen
print("LOADED:", ",".join(m for m in sys.argv[1:] if m in sys.modules) or "none")
"""

OPEN = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from pilot import screen_text, wait_loaded
from profview.tui.app import ProfviewApp
DEFERRED = ("pyarrow", "textual_fastdatatable")

def loaded():
    return ",".join(m for m in DEFERRED if m in sys.modules) or "none"

async def main():
    app = ProfviewApp(sys.argv[2], no_cache=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        print("OVERVIEW:", "GPU busy" in screen_text(app), loaded())
        await pilot.press("2")
        await pilot.pause()
        view = app.frame_view()
        table = view.table if view is not None else None
        rows = table.row_count if table is not None else -1
        print("KERNELS:", type(table).__name__, rows, loaded())

asyncio.run(main())
"""


def test_the_viewers_modules_leave_the_table_widget_out(tmp_path: Path) -> None:
    out = fresh_python_output(IMPORTS, *DEFERRED, tmp_path=tmp_path)
    assert "LOADED: none" in out.splitlines()


def test_the_overview_comes_without_it_and_the_first_table_brings_it(tmp_path: Path) -> None:
    name = "ddp_nccl_streams.pt.trace.json.gz"
    kernels = {str(e.get("name")) for e in raw_events(name) if e.get("cat") == "kernel" and e.get("ph") == "X"}
    assert kernels  # the witness: the trace's kernel names, counted from the raw JSON
    lines = fresh_python_output(OPEN, str(TESTS), str(sample(name)), tmp_path=tmp_path).splitlines()
    assert "OVERVIEW: True none" in lines
    assert f"KERNELS: RowCursorTable {len(kernels)} pyarrow,textual_fastdatatable" in lines
