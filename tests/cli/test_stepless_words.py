"""Words for traces without steps, and plurals that agree with their count: a diff of two step-less
traces names its one row the whole trace (no ``Mean step``), one side without steps says which;
an export of one row says ``1 row``.  Witness: the raw events (no ``ProfilerStep#`` range), the
file written (its rows and columns read back with the standard library)."""

from __future__ import annotations

import csv

import pytest
from support import raw_events, run_cli, sample

NO_STEPS = "tracelens_b200_nccl_eager_no_steps.json.gz"
STEPS = "gpt2_train_bf16.pt.trace.json.gz"


def has_steps(name: str) -> bool:
    return any(str(e.get("name", "")).startswith("ProfilerStep#") for e in raw_events(name))


def test_a_diff_of_step_less_traces_names_the_whole_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert not has_steps(NO_STEPS)
    path = str(sample(NO_STEPS))
    assert run_cli(["diff", path, path, "--summary"]) == 0
    out = capsys.readouterr().out
    assert "Whole trace (no steps on either side)" in out and "Mean step" not in out
    assert "step -1" not in out and "1 step" not in out


def test_a_diff_with_one_step_less_side_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    assert has_steps(STEPS) and not has_steps(NO_STEPS)
    assert run_cli(["diff", str(sample(STEPS)), str(sample(NO_STEPS)), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "Mean step against the whole trace (AFTER has no steps)" in out


def test_an_export_of_one_row_says_one_row(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "steps.csv"
    assert run_cli(["export", str(sample(NO_STEPS)), "--view", "steps", "-o", str(out)]) == 0
    with out.open() as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 2  # the header and the whole trace's one row
    assert f"wrote 1 row × {len(rows[0])} columns to" in capsys.readouterr().err
