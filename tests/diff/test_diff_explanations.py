"""What explains surprising figures of a comparison (issue 22), and the drill-down frames of both
sides; the HTA pair (A100 control, V100 test).  Witness: the raw events, read with orjson."""

from __future__ import annotations

import re

import pytest
from witness import AFTER, BEFORE, raw, raw_kernels

from profview.diff.comparison import load_comparison


@pytest.fixture(scope="module")
def hta():  # type: ignore[no-untyped-def]
    return load_comparison(str(BEFORE), after=str(AFTER), use_cache=False)


def architectures(path) -> set[str]:  # type: ignore[no-untyped-def]
    names = {e["name"] for e in raw(path) if e.get("cat") == "kernel"}
    return {m.lower() for n in names for m in re.findall(r"\b(ampere|volta|hopper|turing)_", n, re.IGNORECASE)}


def test_different_gpus_suggest_normalized_matching(hta) -> None:  # type: ignore[no-untyped-def]
    assert architectures(BEFORE) == {"ampere"} and architectures(AFTER) == {"volta"}
    expected = (
        "different GPUs (ampere_* BEFORE, volta_* AFTER): library kernels differ by name; --match normalized pairs them"
    )
    assert hta.explanations("kernels") == [expected]
    assert hta.explanations("ops") == [expected]
    normalized = load_comparison(str(BEFORE), after=str(AFTER), match="normalized")
    assert normalized.explanations("kernels") == []  # already paired


def test_steps_name_the_before_window_and_the_step_rule(hta) -> None:  # type: ignore[no-untyped-def]
    notes = hta.explanations("steps")
    prewindow = hta.after.steps()["prewindow_us"]
    assert float(hta.before.steps()["prewindow_us"].sum()) == 0.0
    per_step = float(prewindow.sum()) / prewindow.len()
    assert notes[0].startswith(f"AFTER: {per_step / 1e3:.3f} ms of GPU work per step was launched before")
    assert "overlapped communication counts as Kernel" in notes[1]


def test_a_kernels_launch_paths_on_both_sides_add_up_to_the_raw_events(hta) -> None:  # type: ignore[no-untyped-def]
    name = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"
    frame = hta.kernel_launches(name, name)
    for side, path in (("before", BEFORE), ("after", AFTER)):
        calls, total = raw_kernels(path)[name]
        assert int(frame[f"calls_{side}"].sum()) == calls and int(frame[f"total_us_{side}"].sum()) == total
    gone = hta.kernel_launches(name, None)  # a kernel AFTER lacks: every path removed
    assert set(gone["status"]) == {"removed"} and int(gone["calls_after"].sum()) == 0


def test_diff_summary_prints_the_same_notes(capsys: pytest.CaptureFixture[str]) -> None:
    from support import run_cli

    assert run_cli(["diff", str(BEFORE), str(AFTER), "--summary", "--no-cache"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("profview: note:")]
    hta = load_comparison(str(BEFORE), after=str(AFTER))
    assert notes == [f"profview: note: {n}" for n in (*hta.explanations("kernels"), *hta.explanations("steps"))]
