"""The window arithmetic shared by both timelines (tui/time_window.py): zoom about the cursor,
pan, clamping at both ends of the span, fit.  Each figure is worked out by hand in the test
(cells of 10 µs and so on), and the invariants are checked on random windows by Hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profview.tui.widgets import time_window as tw

SPAN = (0.0, 10_000.0)
CELLS = 100


def test_zoom_in_keeps_the_instant_under_the_cursor() -> None:
    # window 1000..2000 in 100 cells: 10 µs a cell; cursor 30 sits on 1000 + 30.5 * 10 = 1305 µs
    window, cursor = tw.zoom((1000.0, 2000.0), SPAN, CELLS, 30, 0.5, 1.0)
    # half as wide (500 µs, 5 µs a cell), 1305 still 30.5 cells from the start: 1305 - 152.5
    assert window == (1152.5, 1652.5)
    assert cursor == 30
    assert tw.instant(window, CELLS, cursor) == pytest.approx(1305.0)


def test_zoom_out_clamps_at_the_span_start() -> None:
    # cursor 0 at 5 µs; 4x wider = 4000 µs would start at 5 - 0.005 * 4000 = -15: stops at 0
    window, cursor = tw.zoom((0.0, 1000.0), SPAN, CELLS, 0, 4.0, 1.0)
    assert window == (0.0, 4000.0)
    assert cursor == 0  # 5 µs is in the first 40 µs cell


def test_zoom_out_clamps_at_the_span_end() -> None:
    # cursor 99 at 9995 µs; 4000 µs wide would end at 9995 + 0.005 * 4000 = 10015: stops at 10000
    window, cursor = tw.zoom((9000.0, 10_000.0), SPAN, CELLS, 99, 4.0, 1.0)
    assert window == (6000.0, 10_000.0)
    assert cursor == 99  # (9995 - 6000) / 40 = 99.875 cells: the last one


def test_zoom_is_bounded_by_the_span_and_the_minimum_width() -> None:
    assert tw.zoom((2000.0, 3000.0), SPAN, CELLS, 50, 100.0, 1.0)[0] == SPAN  # never wider than the trace
    narrow, _ = tw.zoom((2000.0, 2010.0), SPAN, CELLS, 50, 0.001, 5.0)
    assert narrow[1] - narrow[0] == pytest.approx(5.0)  # never narrower than the minimum
    assert narrow[0] == pytest.approx(2005.05 - 0.505 * 5.0)  # still about the cursor's 2005.05 µs


def test_pan_moves_by_a_fraction_and_stops_at_both_ends() -> None:
    assert tw.pan((4000.0, 5000.0), SPAN, 0.25) == (4250.0, 5250.0)
    assert tw.pan((4000.0, 5000.0), SPAN, -0.25) == (3750.0, 4750.0)
    assert tw.pan((200.0, 1200.0), SPAN, -1.0) == (0.0, 1000.0)  # 1000 µs left asked, 200 µs there
    assert tw.pan((8800.0, 9800.0), SPAN, 1.0) == (9000.0, 10_000.0)


def test_fit_cell_span_and_clamp_start() -> None:
    assert tw.fit(SPAN) == SPAN
    assert tw.fit((5.0, 5.0), 1.0) == (5.0, 6.0)  # a trace of one instant still has a width
    assert tw.cell_span((0.0, 1000.0), CELLS) == 10.0
    assert tw.cell_span((7.0, 7.0), CELLS) == 1.0  # an empty window: no division by zero
    assert tw.clamp_start(9500.0, 1000.0, SPAN) == 9000.0
    assert tw.clamp_start(-3.0, 1000.0, SPAN) == 0.0
    assert tw.clamp_start(4.0, 20_000.0, SPAN) == 0.0  # wider than the span: the span's start
    assert tw.cell_at((0.0, 1000.0), CELLS, 1305.0) == CELLS - 1  # past the window: its last cell


windows = st.tuples(st.floats(0, 10_000), st.floats(0, 10_000)).map(sorted).filter(lambda w: w[1] - w[0] > 1.0)


@given(windows, st.integers(0, CELLS - 1), st.sampled_from([0.5, 2.0, 0.1, 10.0]))
def test_zoom_stays_in_the_span_and_keeps_the_cursor_time_when_not_clamped(
    window: list[float], cursor: int, factor: float
) -> None:
    before = tw.instant((window[0], window[1]), CELLS, cursor)
    zoomed, moved = tw.zoom((window[0], window[1]), SPAN, CELLS, cursor, factor, 0.01 * CELLS)
    assert SPAN[0] <= zoomed[0] <= zoomed[1] <= SPAN[1] + 1e-9
    width = (window[1] - window[0]) * factor
    if 1.0 <= width < SPAN[1] and zoomed[0] > SPAN[0] and zoomed[1] < SPAN[1]:  # neither end stopped it
        # the instant keeps its place: as far into the new window as the cursor's middle is
        assert before - zoomed[0] == pytest.approx((cursor + 0.5) / CELLS * (zoomed[1] - zoomed[0]), abs=1e-6)
        # and the cursor its cell (the one before where the float quotient lands just under it)
        assert moved == cursor or (moved == cursor - 1 and tw.instant(zoomed, CELLS, cursor) == pytest.approx(before))
    else:  # stopped at an end: the cursor's cell is the one whose middle is at or just before it
        assert zoomed[0] <= before <= zoomed[1]
        middle = tw.instant(zoomed, CELLS, moved)
        # (1e-9: an instant exactly on a cell boundary may round into either cell)
        assert middle - 1e-6 <= before < middle + tw.cell_span(zoomed, CELLS) + 1e-9 or moved in (0, CELLS - 1)


@given(windows, st.floats(-2.0, 2.0))
def test_pan_keeps_the_width_and_the_span(window: list[float], fraction: float) -> None:
    start, end = tw.pan((window[0], window[1]), SPAN, fraction)
    assert end - start == pytest.approx(window[1] - window[0])
    assert SPAN[0] - 1e-9 <= start and end <= SPAN[1] + 1e-9
