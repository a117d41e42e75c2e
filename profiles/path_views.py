"""A profile's timeline and critical path: GPU idle time and gaps per step, the
timeline's lanes, each step's critical path (its bound kinds, its events, per name its time on it)
and what-if scalings of it.  A mixin of :class:`~profview.profiles.trace_profile.Profile`; every
figure comes from :mod:`profview.analysis` (gaps, lanes, critical_path, what_if).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError
from .recording_advice import fit_advice

if TYPE_CHECKING:
    from ..analysis.critical_path.frames import StepPaths
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: Computing a critical path is done once, by whichever thread asks first (a viewer's workers
#: may ask for the same path at once: the others wait for it instead of computing it again).
_PATH_LOCK = threading.Lock()
#: Why a trace has no critical path (issue 26).
#: The critical-path views kept with a trace's cached views (every step, profview's rules), and the
#: fact saying why a trace has none (issue 32).
KEPT_PATH_VIEWS = ("critical_path", "critical_path_names")
NO_PATH_FACT = "no_critical_path"
NO_RUNTIME = (
    "no runtime launch events link the GPU work to the host in this trace (the critical path needs "
    "cuda_runtime/cuda_driver events with correlation ids: record with ProfilerActivity.CPU and CUDA)"
)


class PathViews(ProfileHost):
    """The timeline (idle gaps, lanes) and each step's critical path with its what-if scalings."""

    def range_aggregates(self, start_us: float, end_us: float) -> pl.DataFrame:
        """Per name, the events of ``[start_us, end_us)`` (µs from the trace's start, as the
        Timeline shows them): count, time in the range and its share
        (:func:`profview.analysis.tables.range_aggregates.range_aggregates`)."""
        from ..analysis.tables.range_aggregates import range_aggregates

        if not end_us > start_us:
            raise ProfviewError(self.path, f"--range {start_us:g}:{end_us:g}: the end must come after the start")
        origin = self.span_start
        return range_aggregates(self.model.gpu, self.model.host, origin + start_us, origin + end_us)

    # -- the timeline (issue 15) ------------------------------------------------------------------
    @cached_property
    def _idle(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        from ..analysis.tables.gaps import idle_gaps

        return idle_gaps(self.model, self.model_communication())

    def model_communication(self) -> pl.Series:
        """Per ``model.gpu`` row, its communication backend (null: not communication)."""
        from ..analysis.trace.communication import classify_communication

        backend = (self.metadata.get("distributedInfo") or {}).get("backend")
        frame = classify_communication(self.model.gpu, self.comm_pattern, backend if isinstance(backend, str) else None)
        return frame["backend"]

    def gpu_idle(self) -> pl.DataFrame:
        """Per step: GPU busy, compute, communication and their overlap, idle time by likely cause
        (see :func:`profview.analysis.tables.gaps.idle_gaps`)."""
        return self._trace_only("gpu_idle", "no GPU work in this trace", lambda: self._idle[0])

    def gaps(self) -> pl.DataFrame:
        """The GPU's idle gaps, one row each, with their likely cause."""
        return self._trace_only("gaps", "no GPU idle gaps in this trace", lambda: self._idle[1])

    def timeline_lanes(self) -> Any:
        """The timeline's lanes (see :func:`profview.analysis.tables.lanes.build_lanes`), built once."""
        if "lanes" not in self._facts:
            from ..analysis.tables.lanes import build_lanes

            if not self.is_trace:
                raise ProfviewError(self.path, f"a {self.format} has no timeline")
            self._facts["lanes"] = build_lanes(self.model, self.model_communication())
        return self._facts["lanes"]

    # -- the critical path (issue 26) ----------------------------------------------------------------
    def step_paths(self, step: int | None = None, rules: str = "profview") -> StepPaths:
        """The critical path of every step (``step``: that one) under ``rules`` (``profview`` or
        ``hta``; see :mod:`profview.analysis.critical_path.path`), computed once each (and so is the
        reason a trace has none)."""
        key = f"critical_path:{rules}:{step}"
        if key not in self._facts:
            with _PATH_LOCK:
                if key not in self._facts:
                    try:
                        self._facts[key] = self._compute_step_paths(step, rules)
                    except ProfviewError as exc:
                        self._facts[key] = exc
        found = self._facts[key]
        if isinstance(found, ProfviewError):
            raise found
        paths: StepPaths = found
        return paths

    def _compute_step_paths(self, step: int | None, rules: str) -> StepPaths:
        from ..analysis.critical_path.frames import has_runtime, step_paths, step_ranges
        from ..analysis.critical_path.path import RULES

        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no critical path (it needs a trace)")
        if rules not in RULES:
            raise ProfviewError(None, f"unknown rules {rules!r}: choose one of {', '.join(RULES)}")
        if self.model.gpu.height and not has_runtime(self.model):
            raise ProfviewError(self.path, fit_advice(self.format, NO_RUNTIME))
        if step is not None and step not in step_ranges(self.model)["step"].to_list():
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        comm = self.model_communication().is_not_null().to_numpy()
        try:
            return step_paths(self.model, RULES[rules], comm, step=step)
        except ValueError as exc:  # a dependency cycle: events out of order in the trace
            raise ProfviewError(self.path, f"no critical path: {exc}") from None

    def has_step_paths(self, step: int | None = None, rules: str = "profview") -> bool:
        """Whether :meth:`step_paths` has been computed, or found there is none, or (every step,
        profview's rules) its frames are kept with the trace: a viewer shows either without waiting."""
        if f"critical_path:{rules}:{step}" in self._facts:
            return True
        if step is not None or rules != "profview":
            return False
        if KEPT_PATH_VIEWS[0] in self._views or NO_PATH_FACT in self._facts:
            return True
        if self.saved is None:
            return False
        reason = self.saved.facts().get(NO_PATH_FACT)
        if isinstance(reason, str):
            self._facts[NO_PATH_FACT] = reason
            return True
        frame = self.saved.frame(KEPT_PATH_VIEWS[0])
        if frame is not None:
            self._views[KEPT_PATH_VIEWS[0]] = frame
        return frame is not None

    def _kept_path_view(self, name: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A critical-path frame of every step under profview's rules, kept like the default views
        (issue 32: a re-open shows the Overview's path line without linking), and so is the reason
        a trace has none."""
        reason = self._facts.get(NO_PATH_FACT)
        if reason is None and name not in self._views and self.saved is not None:
            saved = self.saved.facts().get(NO_PATH_FACT)
            reason = self._facts[NO_PATH_FACT] = saved if isinstance(saved, str) else None
        if isinstance(reason, str):
            raise ProfviewError(self.path, reason)
        try:
            return self._default_view(name, compute)
        except ProfviewError as exc:
            if exc.problem is not None and self.is_trace:  # kept: the trace has no path, for good
                self._facts[NO_PATH_FACT] = self.fresh_facts[NO_PATH_FACT] = exc.problem
            raise

    def critical_path(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """Per step and bound kind, its µs on the critical path (see
        :func:`profview.analysis.critical_path.frames.path_frame`)."""

        def compute() -> pl.DataFrame:
            from ..analysis.critical_path.frames import path_frame  # a re-open reads the kept frame (issue 42)

            return path_frame(self.step_paths())

        if step is None and rules == "profview":
            return self._kept_path_view("critical_path", compute)
        from ..analysis.critical_path.frames import path_frame
        if rules == "profview" and not self.has_step_paths(step) and self.has_step_paths():
            # Each step's path is found in its own window (no edge joins two windows), so one step's
            # rows of every step's frame are its path: a kept frame answers without linking.
            every = self.critical_path()
            if step in every["step"].to_list():
                return every.filter(pl.col("step") == step)
        return path_frame(self.step_paths(step, rules))

    def critical_path_events(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """The events on each step's critical path, in order."""
        from ..analysis.critical_path.frames import events_frame

        return events_frame(self.step_paths(step, rules))

    def critical_path_names(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """Per operator and kernel name, its time on the critical path beside its total (computed
        once per step and rules: the viewer's on-path column reads it on every redraw)."""

        def compute() -> pl.DataFrame:
            from ..analysis.critical_path.frames import names_frame  # a re-open reads the kept frame (issue 42)

            return names_frame(self.step_paths())

        if step is None and rules == "profview":
            return self._kept_path_view("critical_path_names", compute)
        from ..analysis.critical_path.frames import names_frame

        key = f"critical_path_names:{rules}:{step}"
        if key not in self._facts:
            self._facts[key] = names_frame(self.step_paths(step, rules))
        names: pl.DataFrame = self._facts[key]
        return names

    def what_if(self, scalings: list[str], step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """The critical path before and after scaling the events named by ``scalings``
        (``'REGEX=FACTOR'`` each): a model (see :mod:`profview.analysis.critical_path.what_if`)."""
        from ..analysis.critical_path.what_if import parse_scaling, what_if

        try:
            parsed = [parse_scaling(text) for text in scalings]
        except ValueError as exc:
            raise ProfviewError(None, str(exc)) from None
        steps = self.steps()
        durations = dict(zip(steps["step"].to_list(), steps["duration_us"].to_list(), strict=True))
        return what_if(self.step_paths(step, rules), parsed, durations)[0]
