"""NO_COLOR (no-color.org): the screen keeps only bold, underline and reverse, no colour at all.

Textual's own answer to NO_COLOR is a greyscale filter, which still writes 256-colour and
truecolour SGRs; :class:`PlainStyles` replaces it and drops every colour and every other attribute.
"""

from __future__ import annotations

from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import LineFilter, Monochrome, NoColor


@lru_cache(1024)
def plain_style(style: Style) -> Style:
    """``style`` with bold, underline and reverse kept (reverse marks the cursor), nothing else."""
    return Style(bold=bool(style.bold), underline=bool(style.underline), reverse=bool(style.reverse))


class PlainStyles(LineFilter):
    """Every segment's style reduced to :func:`plain_style`."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            Segment(text, None if style is None else plain_style(style), control)
            for text, style, control in segments
        ]


def no_color_filters(filters: list[LineFilter]) -> list[LineFilter]:
    """An app's line filters under NO_COLOR: Textual's colour filters out, :class:`PlainStyles` last."""
    return [f for f in filters if not isinstance(f, (Monochrome, NoColor))] + [PlainStyles()]


__all__ = ["PlainStyles", "no_color_filters", "plain_style"]
