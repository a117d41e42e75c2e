"""The Steps pane is drawn when first shown, not with the first screen (issue 42).

Its step's timeline reads the GPU frame with communication classified, which the Overview does not
need: a hidden Steps pane leaves it unread, and showing the pane draws the highlighted step's
totals and timeline.  Witness: the raw JSON's ``ProfilerStep#N`` annotations, read with the
standard library (the step the line names is one of them, and its duration is that event's).
"""

from __future__ import annotations

import gzip
import json

import pytest
from pilot import wait_loaded
from support import sample, viewer
from textual.widgets import Static

from profview.frames import fmt_us
from profview.tui.main.step_timeline import Timeline
from profview.tui.main.steps import StepsView

RESNET = "resnet50_train_amp.pt.trace.json.gz"


def raw_steps() -> dict[str, float]:
    """``ProfilerStep#N`` → its duration in µs, as the trace records the annotation."""
    with gzip.open(sample(RESNET)) as fh:
        events = json.load(fh)["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    return {e["name"]: float(e["dur"]) for e in steps if e.get("cat") != "gpu_user_annotation"}


@pytest.mark.asyncio
async def test_steps_pane_waits_until_shown() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        steps = app.screen.query_one(StepsView)
        totals = steps.query_one("#step-totals", Static)
        assert steps.deferred and not str(totals.render()).strip()
        assert app.screen.query_one(Timeline).lanes == []  # no GPU frame given to it yet
        await pilot.press("4")
        await pilot.pause()
        assert not steps.deferred
        line = str(totals.render())
        name = line.split(" (")[0]
        durations = raw_steps()
        assert name in durations, (line, sorted(durations))
        assert f": {fmt_us(durations[name])} = " in line
        assert app.screen.query_one(Timeline).lanes  # its GPU streams, drawn
