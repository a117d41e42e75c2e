"""One step of a profile: a step chosen in Steps narrows every view.  The step numbers,
the step's window and its GPU work (a mask over ``model.gpu``, a model narrowed to it), and the
step's row of the steps table with its GPU busy time.  A mixin of
:class:`~profview.profiles.trace_profile.Profile`; the rules are :mod:`profview.analysis.tables.step_scope`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError
from .iteration_views import IterationScope

if TYPE_CHECKING:
    from ..analysis.trace.model import TraceModel
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only


class StepViews(ProfileHost):
    """One step (issue 13: a step chosen in Steps narrows every view)."""

    def _window(self, step: int | None) -> tuple[float, float] | None:
        if step is None:
            return None
        rows = self.steps().filter(pl.col("step") == step)
        if rows.height == 0:
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        start = float(rows["start_us"][0]) + self.span_start
        return start, start + float(rows["duration_us"][0])

    def step_numbers(self) -> list[int]:
        """The ProfilerStep numbers of a trace."""
        return [s for s in self.steps()["step"].to_list() if s is not None and s >= 0]

    def _step_mask(self, step: int | IterationScope) -> pl.Series:
        """Per ``model.gpu`` row, whether it is step ``step``'s work (:mod:`.analysis.tables.step_scope`);
        an iteration's (issue 31): the work it launched."""
        if isinstance(step, IterationScope):
            return self.iteration_gpu_mask(step)
        key = f"step_mask:{step}"
        if key not in self._facts:
            from ..analysis.tables.step_scope import step_gpu_mask

            window = self._window(step)  # an unknown step is a one-line error naming the steps there are
            self._facts[key] = step_gpu_mask(self.model, step, window)
        return self._facts[key]

    def step_model(self, step: int | IterationScope | None) -> TraceModel:
        """The trace model, its GPU work narrowed to ``step`` (None: the whole trace; an iteration:
        the work it launched)."""
        if step is None:
            return self.model
        from dataclasses import replace

        return replace(self.model, gpu=self.model.gpu.filter(self._step_mask(step)))

    def _no_step(self, step: int | IterationScope | None) -> None:
        if step is not None:
            raise ProfviewError(self.path, f"a {self.format} has no per-step launches (--step)")

    def step_overview(self, step: int) -> dict[str, Any]:
        """Step ``step``'s row of the steps table, with ``gpu_busy_us`` (GPU work, any device, inside
        the step's window) and ``gpu_busy_pct`` of its duration."""
        from ..analysis.tables.step_scope import gpu_busy_in

        rows = self.steps().filter(pl.col("step") == step)
        if rows.height == 0:
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        row = rows.row(0, named=True)
        start = self.span_start + float(row["start_us"])
        busy = gpu_busy_in(self.model.gpu, start, start + float(row["duration_us"]))
        row["gpu_busy_us"] = busy
        row["gpu_busy_pct"] = busy / row["duration_us"] * 100 if row["duration_us"] else 0.0
        return row
