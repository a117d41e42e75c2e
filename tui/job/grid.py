"""The rank × step grid of a job: one row per rank, one cell per step, shaded by a figure.

Shades are glyphs first (``░▒▓█``: the figure's quartiles over all cells, so the grid reads under
NO_COLOR) and colour second; the straggler's row ends with ``◀``.  By default the grid is shaded
by each rank's wait at collectives in the step: the straggler is the rank that waits least, so
it is the light row (shaded by step time it would look fastest).  The legend has one bucket per
distinct bound, each written precisely enough to differ from the next.

The rows are the ranks table's, in its order: sorting or filtering the table (``s``, ``/``) sorts
or filters the grid, and the grid scrolls to keep the highlighted rank in view.
"""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual.widgets import Static

from ...frames import CATEGORIES, CATEGORY_LABELS, fmt_us

SHADES = "░▒▓█"
SHADE_STYLES = ("#3b4d61", "#4c7ba8", "#d4a03c", "#e5534b")
#: What the grid can be shaded by: the wait at collectives, the step time, then each category.
SHADE_BY: tuple[str, ...] = ("wait_us", "duration_us", *(f"{c}_us" for c in CATEGORIES))
#: Lines of the grid that are not rank rows: the header and the legend.
FRAME_LINES = 2


def shade_label(column: str) -> str:
    if column == "wait_us":
        return "wait at collectives"
    return "step time" if column == "duration_us" else CATEGORY_LABELS[column.removesuffix("_us")]


def bucket_bounds(values: pl.Series) -> list[float]:
    """The distinct quartile bounds of ``values`` (fewer than three when quartiles coincide)."""
    if not values.len():
        return []
    quartiles = [float(values.quantile(q, "linear") or 0.0) for q in (0.25, 0.5, 0.75)]
    return sorted(set(quartiles))


def bound_labels(bounds: list[float]) -> list[str]:
    """The bounds written with the fewest decimals that keep them apart (``≤1.03ms ≤1.06ms``)."""
    for digits in range(1, 4):
        labels = [_short(b, digits) for b in bounds]
        if len(set(labels)) == len(labels):
            return labels
    return [_short(b, 3) for b in bounds]


def grid_text(
    steps: pl.DataFrame,
    stragglers: list[int],
    column: str,
    width: int,
    ranks: list[int] | None = None,
    height: int | None = None,
    cursor: int | None = None,
) -> Text:
    """The grid as Text: a header, one line per rank, a legend of the buckets.

    ``ranks``: the rows, in order (default: every rank, ascending); ``height``: lines available,
    rows beyond it scrolled so that rank ``cursor`` is shown (and marked ``›``)."""
    step_ids = steps["step"].unique().sort().to_list()
    order = ranks if ranks is not None else steps["rank"].unique().sort().to_list()
    room = max(4, width - 28)
    shown = step_ids[:room]
    values = steps.filter(pl.col("step").is_in(shown))[column].drop_nulls()
    bounds = bucket_bounds(values)
    rows = max((height or len(order) + FRAME_LINES) - FRAME_LINES, 1)
    top = 0
    if cursor is not None and cursor in order and len(order) > rows:
        top = min(max(order.index(cursor) - rows // 2, 0), len(order) - rows)
    visible = order[top : top + rows]
    text = Text()
    more = f" (+{len(step_ids) - len(shown)} more)" if len(step_ids) > len(shown) else ""
    where = shown_ranks(visible, len(order)) if len(visible) < len(order) else ""
    span = f"steps {shown[0]}…{shown[-1]}" if len(shown) > 1 else (f"step {shown[0]}" if shown else "steps")
    text.append(f"  rank  {span}{more}{where}\n", style="bold")
    cells = {(r, s): v for r, s, v in steps.select("rank", "step", column).iter_rows()}
    unknown = False  # a step the rank ran whose figure is not known (a wait not measured): "?"
    for rank in visible:
        text.append("›" if rank == cursor else " ", style="bold")
        text.append(f"{rank:>5}  ")
        own = []
        for step in shown:
            value = cells.get((rank, step))
            if value is None:
                known_step = (rank, step) in cells
                unknown = unknown or known_step
                text.append("?" if known_step else " ", style="dim")
                continue
            own.append(value)
            level = sum(value > b for b in bounds)
            text.append(SHADES[level], style=SHADE_STYLES[level])
        mean = sum(own) / len(own) if own else None
        text.append(f"  {fmt_us(mean):>11}")
        text.append("  ◀ straggler" if rank in stragglers else "", style="bold")
        text.append("\n")
    text.append(f" {shade_label(column)} per step: ", style="dim")
    labels = bound_labels(bounds)
    for level in range(len(bounds) + 1 if values.len() or not unknown else 0):
        upper = f"≤{labels[level]}" if level < len(bounds) else (f">{labels[-1]}" if labels else "all")
        text.append(SHADES[level], style=SHADE_STYLES[level])
        text.append(f" {upper}  ", style="dim")
    if unknown:
        text.append("? unknown", style="dim")
    return text


def shown_ranks(visible: list[int], total: int) -> str:
    """Which ranks the grid shows when not all fit, by their ids (issue 34: ``ranks 1-6 of 8`` over
    ranks 0-5 read as ids): `` · ranks 2–7 shown, 8 in all``; in another order, the ids listed."""
    if visible == list(range(visible[0], visible[-1] + 1)):
        ids = f"ranks {visible[0]}–{visible[-1]}"
    else:
        ids = "ranks " + ", ".join(str(rank) for rank in visible)
    return f" · {ids} shown, {total} in all"


def _short(us: float, digits: int = 1) -> str:
    """A legend bound in few characters: ``13.1ms``, ``850us``, ``1.2s``."""
    if us >= 1e6:
        return f"{us / 1e6:.{digits}f}s"
    return f"{us / 1e3:.{digits}f}ms" if us >= 1e3 else f"{us:.{max(digits - 1, 0)}f}us"


class RankGrid(Static):
    """The grid widget; :meth:`show` re-renders it for a shading column, :meth:`follow` for the
    ranks table's rows and cursor."""

    DEFAULT_CSS = "RankGrid { height: auto; }"

    def __init__(self, steps: pl.DataFrame, stragglers: list[int], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps = steps
        self.stragglers = stragglers
        self.column = "wait_us" if "wait_us" in steps.columns else "duration_us"
        self.ranks: list[int] | None = None
        self.cursor: int | None = None

    def on_mount(self) -> None:
        self.show(self.column)

    def on_resize(self) -> None:
        self.show(self.column)

    def follow(self, ranks: list[int], cursor: int | None) -> None:
        """Show ``ranks`` in this order, scrolled to ``cursor`` (the ranks table's rows and cursor)."""
        if ranks != self.ranks or cursor != self.cursor:
            self.ranks, self.cursor = ranks, cursor
            self.show(self.column)

    def show(self, column: str) -> None:
        self.column = column
        screen_height = self.screen.size.height if self.is_attached else 0
        # two thirds of what the header, the table's frame, details line and footer leave (12 lines)
        height = max((screen_height - 12) * 2 // 3, FRAME_LINES + 3) if screen_height else None
        self.update(
            grid_text(self.steps, self.stragglers, column, self.size.width or 80, self.ranks, height, self.cursor)
        )
