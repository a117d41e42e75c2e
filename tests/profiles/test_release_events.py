"""A one-shot export lets the events frame go once the model is linked, and every figure
stays what it was; a view that still needs the events reads them again (from the cache entry the
parse wrote, or by parsing again), to the same frame."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from support import raw_events, run_cli, sample

import profview
from profview.profiles.views import EVENT_VIEWS, view_frame

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
RESNET = "resnet50_train_amp.pt.trace.json.gz"


def released(name: str, use_cache: bool) -> profview.Profile:
    profile = profview.load(sample(name), use_cache=use_cache)
    profile.release_events_after_link = True
    return profile


# (the kernel view links no model since issue 32: tests/profiles/test_view_columns.py)
@pytest.mark.parametrize("view", ["ops", "steps", "efficiency", "categories", "critical_path_names"])
def test_model_views_are_the_same_without_the_events(view: str) -> None:
    kept = view_frame(profview.load(sample(GPT2), use_cache=False), view)
    profile = released(GPT2, use_cache=False)
    reads: list[int] = []
    again = profile.reread_events
    assert again is not None
    profile.reread_events = lambda: reads.append(1) or again()
    frame = view_frame(profile, view)
    assert frame.equals(kept)
    assert "events" not in vars(profile)  # let go once linked ...
    assert not isinstance(profile.events_source, pl.DataFrame)
    assert reads == []  # ... and never read again for a view of the model


@pytest.mark.parametrize("use_cache", [False, True])
def test_the_events_read_again_equal_the_first_read(use_cache: bool, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path))
    first = profview.load(sample(RESNET), use_cache=False).events
    profile = released(RESNET, use_cache)
    profile.model  # noqa: B018 (links, then lets the events go)
    assert "events" not in vars(profile)
    assert profile.events is not None and profile.events.equals(first)
    memory = view_frame(profile, EVENT_VIEWS[0])  # the memory views read the events themselves
    assert memory.equals(view_frame(profview.load(sample(RESNET), use_cache=False), EVENT_VIEWS[0]))


def test_export_of_a_memory_view_after_linking(tmp_path: Path) -> None:
    """The CLI keeps the events for the views that read them: the memory view's export equals the
    API's frame (its allocation count is the raw ``[memory]`` events')."""
    out = tmp_path / "memory.csv"
    assert run_cli(["export", str(sample(RESNET)), "-v", "memory", "-o", str(out), "--no-cache"]) == 0
    written = pl.read_csv(out)
    allocations = [e for e in raw_events(RESNET) if e.get("name") == "[memory]"]
    assert written.height == len(allocations) > 0
