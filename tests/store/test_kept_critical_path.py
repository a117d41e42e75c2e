"""What the viewer computed once is kept with the trace, the critical path included.

The viewer's load thread (:func:`profview.tui.lifecycle.prepare`, then :func:`~profview.tui.lifecycle.remember`)
computes the critical path of every step and saves it with the views; a re-open then has the
Overview's path line and the on-path column without linking the model or reading the events.
Witness: the frames a fresh parse computes, and the path length recomputed from the raw events'
step windows (each step's path ends no later than the step's last event).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from support import sample

import profview
from profview.errors import ProfviewError

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def opened_by_the_viewer(name: str) -> profview.Profile:
    """A trace opened as the viewer's load thread does it (cache on)."""
    from profview.tui import lifecycle

    profile = profview.load(sample(name))
    lifecycle.prepare(profile, lambda _phase: None)
    lifecycle.remember(profile)
    return profile


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_reopen_has_the_critical_path_without_linking(cache: Path) -> None:
    first = opened_by_the_viewer(GPT2)
    again = profview.load(sample(GPT2))
    assert again.has_step_paths()
    path, names = again.critical_path(), again.critical_path_names()
    assert "model" not in vars(again) and "events" not in vars(again)  # nothing linked, nothing read
    assert path.equals(first.critical_path()) and names.equals(first.critical_path_names())
    fresh = profview.load(sample(GPT2), use_cache=False)
    assert path.equals(fresh.critical_path()) and names.equals(fresh.critical_path_names())
    # 3 steps, each path as long as its step's window: the bound kinds add up to it
    per_step = path.group_by("step").agg(pl.col("duration_us").sum(), pl.col("path_us").first()).sort("step")
    assert per_step.height == 3
    for row in per_step.iter_rows(named=True):
        assert row["duration_us"] == pytest.approx(row["path_us"], abs=0.01)


def test_a_reopen_keeps_why_a_trace_has_no_path(cache: Path) -> None:
    """A trace with no runtime events: the reason is kept, and said again without linking."""
    name = "hta_large_integer_comms_id.json.gz"
    with pytest.raises(ProfviewError) as first:
        opened_by_the_viewer(name).critical_path()
    again = profview.load(sample(name))
    assert again.has_step_paths()
    with pytest.raises(ProfviewError) as second:
        again.critical_path_names()
    assert second.value.problem == first.value.problem and "no runtime launch events" in first.value.problem
    assert "model" not in vars(again)


def test_other_steps_and_rules_are_computed_as_before(cache: Path) -> None:
    """Only every step under profview's rules is kept; a step or HTA's rules link the model."""
    opened_by_the_viewer(GPT2)
    again = profview.load(sample(GPT2))
    assert not again.has_step_paths(rules="hta") and not again.has_step_paths(step=2)
    hta = again.critical_path(rules="hta")
    assert "model" in vars(again)
    assert hta.equals(profview.load(sample(GPT2), use_cache=False).critical_path(rules="hta"))
