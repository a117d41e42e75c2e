"""Redraw time of the Timeline pane's lanes (issue 15): every lane drawn for one window, as the
viewer does on each key, at several zoom levels.  Usage: timeline_redraw.py TRACE [--width 188]."""

from __future__ import annotations

import argparse
import statistics
import time

import profview
from profview.tui.main.timeline import draw_lane


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--width", type=int, default=188)  # a 200-column terminal less the labels
    parser.add_argument("--lanes", type=int, default=45)  # lanes on a 50-row terminal
    args = parser.parse_args()
    started = time.perf_counter()
    profile = profview.load(args.trace)
    lanes = profile.timeline_lanes()
    print(f"load + lanes: {time.perf_counter() - started:.2f} s, {len(lanes.lanes)} lanes, "
          f"{sum(len(lane.start) for lane in lanes.lanes):,} events")
    start, end = lanes.span
    steps = profile.steps()
    step_lo = start + float(steps["start_us"][len(steps) // 2])
    windows = {
        "whole trace": (start, end),
        "one step": (step_lo, step_lo + float(steps["duration_us"][len(steps) // 2])),
        "1 ms": (step_lo, step_lo + 1000.0),
        "20 us": (step_lo + 500.0, step_lo + 520.0),
    }
    for label, (lo, hi) in windows.items():
        times = []
        for _ in range(20):
            began = time.perf_counter()
            for lane in lanes.lanes[: args.lanes]:
                draw_lane(lane, lanes.names, lo, hi, args.width)
            times.append((time.perf_counter() - began) * 1000)
        print(f"{label:>12}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms per redraw")


if __name__ == "__main__":
    main()
