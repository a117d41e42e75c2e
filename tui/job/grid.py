"""The rank × step grid of a job: one row per rank, one cell per step, shaded by a figure.

Shades are glyphs first (``░▒▓█``: quartiles of the figure over all cells, so the grid reads
under NO_COLOR) and colour second; the straggler's row ends with ``◀``.
"""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.widgets import Static

from ...frames import CATEGORIES, CATEGORY_LABELS, fmt_us

SHADES = "░▒▓█"
SHADE_STYLES = ("#3b4d61", "#4c7ba8", "#d4a03c", "#e5534b")
#: What the grid can be shaded by: the step time, then each category's column.
SHADE_BY: tuple[str, ...] = ("duration_us", *(f"{c}_us" for c in CATEGORIES))


def shade_label(column: str) -> str:
    return "step time" if column == "duration_us" else CATEGORY_LABELS[column.removesuffix("_us")]


def grid_text(steps: pl.DataFrame, stragglers: list[int], column: str, width: int) -> Text:
    """The grid as Text: a header, one line per rank, a legend of the quartile bounds."""
    step_ids = steps["step"].unique().sort().to_list()
    ranks = steps["rank"].unique().sort().to_list()
    room = max(4, width - 26)
    shown = step_ids[:room]
    values = steps.filter(pl.col("step").is_in(shown))[column].drop_nulls()
    bounds = [float(values.quantile(q, "linear") or 0.0) for q in (0.25, 0.5, 0.75)] if values.len() else [0, 0, 0]
    text = Text()
    more = f" (+{len(step_ids) - len(shown)} more)" if len(step_ids) > len(shown) else ""
    text.append(f" rank  steps {shown[0] if shown else ''}…{shown[-1] if shown else ''}{more}\n", style="bold")
    cells = {(r, s): v for r, s, v in steps.select("rank", "step", column).iter_rows()}
    for rank in ranks:
        text.append(f"{rank:>5}  ")
        own = []
        for step in shown:
            value = cells.get((rank, step))
            if value is None:
                text.append(" ")
                continue
            own.append(value)
            level = sum(value > b for b in bounds)
            text.append(SHADES[level], style=SHADE_STYLES[level])
        mean = sum(own) / len(own) if own else None
        text.append(f"  {fmt_us(mean):>11}")
        text.append("  ◀ straggler" if rank in stragglers else "", style="bold")
        text.append("\n")
    text.append(f" {shade_label(column)}: ", style="dim")
    for level, glyph in enumerate(SHADES):
        upper = f"≤{_short(bounds[level])}" if level < 3 else f">{_short(bounds[2])}"
        text.append(glyph, style=SHADE_STYLES[level])
        text.append(f" {upper}  ", style="dim")
    return text


def _short(us: float) -> str:
    """A legend bound in few characters: ``13.1ms``, ``850us``, ``1.2s``."""
    if us >= 1e6:
        return f"{us / 1e6:.1f}s"
    return f"{us / 1e3:.1f}ms" if us >= 1e3 else f"{us:.0f}us"


class RankGrid(Static):
    """The grid widget; :meth:`show` re-renders it for a shading column."""

    DEFAULT_CSS = "RankGrid { height: auto; max-height: 50%; overflow-y: auto; }"

    def __init__(self, steps: pl.DataFrame, stragglers: list[int], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps = steps
        self.stragglers = stragglers
        self.column = "duration_us"

    def on_mount(self) -> None:
        self.show(self.column)

    def on_resize(self) -> None:
        self.show(self.column)

    def show(self, column: str) -> None:
        self.column = column
        self.update(grid_text(self.steps, self.stragglers, column, self.size.width or 80))
