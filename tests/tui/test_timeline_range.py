"""A time range on the Timeline (``{`` at an event's start, ``}`` at a later one's end) gives the
per-name aggregates of that range, Perfetto-style; ``export --view range --range START:END`` writes
the same table.  Witness: the raw events read with the standard library, each one's overlap with
the range summed per name."""

from __future__ import annotations

import csv
from collections import defaultdict

import pytest
from pilot import screen_text, wait_loaded, wait_until
from support import raw_events, run_cli, sample, viewer

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
KINDS = {
    "kernel": "kernel",
    "gpu_memset": "memset",
    "gpu_memcpy": "memcpy",
    "cpu_op": "cpu_op",
    "user_annotation": "user_annotation",
}


def witness(start: float, end: float) -> dict[tuple[str, str], tuple[int, float]]:
    """(kind, name) → (events overlapping [start, end), their time inside it), from the raw JSON."""
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for event in raw_events(GPT2):
        kind = KINDS.get(event.get("cat", ""))
        if kind is None or event.get("ph") != "X":
            continue
        ts, dur = float(event["ts"]), float(event.get("dur", 0))
        if ts < end and ts + dur > start:
            found[(kind, event["name"])].append(min(end, ts + dur) - max(start, ts))
    return {key: (len(times), sum(times)) for key, times in found.items()}


def origin() -> float:
    return min(float(e["ts"]) for e in raw_events(GPT2) if e.get("ph") == "X" and e.get("cat") in KINDS)


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_marking_a_range_gives_its_per_name_aggregates(size: tuple[int, int]) -> None:
    from profview.tui.drill.screen import DrillScreen
    from profview.tui.main.timeline import TraceTimeline

    app = viewer(GPT2)
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app, path=False)
        await pilot.press("7")
        await wait_until(pilot, lambda: bool(app.screen.query(TraceTimeline)))
        await pilot.pause(0.3)
        widget = app.screen.query_one(TraceTimeline)
        lane = widget.first_gpu_lane()
        events = widget.lanes.lanes[lane]
        first, last = 10, 60
        start, end = float(events.start[first]), float(events.end[last])
        widget.select(lane, first)
        await pilot.press("left_curly_bracket")
        widget.select(lane, last)
        await pilot.press("right_curly_bracket")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen))
        await pilot.pause(0.3)
        screen = app.screen
        assert isinstance(screen, DrillScreen) and screen.view == "range"
        table = screen.frame_view().displayed
        crumb = screen_text(app).splitlines()[0]
    assert crumb.startswith("Timeline › range")
    expected = witness(start, end)
    got = {(r["kind"], r["name"]): (r["count"], r["total_us"]) for r in table.iter_rows(named=True)}
    assert set(got) == set(expected)
    for key, (count, total) in expected.items():
        assert got[key][0] == count and got[key][1] == pytest.approx(total, abs=0.01), key
    kernels = table.filter(table["kind"] == "kernel")
    assert kernels["pct_of_range"].sum() == pytest.approx(100 * kernels["total_us"].sum() / (end - start), abs=0.05)


def test_export_view_range_is_the_same_table(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    lo, hi = 20_000.0, 26_500.0  # µs from the trace's start
    out = tmp_path / "range.csv"
    assert run_cli(["export", str(sample(GPT2)), "--view", "range", "--range", f"{lo:g}:{hi:g}", "-o", str(out)]) == 0
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    zero = origin()
    expected = witness(zero + lo, zero + hi)
    assert {(r["kind"], r["name"]) for r in rows} == set(expected)
    for row in rows:
        count, total = expected[(row["kind"], row["name"])]
        assert int(row["count"]) == count and float(row["total_us"]) == pytest.approx(total, abs=0.01)
        assert float(row["pct_of_range"]) == pytest.approx(100 * total / (hi - lo), abs=0.01)


def test_a_bad_range_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["export", str(sample(GPT2)), "--view", "range", "--range", "9:3", "-o", "-"]) != 0
    assert "the end must come after the start" in capsys.readouterr().err
