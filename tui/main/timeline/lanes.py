"""The Timeline's lanes on screen: each lane's cells for a window of time (glyphs and colours per
event kind, names inside wide events, the search's matches and the critical path marked), how many
screen lines each lane gets, and the next event matching a search across lanes.

Pure drawing over :class:`~profview.analysis.tables.lanes.Lane`: no widget, so a redraw's cost can be
measured alone (``benchmarks/timeline_redraw.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from ....analysis.tables.lanes import Lane
from ....sanitize import clean

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the first screen draws no chart (profview.lazy_numpy)
    from .... import lazy_numpy as np

LABEL = 12
#: (character, colour) per lane kind and event style (see Lane.style).
STYLES = {
    ("cpu", 0): ("█", "#6cb6c4"),
    ("cpu", 1): ("▚", "#57ab5a"),
    ("gpu", 0): ("█", "#4c9be8"),
    ("gpu", 1): ("▓", "#e8a33c"),
    ("gpu", 2): ("▒", "#c97bd6"),
    ("gpu", 3): ("░", "#e5534b"),
}
LABEL_STYLE = "bold #ffffff on #2d4f73"
#: The cells of an event on the critical path, once ``c`` marked it (a glyph: it reads under NO_COLOR).
PATH_GLYPH = "◆"
#: Events matching the "/" search: underlined (it reads under NO_COLOR too) on amber.
MATCH_STYLE = "bold underline #000000 on #ffd75f"
DRAW_ORDER = {"cpu": (0, 1), "gpu": (2, 1, 0, 3)}


def draw_lane(
    lane: Lane,
    names: list[str],
    lo: float,
    hi: float,
    width: int,
    matched: np.ndarray | None = None,
    on_path: np.ndarray | None = None,
    named: bool = True,
) -> Text:
    """One lane's cells for the window [lo, hi): the events' characters, names inside wide ones
    (``named`` False: none, for the further lines of a tall lane);
    ``matched`` (per name index): the cells of matching events are drawn in :data:`MATCH_STYLE`;
    ``on_path`` (a mask over the lane's events): theirs are drawn with :data:`PATH_GLYPH`."""
    span = (hi - lo) / width
    window = lane.visible(lo, hi)
    starts, ends, styles = lane.start[window], lane.end[window], lane.style[window]
    cells = np.full(width, -1, dtype=np.int64)  # the style drawn in each cell (-1: empty)
    first = np.clip(np.floor((starts - lo) / span).astype(np.int64), 0, width - 1) if len(starts) else starts
    last = np.clip(np.ceil((ends - lo) / span).astype(np.int64), 1, width) if len(starts) else ends
    last = np.maximum(last, first + 1) if len(starts) else last
    for style in DRAW_ORDER[lane.kind]:  # later styles win a shared cell: kernels over memsets
        pick = styles == style
        if not pick.any():
            continue
        marks = np.zeros(width + 1, dtype=np.int64)
        np.add.at(marks, first[pick], 1)
        np.add.at(marks, last[pick], -1)
        cells[np.cumsum(marks)[:width] > 0] = style
    chars = [" "] * width
    colours = [""] * width
    for style in np.unique(cells[cells >= 0]).tolist():
        char, colour = STYLES[(lane.kind, style)]
        for i in np.flatnonzero(cells == style).tolist():
            chars[i], colours[i] = char, colour
    if on_path is not None and len(starts):
        marked = on_path[window]
        for a, b in zip(first[marked].tolist(), last[marked].tolist(), strict=True):
            for i in range(a, b):
                chars[i] = PATH_GLYPH
    if matched is not None and len(starts):
        hit = matched[lane.names[window]]
        if hit.any():
            marks = np.zeros(width + 1, dtype=np.int64)
            np.add.at(marks, first[hit], 1)
            np.add.at(marks, last[hit], -1)
            for i in np.flatnonzero(np.cumsum(marks)[:width] > 0).tolist():
                colours[i] = MATCH_STYLE
                if chars[i] == " ":
                    chars[i] = "█"
    wide = np.flatnonzero(last - first >= 8) if named else np.array([], dtype=np.int64)  # room for a name
    for k in wide[:width].tolist():
        name = clean(names[int(lane.names[window][k])])
        room = int(last[k] - first[k]) - 1
        for offset, ch in enumerate(name[:room]):
            cell = first[k] + offset
            chars[cell] = ch
            colours[cell] = MATCH_STYLE if colours[cell] == MATCH_STYLE else LABEL_STYLE
    out = Text()
    run_start = 0
    for i in range(1, width + 1):
        if i == width or colours[i] != colours[run_start]:
            out.append("".join(chars[run_start:i]), style=colours[run_start])
            run_start = i
    return out


#: The most screen lines one lane takes when there is room to spare (issue 34: lanes fill the height).
MAX_LANE_ROWS = 3


def lane_rows(kinds: list[str], room: int) -> list[int]:
    """Screen lines of each lane (``kinds``: ``cpu``/``gpu``, in order) in ``room`` lines: one each
    while the lanes outnumber the lines, else the lines shared out, the odd ones to the GPU lanes
    first, at most :data:`MAX_LANE_ROWS` each."""
    lanes = len(kinds)
    if lanes == 0 or lanes >= room:
        return [1] * min(lanes, max(room, 1))
    each, odd = divmod(room, lanes)
    order = sorted(range(lanes), key=lambda i: (kinds[i] != "gpu", i))
    extra = set(order[:odd])
    return [min(MAX_LANE_ROWS, each + (index in extra)) for index in range(lanes)]



def next_match(
    lanes: list[Lane], matched: np.ndarray, here: tuple[float, int], direction: int
) -> tuple[int, int] | None:
    """The matching event after (``direction`` 1) or before (-1) ``here`` = (start, lane), ordered by
    (start, lane); wrapping around the trace.  Returns (lane, position) or None."""
    best: tuple[float, int, int] | None = None
    wrap: tuple[float, int, int] | None = None
    for index, lane in enumerate(lanes):
        hits = np.flatnonzero(matched[lane.names])
        if not len(hits):
            continue
        starts = lane.start[hits]
        if direction > 0:
            after = (starts > here[0]) | ((starts == here[0]) & (index > here[1]))
            pick = np.flatnonzero(after)
            candidate = (float(starts[pick[0]]), index, int(hits[pick[0]])) if len(pick) else None
            first = (float(starts[0]), index, int(hits[0]))
            if candidate is not None and (best is None or candidate[:2] < best[:2]):
                best = candidate
            if wrap is None or first[:2] < wrap[:2]:
                wrap = first
        else:
            before = (starts < here[0]) | ((starts == here[0]) & (index < here[1]))
            pick = np.flatnonzero(before)
            candidate = (float(starts[pick[-1]]), index, int(hits[pick[-1]])) if len(pick) else None
            last = (float(starts[-1]), index, int(hits[-1]))
            if candidate is not None and (best is None or candidate[:2] > best[:2]):
                best = candidate
            if wrap is None or last[:2] > wrap[:2]:
                wrap = last
    chosen = best or wrap
    return None if chosen is None else (chosen[1], chosen[2])


#: The caption's word for each lane kind and event style of :data:`STYLES`.
LEGEND = {
    ("cpu", 0): "op",
    ("cpu", 1): "runtime",
    ("gpu", 0): "kernel",
    ("gpu", 1): "memcpy",
    ("gpu", 2): "memset",
    ("gpu", 3): "comm",
}
