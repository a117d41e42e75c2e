"""Make text from a trace safe to show in a terminal, a spreadsheet, an XML report or a JSON reader.

Trace names are data, never instructions: control characters (C0, C1, DEL), ANSI/OSC escape
sequences, bidi controls, the line and paragraph separators, the code points XML 1.0 forbids
(noncharacters such as U+FFFE) and lone surrogates (the undecodable bytes of a file name, held by
Python as U+DC80-U+DCFF) are replaced by visible placeholders before anything reaches the screen
or a text report: :func:`clean`.  JSON keeps every value exact and is written by one writer,
:func:`json_text`: ASCII only (every other code point a ``\\u`` escape, so no byte of it can act
on a terminal), a file name's undecodable bytes as ``\\xNN`` text, and every number that is not
finite or not an int64 (at any depth) ``null``.  (Rich/Textual markup is neutralised where text is
rendered: profview builds ``rich.text.Text`` objects, never markup strings, from trace data.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

# C0 and C1 controls (tab kept out too: it breaks table layout), DEL, and the Unicode bidi
# controls that can reorder what a terminal shows.
_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff"
    r"\ufdd0-\ufdef\ufffe\uffff\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe"
    r"\U0004ffff\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
    r"\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff\U000dfffe"
    r"\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]"
)
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


#: The largest magnitude of an integer JSON readers hold exactly enough to trust (int64).
JSON_INT_MAX = 2**63 - 1


def _placeholder(match: re.Match[str]) -> str:
    point = ord(match.group())
    if 0xDC80 <= point <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape): the byte
        return f"\\x{point - 0xDC00:02x}"
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def shown_path(path: object) -> str:
    """A file name as text: undecodable bytes (bytes, or ``str`` with surrogate escapes) as ``\\xNN``,
    controls as :func:`clean` shows them."""
    import os

    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return clean(os.fspath(path) if isinstance(path, os.PathLike) else path)


def utf8_text(text: str) -> str:
    """``text`` as valid UTF-8: its lone surrogates (a file name's undecodable bytes) shown as
    :func:`clean` shows them (``\\xNN``), everything else exact."""
    return _SURROGATE.sub(_placeholder, text) if _SURROGATE.search(text) else text


def _json_safe(value: object) -> object:
    """``value`` with every non-finite or out-of-int64 number ``None`` and every text's lone
    surrogates shown as :func:`clean` shows them, at any depth (containers walked without recursion)."""
    import math

    def leaf(item: object) -> object:
        if isinstance(item, bool) or item is None:
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else None
        if isinstance(item, int):
            return item if -JSON_INT_MAX - 1 <= item <= JSON_INT_MAX else None
        if isinstance(item, str):
            return utf8_text(item)
        return item

    root: list[object] = [value]
    stack: list[tuple[object, object]] = [(root, 0)]
    while stack:
        holder, slot = stack.pop()
        item = holder[slot]  # type: ignore[index]
        if isinstance(item, dict):
            copy: dict[object, object] = {}
            for k, v in item.items():
                copy[leaf(k) if isinstance(k, str) else k] = v
            holder[slot] = copy  # type: ignore[index]
            stack.extend((copy, k) for k in copy)
        elif isinstance(item, (list, tuple)):
            items = list(item)
            holder[slot] = items  # type: ignore[index]
            stack.extend((items, i) for i in range(len(items)))
        else:
            holder[slot] = leaf(item)  # type: ignore[index]
    return root[0]


def json_text(document: object, *, indent: int | None = 2) -> str:
    """``document`` as JSON text, the one writer of every JSON profview prints or writes (see the
    module doc): ASCII, no NaN/Infinity or huge number (``null``), with a final newline."""
    import json

    return json.dumps(_json_safe(document), ensure_ascii=True, allow_nan=False, default=str, indent=indent) + "\n"


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
        .str.replace_all(_UNSAFE.pattern.replace("\\ud800-\\udfff", ""), "\ufffd")  # no surrogate in UTF-8
    )


def is_formula(text: str) -> bool:
    """Whether a spreadsheet would run this cell as a formula."""
    return text.startswith(FORMULA_START)
