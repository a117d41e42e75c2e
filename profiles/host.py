"""What the view mixins of a profile use of the rest of it, as a Protocol: their type-checking base.

:class:`~profview.profiles.trace_profile.Profile` is its core (fields, events, the linked model,
the default views) and one mixin per group of views (memory and modules, the timeline and the
critical path, one step, efficiency).  Each mixin subclasses :class:`ProfileHost` for the type
checker only (at run time its base is ``object``), so the checker sees both sides: what a mixin
reads and calls here, the core or another mixin must provide, or ``Profile()`` is abstract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl

if TYPE_CHECKING:
    from ..analysis.trace.launch_index import LaunchIndex
    from ..analysis.trace.model import TraceModel
    from ..store.trace_cache import SavedViews
    from .iteration_scope import IterationScope


class ProfileHost(Protocol):
    """A profile as its view mixins see it."""

    path: str
    format: str
    metadata: dict[str, Any]
    saved: SavedViews | None
    fresh: dict[str, pl.DataFrame]
    fresh_facts: dict[str, Any]
    _facts: dict[str, Any]
    open_capture: Callable[..., Any] | None
    _views: dict[str, pl.DataFrame]

    @property
    def is_trace(self) -> bool: ...

    @property
    def model(self) -> TraceModel: ...

    @property
    def gpu(self) -> pl.DataFrame: ...

    @property
    def span_start(self) -> float: ...

    @property
    def comm_pattern(self) -> str | None: ...

    @property
    def _operator_rows(self) -> pl.DataFrame: ...

    @property
    def launch_index(self) -> LaunchIndex: ...

    def _trace_events(self) -> pl.DataFrame: ...

    def model_with(self, host: tuple[str, ...], gpu: tuple[str, ...]) -> TraceModel: ...

    def _require(self, view: str) -> pl.DataFrame | None: ...

    def _default_view(self, name: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame: ...

    def _trace_only(self, view: str, why: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame: ...

    def steps(self) -> pl.DataFrame: ...

    def memory(self) -> pl.DataFrame: ...

    def iterations(self, pattern: str | None = None) -> pl.DataFrame: ...

    def step_efficiency(self, peak_tflops: float | None = None) -> pl.DataFrame: ...

    def kernels(self, by_shape: bool = False, step: int | None = None) -> pl.DataFrame: ...

    # one step (step_views.StepViews), which the other view groups narrow to
    def step_numbers(self) -> list[int]: ...

    def step_model(self, step: int | IterationScope | None) -> TraceModel: ...

    def _step_mask(self, step: int | IterationScope) -> pl.Series: ...

    # graph replays (graph_views.GraphViews), which the module and source views attribute through
    def _graph_view_name(self, name: str) -> str: ...

    def _with_replayed_modules(self, attribution: pl.DataFrame) -> pl.DataFrame: ...

    capture_use_cache: bool

    def has_graphs(self) -> bool: ...

    def _captures(self) -> list[Any]: ...

    def _attributed_replays(self, *attributes: str) -> pl.DataFrame | None: ...

    @property
    def _graph_frames(self) -> Any: ...

    def _replayed_sources(self, mask: Any = None) -> dict[int, list[str]] | None: ...

    def _replayed_module_calls(self) -> dict[str, int]: ...

    def replay_place(self, gpu_row: int) -> str | None: ...

    def _capture_model(self, origin: str) -> Any: ...

    def replayed_launches(self, op: str, step: int | IterationScope | None = None) -> pl.DataFrame | None: ...

    def graph_summary(self) -> dict[str, Any] | None: ...

    def graph_device_by_op(self, step: int | IterationScope | None = None) -> pl.DataFrame | None: ...

    def _window(self, step: int | None) -> tuple[float, float] | None: ...

    # one iteration (iteration_views.IterationViews, issue 31)
    def iteration_gpu_mask(self, scope: IterationScope) -> pl.Series: ...
