"""Text cut to fit the screen: at most N lines of a width, the cut marked with an ellipsis."""

from __future__ import annotations

from rich.text import Text

ELLIPSIS = "…"


def cap_lines(text: Text, width: int, lines: int) -> list[Text]:
    """``text`` wrapped at ``width`` columns, at most ``lines`` lines (the last ends in ``…`` if cut)."""
    width = max(width, 1)
    plain = text.plain
    out = []
    for index in range(lines):
        piece = text[index * width : (index + 1) * width]
        if not piece.plain:
            break
        out.append(piece)
    if len(plain) > width * lines and out:
        last = out[-1]
        out[-1] = last[: width - 1] + Text(ELLIPSIS, style=text.style)
    return out or [Text("")]


__all__ = ["cap_lines"]
