"""``profview query`` on a terminal: the answer fits the window, figures whole; piped, every cell whole.

The witness is the raw trace: the kernel names and totals printed are those of the kernel table,
and a shortened name is the start and end of the real one around ``…``.
"""

from __future__ import annotations

import io
import re

import pytest
from support import SAMPLES

from profview import load
from profview.report.frame_text import print_frame

TRACE = SAMPLES / "gpt2_train_bf16.pt.trace.json.gz"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("columns", [80, 120])
def test_a_terminal_gets_the_answer_fitted_to_its_width(monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    kernels = load(TRACE, use_cache=False).kernels().select("name", "calls", "total_us").head(5)
    monkeypatch.setattr("shutil.get_terminal_size", lambda *a, **k: __import__("os").terminal_size((columns, 24)))
    out = Terminal()
    print_frame(kernels, out)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= columns for line in lines), lines
    assert "shortened" in lines[-1]
    for line, row in zip(lines[2:7], kernels.iter_rows(), strict=True):
        name, calls, total = row
        assert re.search(rf"\s{calls}\s+{total:.3f}$", line), line  # the figures are whole
        shown = line[: line.index("…")]
        tail = line.split("…", 1)[1].rsplit(f" {calls} ", 1)[0].rstrip()
        assert name.startswith(shown) and name.endswith(tail)


def test_a_pipe_gets_every_cell_whole() -> None:
    kernels = load(TRACE, use_cache=False).kernels().select("name", "calls", "total_us").head(5)
    out = io.StringIO()
    print_frame(kernels, out)
    text = out.getvalue()
    assert all(name in text for name in kernels["name"])
    assert "…" not in text and text.rstrip().endswith("(5 rows)")
