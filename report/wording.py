"""Small wording rules shared by the reports and the viewer: plurals, names cut to fit."""

from __future__ import annotations

ELLIPSIS = "…"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 row``, ``2 rows``, ``1,234 steps`` (``many``: an irregular plural)."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def middle_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle so both ends survive
    (``void at::native::…128x128_tn``: rows that share a prefix stay apart)."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return ELLIPSIS
    tail = (width - 1) // 2
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


__all__ = ["middle_cut", "plural"]
