"""What ``profview diff`` writes with ``--view V -o OUT``, for two traces as for two memory
snapshots: the target checked before the work, then the view refined, written and said."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .output import say_written, stdout_closed

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


@dataclass(frozen=True)
class DiffOutput:
    """Where and how ``profview diff`` writes: ``--view V -o OUT`` and the refining options."""

    out: str | None
    inputs: tuple[str, ...]
    pattern: str | None
    sort: str | None
    ascending: bool
    top: int | None
    force: bool
    raw_formulas: bool


def summary_then_view(
    print_summary: Callable[[], None] | None, view: Callable[[], pl.DataFrame], output: DiffOutput
) -> None:
    """The comparison's summary printed (``--summary``), then its view written (``-o OUT``); a
    closed stdout (``| head``) is the one line it always is."""
    try:
        if print_summary is not None:
            print_summary()
            sys.stdout.flush()
        if output.out is not None:
            write_diff_view(
                view(), output.out, output.inputs, pattern=output.pattern, sort=output.sort,
                ascending=output.ascending, top=output.top, force=output.force, raw_formulas=output.raw_formulas,
            )
    except BrokenPipeError:
        raise stdout_closed() from None
