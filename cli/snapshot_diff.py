"""``profview diff A B`` for two memory snapshots: ``--summary``, or ``--view sites|segments -o OUT``."""

from __future__ import annotations

import sys

from ..errors import ProfviewError
from .output import say_written, stdout_closed


def diff_snapshots(
    before: str, after: str, out: str | None, view: str | None, summary: bool, filter_: str | None,
    sort: str | None, asc: bool, top: int | None, force: bool, raw_formulas: bool,
) -> None:
    """Print the summary and/or write the view; the viewer does not compare snapshots (said)."""
    from ..diff.snapshot_comparison import SNAPSHOT_DIFF_VIEWS, load_snapshot_comparison

    if out is None and not summary:
        raise ProfviewError(None, "two memory snapshots: use --summary, or --view sites|peak|segments -o OUT")
    if view is not None and view not in SNAPSHOT_DIFF_VIEWS:
        raise ProfviewError(None, f"two memory snapshots compare by {', '.join(SNAPSHOT_DIFF_VIEWS)}, not {view!r}")
    if out is not None:
        from ..report.export import check_target, export_format

        export_format(out)
        if out != "-":
            check_target(out, inputs=(before, after), overwrite=force)
    comparison = load_snapshot_comparison(before, after)
    try:
        if summary:
            from ..report.snapshot_diff_summary import print_snapshot_diff_summary

            print_snapshot_diff_summary(comparison, top if top is not None else 10)
            sys.stdout.flush()
        if out is not None:
            from ..profiles.views import refine
            from ..report.export import write_table

            frame = refine(comparison.view(view or "sites"), pattern=filter_, sort=sort, ascending=asc, top=top)
            written = write_table(frame, out, inputs=(before, after), overwrite=force, raw_formulas=raw_formulas)
            sys.stdout.flush()
            say_written(written, frame.height, frame.width)
    except BrokenPipeError:
        raise stdout_closed() from None
