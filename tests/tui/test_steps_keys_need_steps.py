"""The Steps tab offers Enter (this step) and a (all steps) only where the trace has steps.

A trace without ``ProfilerStep#N`` annotations has one row, the whole trace: there is no step to
choose, so the footer does not promise one.  Witness: the raw JSON read with the standard library
(no ``ProfilerStep#`` event in the step-less sample; several in the other).
"""

from __future__ import annotations

import gzip
import json

import pytest
from pilot import screen_text, wait_loaded
from support import sample, viewer

STEPLESS = "cupti_tool_no_cat.json"
WITH_STEPS = "resnet50_train_amp.pt.trace.json.gz"


def step_annotations(name: str) -> int:
    """How many ``ProfilerStep#N`` events the raw trace holds."""
    opener = gzip.open if name.endswith(".gz") else open
    with opener(sample(name), "rt") as fh:
        events = json.load(fh)["traceEvents"]
    return sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#"))


async def footer_of_steps_tab(name: str) -> str:
    app = viewer(name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        await pilot.pause(0.3)
        return screen_text(app).splitlines()[-1]


@pytest.mark.asyncio
async def test_a_trace_without_steps_offers_no_step_keys() -> None:
    assert step_annotations(STEPLESS) == 0
    footer = await footer_of_steps_tab(STEPLESS)
    assert "this step" not in footer and "all steps" not in footer, footer
    assert "sort" in footer  # the tab's other keys stay


@pytest.mark.asyncio
async def test_a_trace_with_steps_offers_them() -> None:
    assert step_annotations(WITH_STEPS) > 1
    footer = await footer_of_steps_tab(WITH_STEPS)
    assert "this step" in footer and "all steps" in footer, footer
