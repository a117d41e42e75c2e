"""Text cut to fit the screen: at most N lines of a width (wrapped at spaces where it can), the
cut marked with an ellipsis; or whole items (figures) packed into lines, never one cut."""

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


def pack_items(items: list[str], width: int, lines: int, separator: str = " · ") -> list[Text]:
    """``items`` in at most ``lines`` lines of ``width`` cells, each item whole (a figure is never
    cut: ``std_us 59.48…`` read like a number); those that do not fit are counted at the end of the
    last line, ``+3 more``.  An item wider than a line alone is cut with ``…`` (text, not a figure)."""
    width = max(width, 8)
    out: list[str] = []
    line = ""
    placed = 0
    for item in items:
        if len(item) > width:
            item = item[: width - 1] + ELLIPSIS
        candidate = f"{line}{separator}{item}" if line else item
        if len(candidate) <= width:
            line = candidate
            placed += 1
            continue
        if len(out) + 1 >= lines:
            break
        out.append(line)
        line = item
        placed += 1
    if line:
        out.append(line)
    left = len(items) - placed
    if left and out:
        more = f"{separator}+{left} more"
        last = out[-1]
        parts = last.split(separator)
        while parts and len(separator.join(parts)) + len(more) > width:
            parts.pop()
            left += 1
            more = f"{separator}+{left} more"
        out[-1] = separator.join(parts) + more if parts else more.removeprefix(separator)
    return [Text(line) for line in out] or [Text("")]


__all__ = ["cap_lines", "pack_items"]
