"""The gate's per-step samples of one profile (``profview diff --fail-if``): each rule view's
figures one step, or one serving iteration, at a time (:mod:`profview.analysis.diff.gate_samples`).

Kept and cached like the default views (``gate_kernels`` …), so a second gate over the same
traces reads them from the cache instead of linking the trace again.  A mixin of
:class:`~profview.profiles.trace_profile.Profile`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import ProfviewError

if TYPE_CHECKING:
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: The views a gate rule may read, each the name its samples are cached under.
GATE_VIEWS = ("kernels", "ops", "steps", "phases", "memory", "efficiency", "categories", "collectives")
#: The per-call frames (one row per call), the evidence where a side has too few steps.
CALL_VIEWS = ("kernels", "ops")


class GateViews(ProfileHost):
    """Per-step samples per view (see the module doc)."""

    def gate_samples(self, view: str) -> pl.DataFrame:
        """``name``, ``step`` and the view's metrics, one row per name and step."""
        from ..analysis.diff import gate_samples as samples

        if view not in GATE_VIEWS:
            raise ProfviewError(None, f"no per-step samples for the view {view!r}")
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no per-step figures: the gate needs a trace")

        def compute() -> pl.DataFrame:
            if view == "kernels":
                return samples.kernel_samples(self.model.gpu, samples.gpu_steps(self.model))
            if view == "categories":
                from ..analysis.efficiency.categories import with_name_category

                names = with_name_category(self.kernels().select("name"), self.comm_pattern)
                return samples.category_samples(self.gate_samples("kernels"), names)
            if view == "collectives":
                from ..analysis.trace.communication import classify_communication

                info = self.metadata.get("distributedInfo") or {}
                backend = info.get("backend") if isinstance(info, dict) else None
                communication = classify_communication(
                    self.model.gpu, self.comm_pattern, backend if isinstance(backend, str) else None
                )
                return samples.collective_samples(communication, samples.gpu_steps(self.model))
            if view == "ops":
                return samples.op_samples(self._operator_rows, samples.host_step_ranges(self.model))
            if view == "steps":
                return samples.step_samples(self.steps())
            if view == "phases":
                return samples.phase_samples(self.iterations())
            if view == "memory":
                try:
                    memory = self.memory()
                except ProfviewError:  # no memory events recorded: no samples (the rule says so)
                    memory = pl.DataFrame(
                        schema={"ts_us": pl.Float64, "device": pl.String, "allocated_bytes": pl.Int64}
                    )
                return samples.memory_samples(memory, self.steps())
            return samples.efficiency_samples(self.step_efficiency())

        return self._default_view(f"gate2_{view}", compute)

    def gate_calls(self, view: str) -> pl.DataFrame | None:
        """``name``, ``step`` and the view's metrics, one row per call (kernels, operators), or
        None for a view whose figures are not sums of calls."""
        from ..analysis.diff import gate_samples as samples

        if view not in CALL_VIEWS or not self.is_trace:
            return None

        def compute() -> pl.DataFrame:
            if view == "kernels":
                return samples.kernel_calls(self.model.gpu, samples.gpu_steps(self.model))
            return samples.op_calls(self._operator_rows, samples.host_step_ranges(self.model))

        return self._default_view(f"gate2_{view}_calls", compute)
