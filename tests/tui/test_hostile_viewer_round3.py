"""The viewer on issue 35's hostile traces: a step number that does not fit, and a critical path
lost to a dependency cycle (said once, not 'no critical path: no critical path:')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pilot import screen_text, wait_loaded
from test_timeline import open_timeline

from profview.tui.app import ProfviewApp


def _one_step(number: str, t0: float = 0.0, crossed: bool = False) -> list[dict]:
    """A step launching two kernels around a cudaDeviceSynchronize; ``crossed``: the second kernel,
    launched after the sync, starts 60 µs early, before the first on its stream (a cycle)."""
    step = {"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{number}", "pid": 1, "tid": 1, "ts": t0, "dur": 200,
            "args": {}}
    sync = {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": t0 + 25,
            "dur": 40, "args": {}}
    events = [step, sync]
    for eid, (name, ts) in enumerate((("early", t0 + 10), ("late", t0 + 70)), start=int(t0) + 1):  # ids: one step's
        kernel_ts = ts - 60 if crossed and name == "late" else ts + 8
        events += [
            {"ph": "X", "cat": "cpu_op", "name": f"aten::{name}", "pid": 1, "tid": 1, "ts": ts - 2, "dur": 12,
             "args": {"External id": eid}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 5,
             "args": {"External id": eid, "correlation": eid}},
            {"ph": "X", "cat": "kernel", "name": f"{name}_kernel", "pid": 0, "tid": 7, "ts": kernel_ts,
             "dur": 5 if crossed and name == "late" else 10,
             "args": {"External id": eid, "correlation": eid, "stream": 7, "device": 0}},
        ]
    return events


async def test_a_step_number_that_does_not_fit_opens_in_the_viewer(tmp_path: Path) -> None:
    """``ProfilerStep#99999999999999999999``: the viewer could not open the trace (issue 35 item 6)."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [*_one_step("1"), *_one_step("99999999999999999999", 1000.0)]}))
    app = ProfviewApp(str(path), no_cache=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        await pilot.pause()
        text = screen_text(app)
    assert "step 1" in text and "internal error" not in text


async def test_a_cycle_is_said_once_on_the_timeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Timeline says why there is no critical path once (it said 'no critical path: no critical path: …')."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": _one_step("1", crossed=True)}))
    app = ProfviewApp(str(path), no_cache=True)
    said: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **_kw: said.append(str(message)))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        timeline = await open_timeline(pilot, app)
        timeline.focus()
        await pilot.press("c")
        await pilot.pause()
    paths = [m for m in said if "critical path" in m]
    assert paths == ["no critical path: the dependency graph has a cycle (10 nodes on or after it)"], said
