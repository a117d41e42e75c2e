"""Two traces without ProfilerStep compared: each side says it has no steps (its one row is the
whole trace), and the Moved table names ``whole trace vs whole trace``, not ``step -1 vs -1``."""

from __future__ import annotations

import json

from support import SAMPLES, run_cli

XLA = SAMPLES / "xla_style_trace.json"


def test_stepless_sides_say_whole_trace(capsys) -> None:  # type: ignore[no-untyped-def]
    events = json.loads(XLA.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert not any(str(e.get("name", "")).startswith("ProfilerStep#") for e in events)  # the raw file has none
    assert run_cli(["diff", str(XLA), str(XLA), "--summary"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the lines as words (wrapped at 80)
    assert "1 step" not in out and "step -1" not in out and "vs -1" not in out
    assert out.count("no steps (whole trace)") == 2
    assert "(whole trace vs whole trace, aligned by operator)" in out


def test_sides_with_steps_keep_their_numbers(capsys) -> None:  # type: ignore[no-untyped-def]
    a, b = SAMPLES / "hta_diff_control_a100.json.gz", SAMPLES / "hta_diff_test_v100.json.gz"
    assert run_cli(["diff", str(a), str(b), "--summary"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "6 steps" in out and "no steps" not in out and "(step " in out
