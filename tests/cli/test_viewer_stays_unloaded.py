"""The viewer's entry point imports Textual only when a viewer runs (issue 21): the CLI imports
``profview.tui.launch`` for ``open`` and ``diff``, and importing it must not load Textual
(tests/cli/test_import_hygiene.py checks the printing commands themselves)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import profview.tui.launch as launch
assert callable(launch.run) and callable(launch.run_job_compare)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "textual_fastdatatable"))
print("TEXTUAL:", ",".join(loaded) or "none")
"""


def test_the_viewers_entry_point_leaves_textual_out() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TEXTUAL: none"
