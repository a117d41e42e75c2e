"""`profview summary` and the viewer's entry point leave Textual unimported (issue 21: the viewer
is reached only through profview.tui.launch, which imports Textual when a viewer runs)."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT, sample

RESNET = "resnet50_train_amp.pt.trace.json.gz"

PROBE = """
import sys
from profview.cli.app import main
import profview.tui.launch
try:
    main(["summary", sys.argv[1], "--no-cache"])
except SystemExit as exc:
    assert not exc.code, exc.code
print("textual loaded" if any(m == "textual" or m.startswith("textual.") for m in sys.modules) else "textual absent")
"""


def test_summary_does_not_import_textual() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(sample(RESNET))], capture_output=True, text=True, cwd=ROOT.parent, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("textual absent")
