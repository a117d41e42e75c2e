"""The breadcrumb of a drill-down: ``Kernels › kernel sm90_xmma… › op aten::mm``, fitted to its width.

Every part is made printable (``sanitize.clean``) and the path is shortened to the widget's own
width, recomputed on every render (a resize, a message beside it):

1. the longest parts after the first (the view's title) are cut first, all to one common
   length, with ``…`` (never below a few cells);
2. if that is not enough, the parts after the first are dropped from the front, replaced by ``…``
   (the view you started from and the level you are at stay readable).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from ...sanitize import clean

SEPARATOR = " › "
MIN_PART = 8  # cells a shortened part keeps (ellipsis included)


def cut(part: str, cells: int) -> str:
    """``part`` in at most ``cells`` cells, ending in ``…`` when cut."""
    if cell_len(part) <= cells:
        return part
    text = Text(part)
    text.truncate(max(cells, 1), overflow="ellipsis")
    return text.plain


def fit_path(path: list[str], width: int) -> list[str]:
    """The parts of ``path`` (cleaned, one line each), shortened so that joined they fit ``width`` cells."""
    parts = [" ".join(clean(str(part)).split()) for part in path]

    def total(shown: list[str]) -> int:
        return sum(cell_len(p) for p in shown) + cell_len(SEPARATOR) * max(len(shown) - 1, 0)

    if total(parts) <= width:
        return parts
    longest = max(cell_len(p) for p in parts[1:])
    for cap in range(longest, MIN_PART - 1, -1):  # the largest common cap that fits (the view's title stays)
        shown = [parts[0], *(cut(p, cap) for p in parts[1:])]
        if total(shown) <= width:
            return shown
    shown = [parts[0], *(cut(p, MIN_PART) for p in parts[1:])]
    while total(shown) > width and len(shown) > (3 if shown[1] == "…" else 2):  # keep the first and last
        shown = [shown[0], "…", *shown[3:]] if shown[1] == "…" else [shown[0], "…", *shown[2:]]
    if total(shown) > width:
        return [cut(SEPARATOR.join(shown), width)]
    return shown


def breadcrumb(path: list[str], width: int) -> Text:
    """The fitted path as styled text: separators dim, the level you are at bold."""
    text = Text()
    parts = fit_path(path, width)
    for index, part in enumerate(parts):
        if index:
            text.append(SEPARATOR, style="dim")
        text.append(part, style="bold" if index == len(parts) - 1 else "")
    return text


class Breadcrumb(Static):
    """One line: the drill-down path, fitted to the widget's width at every render."""

    DEFAULT_CSS = "Breadcrumb { height: 1; width: 1fr; }"

    def __init__(self, path: list[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.path = list(path)

    def render(self) -> Text:
        return breadcrumb(self.path, max(self.size.width - 1, 1))

    @property
    def plain(self) -> str:
        """The text shown (for tests and screen readers)."""
        return self.render().plain


__all__ = ["Breadcrumb", "breadcrumb", "fit_path"]
