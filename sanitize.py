"""Make text from a trace safe to show in a terminal or a spreadsheet.

Trace names are data, never instructions: control characters, ANSI/OSC escape sequences and bidi
overrides are replaced by visible placeholders before anything reaches the screen.  (Rich/Textual
markup is neutralised where text is rendered: profview builds ``rich.text.Text`` objects, never
markup strings, from trace data.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

# C0 and C1 controls (tab kept out too: it breaks table layout), DEL, and the Unicode bidi
# controls that can reorder what a terminal shows.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _placeholder(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else f"\\u{ord(match.group()):04x}"


def clean(text: object) -> str:
    """``text`` as a single printable line: escape sequences shown as ``␛[...]``, controls as ``\\xNN``."""
    value = "" if text is None else str(text)
    if not _UNSAFE.search(value):
        return value
    value = _ESCAPE_SEQUENCE.sub(lambda m: "␛" + _UNSAFE.sub(_placeholder, m.group()[1:]), value)
    return _UNSAFE.sub(_placeholder, value)


def clean_column(column: str) -> pl.Expr:
    """A Polars expression: the text column made inert for display (ESC shown as ␛, other controls as �)."""
    import polars as pl

    return (
        pl.col(column)
        .cast(pl.String)  # a Categorical column is text too
        .str.replace_all("\x1b", "␛", literal=True)
        .str.replace_all(_UNSAFE.pattern, "\ufffd")
    )


def is_formula(text: str) -> bool:
    """Whether a spreadsheet would run this cell as a formula."""
    return text.startswith(FORMULA_START)
