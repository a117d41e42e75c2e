"""The gate's per-step samples (issue 41) against a second witness: each kernel's µs and calls per
ProfilerStep recomputed from the raw JSON with the standard library (launching call's start inside
the step's host range), and the steps' samples against the step table's own rows."""

from __future__ import annotations

import pytest
from gate_witness import raw_step_kernels
from support import loaded, sample

TRACES = ("gpt2_train_bf16.pt.trace.json.gz", "resnet50_train_amp.pt.trace.json.gz")


@pytest.mark.parametrize("name", TRACES)
def test_kernel_samples_equal_the_raw_events(name: str) -> None:
    frame = loaded(name).gate_samples("kernels")
    ours = {(r["name"], r["step"]): (r["total_us"], r["calls"]) for r in frame.iter_rows(named=True)}
    raw = raw_step_kernels(sample(name))
    assert set(ours) == set(raw)
    for key, (total, calls) in raw.items():
        assert ours[key][0] == pytest.approx(total, abs=1e-3) and ours[key][1] == calls


def test_per_step_kernels_add_up_to_the_step_narrowed_table() -> None:
    profile = loaded("gpt2_train_bf16.pt.trace.json.gz")
    frame = profile.gate_samples("kernels")
    for step in profile.step_numbers():
        table = profile.kernels(step=step)
        ours = frame.filter(frame["step"] == step)
        assert ours["total_us"].sum() == pytest.approx(table["total_us"].sum(), rel=1e-9)
        assert ours["calls"].sum() == table["calls"].sum()


def test_step_samples_are_the_step_table() -> None:
    profile = loaded("resnet50_train_amp.pt.trace.json.gz")
    frame = profile.gate_samples("steps")
    assert frame["duration_us"].to_list() == profile.steps()["duration_us"].to_list()
