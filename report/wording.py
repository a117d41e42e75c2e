"""Small wording rules shared by the reports and the viewer: plurals, names cut to fit."""

from __future__ import annotations

from collections.abc import Callable

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


def _shared_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    size = min(len(a), len(b))
    at = 0
    while at < size and a[at] == b[at]:
        at += 1
    return at


def _telling_cut(text: str, width: int, parts: list[int]) -> str:
    """``text`` in at most ``width`` characters as windows around the positions in ``parts`` (where
    it parts from names it would otherwise read like), earliest first, joined by ``…``."""
    count = max(1, min(len(parts), width // 9))
    size = (width - count - 1) // count
    if size < 3:
        return middle_cut(text, width)
    pieces: list[str] = []
    end = 0
    for at in parts[:count]:
        begin = min(max(end, at - size // 3), max(end, len(text) - size))
        if begin > end or (begin == 0 and end == 0 and at > size):
            pieces.append(ELLIPSIS)
        pieces.append(text[begin : begin + size])
        end = begin + size
        if end >= len(text):
            break
    if end < len(text):
        pieces.append(ELLIPSIS)
    shown = "".join(pieces)
    return shown if len(shown) <= width else middle_cut(text, width)


def telling_cuts(names: list[str], width: int, cut: Callable[[str, int], str] = middle_cut) -> list[str]:
    """Each name cut to ``width`` by ``cut``, except that names the cut would show alike keep the
    parts where they differ: of ``void cudnn::batchnorm_bwtr_nhwc_semiPersist<…, 1, 1, true, 2>``,
    its ``…, 1, 0, true, 2>`` sibling and the ``fwtr`` pair, each reads
    ``…3, 4, 1, 1, true, 2>(cudnn::…``.  Where even that cannot tell them apart, or it would read
    like another row, the plain cut stays (never a loop).  A group of names that read alike is
    compared pairwise up to :data:`TELLING_GROUP` names, beyond that each with its neighbours in
    sorted order."""
    shown = [cut(name, width) for name in names]
    groups: dict[str, list[int]] = {}
    for index, text in enumerate(shown):
        groups.setdefault(text, []).append(index)
    taken = set(groups)  # a telling cut may not read like another row's cut
    room = max(1, width // 9 - 1)  # the windows beside the start
    choices: tuple[Callable[[list[int]], list[int]], ...] = (
        lambda at: [0, *at],
        lambda at: [0, *at[-room:]],
        lambda at: at,
    )
    for members in groups.values():
        distinct = sorted({names[i] for i in members})
        if len(distinct) < 2:
            continue
        parts: dict[str, list[int]] = {}
        for order, name in enumerate(distinct):
            others = distinct if len(distinct) <= TELLING_GROUP else distinct[max(0, order - 1) : order + 2]
            parts[name] = sorted({_shared_prefix(name, other) for other in others if other != name})
        # the name's start first (its family: ``sm90_xmma_wgrad``) with its first parting places, or
        # with its last ones; else the parting places alone
        for choose in choices:
            telling = {name: _telling_cut(name, width, choose(at)) for name, at in parts.items()}
            if len(set(telling.values())) == len(telling) and not taken & set(telling.values()):
                for i in members:
                    shown[i] = telling[names[i]]
                break
    return shown


#: The most names reading alike that :func:`telling_cuts` compares pairwise.
TELLING_GROUP = 32


def head_cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, its start kept (a C++ signature's telling part)."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS if width > 0 else ""


__all__ = ["head_cut", "middle_cut", "plural", "telling_cuts"]
