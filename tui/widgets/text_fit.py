"""Text cut to fit the screen: at most N lines of a width (wrapped at spaces where it can), the
cut marked with an ellipsis."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

ELLIPSIS = "…"
_CONSOLE = Console(file=io.StringIO(), width=1000, color_system=None, legacy_windows=False)


def cap_lines(text: Text, width: int, lines: int, at_spaces: bool = True) -> list[Text]:
    """``text`` wrapped at ``width`` columns (at spaces, long words folded; ``at_spaces`` False:
    every line full, as for a kernel name), at most ``lines`` lines, the last ending in ``…`` if
    some was left out."""
    width = max(width, 2)
    if at_spaces:
        wrapped = list(text.wrap(_CONSOLE, width, overflow="fold", no_wrap=False))
    else:
        wrapped = [text[i : i + width] for i in range(0, max(len(text), 1), width)]
    out = [line for line in wrapped[:lines]]
    for line in out:
        line.rstrip()
    if len(wrapped) > lines and out:
        last = out[-1]
        if last.cell_len >= width:
            last = last[: width - 1]
        out[-1] = last + Text(ELLIPSIS, style=text.style)
    return out or [Text("")]


__all__ = ["cap_lines"]
