"""What ``profview diff`` writes with ``--view V -o OUT``, for two traces as for two memory
snapshots: the target checked before the work, then the view refined, written and said."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .output import say_written

if TYPE_CHECKING:
    import polars as pl


def check_diff_target(out: str, inputs: tuple[str, ...], force: bool) -> None:
    """A one-line error, before any file is read, for an output format profview does not write or
    a target that would overwrite a file (an input, or one there without ``--force``)."""
    from ..report.export import check_target, export_format

    export_format(out)
    if out != "-":
        check_target(out, inputs=inputs, overwrite=force)


def write_diff_view(
    frame: pl.DataFrame,
    out: str,
    inputs: tuple[str, ...],
    *,
    pattern: str | None,
    sort: str | None,
    ascending: bool,
    top: int | None,
    force: bool,
    raw_formulas: bool,
) -> None:
    """``frame`` filtered, sorted and cut as ``--filter/--sort/--asc/--top`` say, written to ``out``
    (``-``: CSV on stdout) and the ``wrote N rows`` line said."""
    from ..profiles.views import refine
    from ..report.export import write_table

    refined = refine(frame, pattern=pattern, sort=sort, ascending=ascending, top=top)
    written = write_table(refined, out, inputs=inputs, overwrite=force, raw_formulas=raw_formulas)
    sys.stdout.flush()
    say_written(written, refined.height, refined.width)
