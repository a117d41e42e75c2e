"""Stacked bars of step categories, as inert Rich Text."""

from __future__ import annotations

from rich.text import Text

from ...frames import CATEGORIES, CATEGORY_CHAR, CATEGORY_LABELS, CATEGORY_STYLE


def stacked_bar(values: dict[str, float], total: float, width: int) -> Text:
    """A bar ``width`` cells wide, split by category in proportion to ``values`` over ``total``."""
    bar = Text()
    if total <= 0 or width <= 0:
        return bar
    used, acc = 0, 0.0
    for category in CATEGORIES:
        acc += max(values.get(category, 0.0), 0.0)
        cells = min(width, round(acc / total * width)) - used
        if cells > 0:
            bar.append(CATEGORY_CHAR[category] * cells, style=CATEGORY_STYLE[category])
            used += cells
    return bar


def legend(values: dict[str, float] | None = None, total: float = 0.0, width: int | None = None) -> Text:
    """Each category with its character and colour (and share, if given); ``width``: lines broken
    between items, never inside one (issue 34: a swatch wrapped apart from its label)."""
    line = Text()
    used = 0
    for category in CATEGORIES:
        label = f" {CATEGORY_LABELS[category]}"
        if values is not None and total > 0:
            label += f" {values.get(category, 0.0) / total * 100:.1f}%"
        item = 2 + len(label)
        if width is not None and used and used + item > width:
            line.rstrip()
            line.append("\n")
            used = 0
        line.append(CATEGORY_CHAR[category] * 2, style=CATEGORY_STYLE[category])
        line.append(label + "  ")
        used += item + 2
    line.rstrip()
    return line
