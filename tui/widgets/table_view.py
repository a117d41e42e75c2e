"""A filterable, sortable table over a Polars frame (textual-fastdatatable underneath).

Over ~400 lines: the cells, the column order (user order, distinguishing and leading columns, the
sorted column kept on screen), the status line and the details line must agree on one displayed
frame, which this one widget owns; the pure parts are already apart (:mod:`.row_details`,
:mod:`.cells`, :mod:`.frame_sort`, :mod:`.whole_columns`).

What is on screen is always ``views.refine(frame, pattern, sort, ascending)``: the export writes
that same frame, so the CSV equals the screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from ...errors import ProfviewError
from ...frames import fmt_us
from ...profiles.views import filter_column, refine
from ...report.wording import head_cut, middle_cut, plural, telling_cuts
from ...sanitize import clean, clean_column
from ..keymap import bindings
from ..messages import DrillRequested, TableShown
from .cells import MARK_COLUMNS, PERCENT_COLUMNS, percent_or_dash
from .frame_sort import frame_sort
from .row_details import details_text

if TYPE_CHECKING:  # the table widget (and pyarrow under it) is imported when a first table is built
    from textual_fastdatatable import DataTable

NAME_WIDTH = 70
#: Long text columns that go after the figures (issue 22: figures before text at 80 columns).
TRAILING_TEXT = ("op_chain", "python_stack")
#: Columns that tell apart rows of one name (a kernel's launch shapes, an operator's input shapes, the
#: frame a launch came from): right after the name where names repeat (issue 34: at 80 columns a
#: kernel's launch rows all read ``aten::cudnn_batch_norm 3 212.387…``, ``launched_from`` off screen).
DISTINGUISHING = ("launched_from", "input_dims", "grid", "block")
#: Per view whose rows are not led by their name: the columns that lead on screen (in this order),
#: how many of them stay put when scrolling right, and the columns that go last.  A graph's nodes:
#: the node and its kernel stay, its GPU time, replays and how it was attributed come next (as a
#: kernel's figures follow its name); ``graph`` (one value: the breadcrumb names it) goes last.
LEADING: dict[str, tuple[tuple[str, ...], int, tuple[str, ...]]] = {
    "graph_nodes": (("node", "name", "device_us", "replays", "how"), 2, ("graph",)),
    # an operator through the capture: its module tells two rows of one name apart, its time next
    "graph_ops": (("name", "module", "device_us", "pct", "calls"), 1, ()),
    # the figures a user reads first beside the name at 80 columns: a kernel's share, an operator's
    # GPU time and calls (the kind, a word of up to 15 letters, after the figures)
    "kernels": (("name", "calls", "total_us", "pct"), 1, ()),
    "ops": (("name", "device_total_us", "calls", "device_self_us", "host_total_us", "host_self_us"), 1, ()),
    # figures first, shapes last (docs/efficiency.md): calls, time, TFLOP/s and % of roof at 80 columns
    "efficiency": (("name", "calls", "kernel_us", "tflops_s", "pct_of_roofline", "tb_s", "bound"), 1, ()),
    # a GEMM kernel's verdict and share beside its name; a kernel's launch delays beside its name
    "tensor_cores": (("name", "tensor_cores", "precision", "pct", "total_us", "calls"), 1, ()),
    "launch_names": (("name", "launches", "delay_median_us", "delay_p90_us", "delay_max_us", "short_kernels"), 1, ()),
}
#: Views whose figures come before the columns telling a repeated name apart (the details line has them).
FIGURES_FIRST = frozenset({"efficiency"})
#: What the filtered rows' time is a share of, per view (else the column's name).
SHARE_OF = {"kernels": "kernel time", "ops": "device self time"}
WIDE_NAME_WIDTH = 160  # the most a name column gets when the other columns leave room for it
ROW = "__profview_row"  # a row number carried through refine() to pick the formatted cells


def fixed3(values: pl.Series) -> pl.Series:
    """Floats as 3-decimal numbers by the one rounding rule of the viewer, the details line and the
    CSV: the float's exact value rounded to the nearest nanosecond (Python's and the CSV writer's
    ``%.3f``), not Polars' ``round`` (which scales first: 6633.7935 → 6633.794, where the float
    is 6633.79349999… → 6633.793)."""
    text = [None if v is None or v != v or v in (float("inf"), float("-inf")) else f"{v:.3f}" for v in values]
    return pl.Series(values.name, text, dtype=pl.String).cast(pl.Decimal(38, 3), strict=False)


def display_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame as cells: text made inert, floats with 3 decimals (the nanosecond)."""
    exprs: list[pl.Expr | pl.Series] = []
    for column, dtype in frame.schema.items():
        if dtype in (pl.String, pl.Categorical):  # Categorical: the events' repeated text (input_dims)
            exprs.append(clean_column(column))
        elif column in PERCENT_COLUMNS and dtype.is_numeric():
            exprs.append(percent_or_dash(frame[column]))
        elif dtype.is_float():
            # Fixed 3 decimals (the nanosecond), never scientific notation.
            exprs.append(fixed3(frame[column]))
        elif dtype == pl.Boolean and column in MARK_COLUMNS:
            exprs.append(pl.col(column).replace_strict({True: "!", False: ""}, default="", return_dtype=pl.String))
        elif dtype == pl.Boolean:  # issue 34: words, not the widget's "✓ True" / "X False"
            exprs.append(pl.col(column).replace_strict({True: "yes", False: "no"}, return_dtype=pl.String))
        elif dtype.is_integer():
            exprs.append(pl.col(column))
        else:
            exprs.append(pl.col(column).cast(pl.String))
    return frame.select(exprs)


def cell_widths(cells: pl.DataFrame, name_width: int) -> dict[str, int]:
    """How wide each column is drawn: its header or its longest cell (the first 1,000 rows), capped."""
    if not cells.width:
        return {}
    sample = cells.head(1000).select(pl.all().cast(pl.String).str.len_chars().max().fill_null(1))
    lengths = sample.row(0, named=True) if cells.height else {}
    return {c: min(max(len(c), lengths.get(c) or 1), name_width) + 2 for c in cells.columns}


def visible_columns(cells: pl.DataFrame, columns: list[str], name_width: int, width: int) -> list[str]:
    """The columns of ``columns`` (in that order) that fit in ``width`` cells, the first always."""
    widths = cell_widths(cells, name_width)
    shown: list[str] = []
    used = 0
    for column in columns:
        used += widths.get(column, len(column) + 2)
        if shown and used > width:
            break
        shown.append(column)
    return shown


def text_width(cells: pl.DataFrame, width: int) -> int:
    """The widest a column may be: names get what the other columns leave of the screen.

    At 80 columns that is 28 cells (so a few numbers fit beside a name); on a wide terminal the
    name column grows until the row fills the screen.
    """
    narrow = min(NAME_WIDTH, max(28, width - 50))
    name = filter_column(cells)
    if name is None or not cells.height:
        return narrow
    sample = cells.head(1000).select(pl.all().cast(pl.String).str.len_chars().max().fill_null(1))
    lengths = sample.row(0, named=True)
    others = sum(min(max(len(c), lengths[c] or 1), narrow) + 2 for c in cells.columns if c != name)
    return max(narrow, min(WIDE_NAME_WIDTH, width - others - 4))


def middle_cut_names(cells: pl.DataFrame, width: int, column: str | None = None) -> pl.DataFrame:
    """``cells`` with the name column's longer values cut in the middle to ``width`` (both ends kept:
    ``autograd::engine::evaluate_fu…MmBackward0``), as :func:`profview.report.wording.middle_cut`
    does, so that rows sharing a long prefix stay apart; the table would cut their ends.  The
    displayed frame keeps the whole names (details line, copy, export); a C++ signature is left to
    the table's own cut at its end."""
    name = column or filter_column(cells)
    if name is None or width < 3 or cells.schema[name] != pl.String:
        return cells
    tail = (width - 1) // 2
    head = width - 1 - tail
    values = pl.col(name)
    cut = values.str.head(head) + "…" + values.str.tail(tail)
    # A C++ signature (``void cudnn::batchnorm_bwtr…<__half, float>)``) keeps its head: its tail is
    # template arguments that many kernels share, its head the name that tells them apart.
    signature = values.str.contains("<", literal=True) | values.str.contains("(", literal=True)
    long = (values.str.len_chars() > width) & ~signature
    over = values.str.len_chars() > width
    shown = pl.when(long).then(cut).when(over).then(values.str.head(width - 1) + "…").otherwise(values)
    alike = pl.col(name).n_unique().over(shown) > 1
    rows = cells.with_row_index(TELLING_ROW).filter(alike).select(TELLING_ROW, name)
    cells = cells.with_columns(pl.when(long).then(cut).otherwise(values).alias(name))
    if not rows.height or rows.height > TELLING_MAX_ROWS:
        return cells
    # rows the cut would show alike keep the part where their names differ
    telling = telling_cuts(rows.get_column(name).to_list(), width, cut=_shown_cut)
    update = pl.DataFrame({TELLING_ROW: rows.get_column(TELLING_ROW), name: telling})
    return cells.with_row_index(TELLING_ROW).update(update, on=TELLING_ROW).drop(TELLING_ROW)


#: The working column of :func:`middle_cut_names` (never shown).
TELLING_ROW = "__telling_row"
#: The most rows that read alike once cut whose telling parts are looked for (each is a Python
#: string walk; beyond this the plain cut stays, and the details line has each whole name).
TELLING_MAX_ROWS = 20_000


def _shown_cut(text: str, width: int) -> str:
    """The cut :func:`middle_cut_names` gives one name: a C++ signature keeps its head."""
    return head_cut(text, width) if "<" in text or "(" in text else middle_cut(text, width)


def telling_width(name_width: int, width: int) -> int:
    """The widest a column telling rows of one name apart (input shapes, a launch's frame) is drawn:
    what the name and two figures leave of the screen, at least 16 (its whole text is in the details)."""
    return max(16, min(name_width, width - name_width - 36))


def cut_telling(cells: pl.DataFrame, width: int) -> pl.DataFrame:
    """``cells`` with the text columns of :data:`DISTINGUISHING` cut in the middle to ``width``."""
    for column in DISTINGUISHING:
        if column in cells.columns and cells.schema[column] == pl.String:
            cells = middle_cut_names(cells, width, column)
    return cells


def repeats(frame: pl.DataFrame) -> bool:
    """Whether a name repeats among ``frame``'s rows (a kernel by launch shape, an operator by input
    shapes): then the columns of :data:`DISTINGUISHING` follow the name."""
    name = filter_column(frame)
    return name is not None and frame.height > 1 and frame.get_column(name).n_unique() < frame.height


def distinguishing_first(frame: pl.DataFrame, columns: list[str]) -> list[str]:
    """``columns`` with those of :data:`DISTINGUISHING` moved right after the first (the name) when
    the name repeats in ``frame``: the column that tells the rows apart is on screen at 80 columns."""
    name = filter_column(frame)
    if not columns or name is None or columns[0] != name or frame.height < 2:
        return columns
    if frame.get_column(name).n_unique() == frame.height:
        return columns
    telling = [c for c in DISTINGUISHING if c in columns[1:]]
    return [columns[0], *telling, *(c for c in columns[1:] if c not in telling)]


class FrameView(Vertical):
    """A table with a status line (rows, filter and the filtered rows' time, sort, hidden columns)
    that posts DrillRequested on Enter; ``-`` hides the column under the cursor, ``+`` shows them
    all again, ``<``/``>`` move it left/right (the name column stays first)."""

    BINDINGS = bindings("table")

    DEFAULT_CSS = """
    FrameView { height: 1fr; }
    FrameView > .status { height: 1; }
    FrameView > DataTable { height: 1fr; }
    FrameView > .details { height: auto; max-height: 10; border-top: solid $panel; }
    """

    def table_class(self) -> type[DataTable]:
        """The table widget class: the whole-row cursor table (tui/widgets/row_cursor.py); compare
        mode's colours its change glyphs (tui/compare/change_table.py).  A method, not a class
        attribute, so the table widget's module (textual_fastdatatable, which imports pyarrow) is
        imported when a first table is built, not with the viewer: the Overview has no table."""
        from .row_cursor import RowCursorTable

        return RowCursorTable

    def __init__(
        self,
        view: str,
        frame: pl.DataFrame | None = None,
        *,
        id: str | None = None,
        deferred: bool = False,
        source: Callable[[], pl.DataFrame] | None = None,
        empty_note: str | None = None,
    ) -> None:
        """``deferred``: the table is built when first focused (a pane not on screen yet),
        from ``source()`` where given (the frame is then computed only if the pane is shown);
        ``empty_note``: why the view has no row, said on its status line when it has none."""
        super().__init__(id=id)
        self.empty_note = empty_note
        self._deferred = deferred
        self._source = source if deferred else None
        self.view = view
        self.base = frame if frame is not None else pl.DataFrame()
        self.pattern = ""
        self.sort: str | None = None
        self.ascending = False
        self.displayed = self.base
        self._cells: pl.DataFrame | None = None  # display_frame(self.base), made once per frame
        self._generation = 0
        self._table: DataTable | None = None
        self._name_width = 0  # the name column's width limit the table was built with (issue 13)
        self.hidden: set[str] = set()  # issue 22: columns hidden with "-"
        self.order: list[str] | None = None  # issue 22: the column order after "<" / ">" (None: the frame's)
        self._shown: list[str] = []  # the columns on screen, in their order
        self._name_lines: tuple[object, int] = (None, 0)  # ((generation, column, width), lines)

    def compose(self) -> ComposeResult:
        yield Static("", classes="status")
        yield Static("", classes="details")  # the full name and figures of the row under the cursor

    def on_mount(self) -> None:
        if not self._deferred:
            self.rebuild()

    def set_frame_source(self, source: Callable[[], pl.DataFrame]) -> None:
        """The frame ``source()`` gives: now for a built table, when its pane is first shown for a deferred one."""
        if self._deferred:
            self._source = source
        else:
            self.set_frame(source())

    def ensure_built(self) -> None:
        """Build a deferred table now (its pane is shown)."""
        if not self._deferred:
            return
        if self._source is not None:
            self.set_frame(self._source())  # kept while deferred
        self._deferred = False
        if self.is_attached:  # else on_mount builds it
            self.rebuild()

    @property
    def table(self) -> DataTable | None:
        """The table widget on screen (the newest; older ones are being removed)."""
        return self._table

    def set_frame(self, frame: pl.DataFrame) -> None:
        """Show a new frame, keeping the filter, the sort and the cursor's row (by name, if still there)."""
        name = self.current_name_raw()
        self.base = frame
        self._cells = None
        if self.sort not in frame.columns:
            self.sort = None
        if self._deferred:  # built from this frame when its pane is first shown
            self.displayed, self._source = frame, None
            return
        self.rebuild(keep_row=name)

    def counts(self) -> tuple[int, int]:
        """(rows shown, rows in all): the filter bar's count."""
        return self.displayed.height, self.base.height

    def set_filter(self, pattern: str) -> str | None:
        """Filter rows by regex (case-insensitive); return an error text for a bad regex."""
        try:
            refine(self.base.head(0), pattern=pattern)
        except ProfviewError as exc:
            return exc.problem
        self.pattern = pattern
        self.rebuild()
        return None

    def sort_by_cursor(self) -> None:
        """Sort by the column under the cursor; again on the same column reverses."""
        table = self.table
        if table is None or not self.displayed.width:
            return
        column = self.displayed.columns[min(table.cursor_column, self.displayed.width - 1)]
        if column == self.sort:
            self.ascending = not self.ascending
        else:
            self.sort, self.ascending = column, column in ("name", "op", "op_chain", "kind", "step")
        self.rebuild(keep_column=column)

    def current_row(self) -> dict[str, Any] | None:
        """The row under the cursor, from the displayed frame (not the display text)."""
        table = self.table
        if table is None or self.displayed.height == 0:
            return None
        return self.displayed.row(min(table.cursor_row, self.displayed.height - 1), named=True)

    def cells(self) -> pl.DataFrame:
        """The displayed rows as cells: the base frame is formatted once and rows taken from it.

        Columns come in :meth:`column_order`, without the hidden ones: the CSV export of
        ``displayed`` has the columns the screen has."""
        if self._cells is None:
            self._cells = display_frame(self.base)
        columns = self.column_order()
        self._shown = columns
        if not self.pattern and not self.sort:
            self.displayed = self.base.select(columns)
            return self._cells.select(columns)
        numbered = refine(
            self.base.with_row_index(ROW), pattern=self.pattern or None, sort=self.sort, ascending=self.ascending
        )
        self.displayed = numbered.drop(ROW).select(columns)
        return self._cells[numbered[ROW]].select(columns)

    def column_order(self) -> list[str]:
        """The columns on screen: the user's order (else the frame's, long text after the figures),
        less the hidden ones; the sorted column moved next to the name when it would be off screen
        (the frame's own sort: only where the name column leads)."""
        base = list(self.base.columns)
        if self.order is not None and set(self.order) == set(base):
            columns = list(self.order)
        else:
            columns = [c for c in base if c not in TRAILING_TEXT] + [c for c in base if c in TRAILING_TEXT]
        columns = [c for c in columns if c not in self.hidden] or columns[:1]
        if self.order is None and self.view not in FIGURES_FIRST:
            columns = distinguishing_first(self.base, columns)
        leading, frozen, last = LEADING.get(self.view, ((), 1, ()))
        if self.order is None and leading:
            first = [c for c in leading if c in columns]
            if first and first[0] == columns[0] and self.view not in FIGURES_FIRST:  # telling columns stay beside it
                first[1:1] = [c for c in columns[1:] if c in DISTINGUISHING and columns.index(c) <= len(DISTINGUISHING)
                              and c not in first and repeats(self.base)]
            rest = [c for c in columns if c not in first and c not in last]
            columns = first + rest + [c for c in last if c in columns]
        sort = self.sort_column()
        # A sort the user chose always; the frame's own sort only in a table led by its name column
        # (a table that leads with an id, as the job's collectives, keeps the layout it was given).
        own = frame_sort(self.view, self.base)
        led = bool(columns) and columns[0] == filter_column(self.base)
        movable = self.sort is not None or (led and own is not None and own.movable)
        lead = frozen  # the sorted column goes after the name and the columns that tell its rows apart
        while lead < len(columns) and columns[lead] in DISTINGUISHING:
            lead += 1
        if movable and sort in columns and self._cells is not None and columns.index(sort) > lead and not self.order:
            width = self.app.size.width if self.is_attached else 200
            name_width = text_width(self._cells, width)
            if sort not in visible_columns(self._cells, columns, name_width, width - 2):
                columns.remove(sort)
                columns.insert(lead, sort)
        return columns

    def default_sort(self) -> str | None:
        """The column the frame came sorted by, as the status line names it (:mod:`.frame_sort`:
        the order the frame is made in, where it holds; never a guess)."""
        sort = frame_sort(self.view, self.base)
        return sort.column if sort is not None else None

    def sort_column(self) -> str | None:
        return self.sort or self.default_sort()

    # -- columns from the keyboard (issue 22) ---------------------------------------------------
    def cursor_column(self) -> str | None:
        table = self.table
        if table is None or not self.displayed.width:
            return None
        return self.displayed.columns[min(table.cursor_column, self.displayed.width - 1)]

    def action_hide_column(self) -> None:
        """-: hide the column under the cursor (not the name column)."""
        column = self.cursor_column()
        if column is None or column == self.displayed.columns[0]:
            self.app.notify("the name column stays (- hides the column under the cursor)", timeout=3)
            return
        self.hidden.add(column)
        self.rebuild()

    def action_show_columns(self) -> None:
        """+: show the hidden columns again."""
        if self.hidden:
            self.hidden.clear()
            self.rebuild()

    def action_move_column(self, delta: int) -> None:
        """< / >: move the column under the cursor left / right (the name column stays first)."""
        column = self.cursor_column()
        if column is None:
            return
        order = [c for c in (self.order or self._shown + [c for c in self.base.columns if c not in self._shown])]
        at = order.index(column)
        to = at + delta
        if at == 0 or to < 1 or to >= len(order):
            return
        order[at], order[to] = order[to], order[at]
        self.order = order
        self.rebuild(keep_column=column)

    def rebuild(self, keep_column: str | None = None, keep_row: object = None, row: int = 0) -> None:
        """Recompute the displayed frame (``views.refine`` of the base) and replace the table widget.

        The cursor goes to ``keep_column`` (else the old cursor's column) and to the row whose name is
        ``keep_row`` (else row ``row``); once the new table is laid out it is scrolled so that the
        cursor's cell is on screen (issue 13: a sort by a right-hand column keeps it in view).
        """
        cells = self.cells()
        old = self.table
        column = 0
        if keep_column and keep_column in self.displayed.columns:
            column = self.displayed.columns.index(keep_column)
        elif old is not None:
            column = old.cursor_column
        name_column = filter_column(self.displayed)
        if keep_row is not None and name_column is not None and self.displayed.height:
            found = self.displayed.get_column(name_column).eq(keep_row).arg_true()
            row = int(found[0]) if found.len() else 0
        if old is not None:
            old.remove()
        self._generation += 1
        width = self.app.size.width if self.is_attached else 200
        self._name_width = text_width(cells, width)
        if self.view in FIGURES_FIRST:  # four figures beside the name at 80 columns
            self._name_width = min(self._name_width, max(20, width - 58))
        cells = middle_cut_names(cells, self._name_width)
        if self.view not in FIGURES_FIRST:
            cells = cut_telling(cells, telling_width(self._name_width, width))
        from textual_fastdatatable import ArrowBackend

        from .whole_columns import WholeColumnsTable

        table = self.table_class()(
            backend=ArrowBackend(cells.to_arrow()),
            cursor_type="cell",
            render_markup=False,
            show_row_labels=False,
            max_column_content_width=self._name_width,
            fixed_columns=max(min(LEADING.get(self.view, ((), 1, ()))[1], cells.width - 1), 0),  # the name stays
            zebra_stripes=True,
            null_rep="-",
            id=f"{self.view}-table-{self._generation}",
        )
        if isinstance(table, WholeColumnsTable):  # issue 34: text is cut with "…", figures left blank
            text = (pl.String, pl.Categorical)
            table.text_columns = frozenset(i for i, dtype in enumerate(self.displayed.dtypes) if dtype in text)
        self._table = table
        had_focus = old is not None and old.has_focus
        self.mount(table, before=self.query_one(".details", Static))
        if had_focus:
            table.focus()
        if self.displayed.width:
            last_row, last_column = max(self.displayed.height - 1, 0), self.displayed.width - 1
            place = {"row": min(row, last_row), "column": min(column, last_column)}
            table.move_cursor(row=place["row"], column=place["column"])
            # The new table has no size yet, so move_cursor could not scroll: again once laid out.
            self.call_after_refresh(self._reveal_cursor, table, place)
        self.query_one(".status", Static).update(self.status_text())
        self.update_details()
        self.post_message(TableShown(self))

    def _reveal_cursor(self, table: DataTable, place: dict[str, int]) -> None:
        if table is self._table and table.is_attached:
            # scrolls the cursor's cell into view (right of the frozen name)
            table.move_cursor(row=place["row"], column=place["column"])

    def _keep_cursor_on_screen(self, table: DataTable) -> None:
        """The row under the cursor stays on screen when the table gets shorter (a pane above it
        grew, the terminal shrank): the job's straggler, chosen before the layout settled."""
        if table is self._table and table.is_attached and table.row_count:
            table.move_cursor(row=table.cursor_row, column=table.cursor_column)

    def on_resize(self) -> None:
        """The name column's width follows the terminal's (rebuilt when its limit changes)."""
        table = self.table
        if table is None or not self.is_attached:
            return
        self.call_after_refresh(self.update_details)  # its lines follow the width
        self.call_after_refresh(self._keep_cursor_on_screen, table)
        if text_width(self.cells(), self.app.size.width) != self._name_width:
            self.rebuild(row=table.cursor_row)

    def current_name_raw(self) -> object:
        """The name-column value of the row under the cursor (None without one)."""
        row, column = self.current_row(), filter_column(self.displayed)
        return None if row is None or column is None else row.get(column)

    def update_details(self) -> None:
        """Show the full name and the figures of the row under the cursor below the table."""
        box = self.query_one(".details", Static)
        width = box.content_size.width or (self.size.width if self.is_attached else 0) or 80
        name = filter_column(self.displayed)
        text = frozenset(c for c, dtype in self.displayed.schema.items() if dtype in (pl.String, pl.Categorical))
        lines = self.name_lines(name, width)
        details = details_text(self.displayed.columns, self.current_row(), name, width, lines, text)
        self.query_one(".details", Static).update(details)

    def name_lines(self, column: str | None, width: int) -> int:
        """Lines the longest name of the table needs in the details line (its height stays put)."""
        key = (self._generation, column, width)
        if self._name_lines[0] != key:
            longest = 0
            if column is not None and self.displayed.height:
                lengths = self.displayed.get_column(column).cast(pl.String).str.len_chars()
                longest = int(lengths.max() or 0)  # type: ignore[arg-type]
            self._name_lines = (key, -(-longest // max(width, 1)))
        return self._name_lines[1]

    def current_name(self) -> str | None:
        """The full name (the filtered column) of the row under the cursor, made printable."""
        row, column = self.current_row(), filter_column(self.displayed)
        if row is None or column is None or row.get(column) is None:
            return None
        return clean(row[column])

    def on_data_table_cell_highlighted(self) -> None:  # not stopped: a drill-down screen listens too
        self.update_details()

    def status_text(self) -> Text:
        """'3 of 78 rows · /gemm/ · 712.300 ms · 27.4% of kernel time · sorted by total_us ↓'."""
        if self.pattern:
            text = Text(f"{self.displayed.height:,} of {plural(self.base.height, 'row')}", style="bold")
            text.append(f" · /{clean(self.pattern)}/")
            text.append_text(self.filtered_time())
        else:
            text = Text(plural(self.displayed.height, "row"), style="bold")
            if not self.base.height and self.empty_note:
                text.append(f" · {self.empty_note}")
        own = frame_sort(self.view, self.base)
        label = f"{self.sort} {'↑' if self.ascending else '↓'}" if self.sort else own.label() if own else None
        if label:
            text.append(f" · sorted by {label}")
            if (self.sort or (own and own.column)) in self.hidden:
                text.append(" (hidden)", style="dim")
        if self.hidden:
            text.append(f" · {plural(len(self.hidden), 'column')} hidden (+ shows)", style="dim")
        return text

    def filtered_time(self) -> Text:
        """' · 712.300 ms · 27.4% of kernel time': the filtered rows' time and its share of all rows'."""
        column = next((c for c in ("total_us", "device_self_us", "duration_us") if c in self.base.columns), None)
        if self.view == "ops" and "device_self_us" in self.base.columns:
            column = "device_self_us"  # nested operators' totals overlap; self times add up
        if column is None or not self.base.schema[column].is_numeric():
            return Text("")
        shown = float(self.displayed[column].sum() or 0.0) if column in self.displayed.columns else None
        if shown is None:  # the column is hidden: summed from the rows all the same
            shown = float(refine(self.base, pattern=self.pattern)[column].sum() or 0.0)
        total = float(self.base[column].sum() or 0.0)
        share = f" · {shown / total * 100:.1f}% of {SHARE_OF.get(self.view, column)}" if total > 0 else ""
        return Text(f" · {fmt_us(shown)}{share}")

    def focus_table(self) -> None:
        self.ensure_built()
        table = self.table
        if table is not None:
            table.focus()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header sorts by it (again: reverse), as s does."""
        event.stop()
        table = self.table
        if table is not None and self.displayed.width:
            table.move_cursor(column=min(event.column_index, self.displayed.width - 1))
            self.sort_by_cursor()

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        row = self.current_row()
        if row is not None:
            self.post_message(DrillRequested(self.view, row))
