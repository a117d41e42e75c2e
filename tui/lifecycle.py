"""What every load of the viewer does after parsing, off the UI thread: build the first screens'
tables (:func:`prepare`), then save them and the linked model to the cache (:func:`remember`).

The apps (one trace, two compared, a job's ranks) call these from their workers; the module
imports no app, so :mod:`profview.tui.launch` (which imports the apps to run them) stays above it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import ProfviewError

if TYPE_CHECKING:  # imported for its type only: the CLI hands prepare_early to the read before Polars is in
    from ..profiles.trace_profile import Profile

#: From this many events a trace shows its first screen (the early Overview, Kernels) before the
#: model is linked (about 0.1 s of linking per 100,000 events on one core; issue 13).
LARGE_TRACE_EVENTS = 100_000


def is_large(profile: Profile) -> bool:
    """Whether ``profile`` is a trace large enough that linking it takes seconds (a re-opened one
    whose Overview is kept with it links nothing: it opens on its whole Overview at once, issue 32)."""
    large = profile.is_trace and profile.event_count >= LARGE_TRACE_EVENTS and profile.available("kernels")
    return large and not (profile.saved is not None and "overview" in profile.saved.facts())


def prepare(profile: Profile, phase: Callable[[str], object]) -> None:
    """Build what the first screens show (the linked model, the tables) off the UI thread."""
    if profile.is_trace:
        phase("linking GPU work to operators and steps")
        profile.overview()
        profile.efficiency_lines()  # the Overview's categories and model FLOPs: made (and kept) here
        profile.span_start  # noqa: B018 (the Steps pane's time origin: a fact kept with the views)
    phase("building tables")
    for view in ("kernels", "ops", "steps"):
        if profile.available(view):
            getattr(profile, view)()
    if profile.is_trace:  # memory and modules (issue 15): computed here, not on the UI thread
        for view in ("memory_ops", "memory_peaks", "modules"):  # the timeline is built when first shown
            with contextlib.suppress(ProfviewError):  # the pane says why
                getattr(profile, view)()
        with contextlib.suppress(ProfviewError):  # issue 31: the Overview's per-phase lines, kept with the views
            profile.phase_lines()
        if profile.has_graphs():  # issue 36: the replays attributed (a capture file read) here too
            phase("attributing graph replays through their capture")
            with contextlib.suppress(ProfviewError):
                profile.graphs()
                profile.graph_summary()


def remember(profile: Profile) -> None:
    """Save the views and the linked model: the next open reads them instead of linking again.

    A trace's launch index (every launching operator row's path) is made ready first, off the UI
    thread, so that Enter on a kernel only groups its GPU events (issue 25); it is saved too, and
    so is the critical path of every step (the Overview's path line, the on-path column: issue 32;
    the viewer computes it anyway, and a re-open then shows the whole Overview without linking).
    Then the events frame goes (a trace parsed with the cache on): every pane reads the model and
    the views made by :func:`prepare`, and anything that asks for the events again reads them from
    the cache entry the parse wrote.  gpt2_train_big's viewer holds 160 MB less from then on."""
    from ..profiles.loading import remember_views

    if profile.is_trace and profile.available("launches"):
        with contextlib.suppress(ProfviewError):
            profile.launch_index  # noqa: B018 (computed or read now, kept on the profile)
    if profile.is_trace and profile.cacheable:  # the Overview's path line, the on-path column: kept (issue 32)
        with contextlib.suppress(ProfviewError):  # (the reason a trace has none is kept as well)
            profile.critical_path()
            profile.critical_path_names()
    remember_views(profile, model=True)
    if profile.cacheable:  # without a cache entry, reading them again would mean parsing again
        profile.release_events()


def prepare_early(profile: Profile) -> bool:
    """:func:`prepare` then :func:`remember` on the read's own thread, while the viewer still imports
    (:class:`profview.profiles.background.BackgroundLoad`'s ``then``): a re-opened trace's first
    screen then waits for neither.  A large trace is left as it is (its kernel table comes first,
    on the UI's load thread); returns whether the profile was prepared."""
    if is_large(profile):
        return False
    prepare(profile, lambda _phase: None)
    remember(profile)
    return True


__all__ = ["LARGE_TRACE_EVENTS", "is_large", "prepare", "prepare_early", "remember"]
