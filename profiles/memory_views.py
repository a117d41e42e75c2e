"""A profile's memory and module views: allocator events, memory per operator and the
peak per device, GPU time by ``nn.Module`` path and by Python source line, and the GPU work under
one module or source line.  A mixin of :class:`~profview.profiles.trace_profile.Profile`; every
figure comes from :mod:`profview.analysis.tables.memory` and :mod:`profview.analysis.tables.modules`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError

if TYPE_CHECKING:
    from .host import ProfileHost
    from .iteration_views import IterationScope
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: Why a trace has no memory / modules / sources view.
NO_MEMORY = "no memory events in this trace (record with torch.profiler.profile(profile_memory=True))"
NO_MODULES = "no nn.Module frames in this trace (record with with_stack=True or with_modules=True)"
NO_SOURCES = "no Python frames in this trace (record with with_stack=True)"


class MemoryViews(ProfileHost):
    """Memory (allocator events, per operator, peak per device), GPU time by module and by source line."""

    def memory(self) -> pl.DataFrame:
        """One row per allocator event (see :func:`profview.analysis.tables.memory.memory_events`)."""

        def compute() -> pl.DataFrame:
            from ..analysis.tables.memory import memory_events  # a re-open reads the kept frame

            return memory_events(self.model, self._trace_events())

        return self._trace_only("memory", NO_MEMORY, compute)

    def memory_ops(self) -> pl.DataFrame:
        """Memory per operator and device (see :func:`profview.analysis.tables.memory.memory_ops`)."""

        def compute() -> pl.DataFrame:
            events = self.memory()  # a trace without memory events says so before the module is imported
            from ..analysis.tables.memory import memory_ops  # a re-open reads the kept table (issue 42)

            return memory_ops(events)

        return self._trace_only("memory_ops", NO_MEMORY, compute)

    def memory_peaks(self) -> pl.DataFrame:
        """The peak per device (see :func:`profview.analysis.tables.memory.memory_peaks`)."""

        def compute() -> pl.DataFrame:
            events = self.memory()  # a trace without memory events says so before the module is imported
            from ..analysis.tables.memory import memory_peaks  # a re-open reads the kept table (issue 42)

            return memory_peaks(events)

        return self._trace_only("memory_peaks", NO_MEMORY, compute)

    @cached_property
    def _launch_frames(self) -> Any:
        from ..analysis.tables.modules import launch_frames

        return launch_frames(self.model)

    @cached_property
    def _gpu_attribution(self) -> pl.DataFrame:
        from ..analysis.tables.modules import gpu_attribution

        # issue 36: a replayed kernel in the module its captured launch was under
        return self._with_replayed_modules(gpu_attribution(self.model, self._launch_frames))

    @cached_property
    def _gpu_modules(self) -> pl.Series:
        return self._gpu_attribution["module"]

    def modules(self, step: int | IterationScope | None = None) -> pl.DataFrame:
        """GPU time by module path (see :func:`profview.analysis.tables.modules.module_table`);
        ``step`` (a step number or an iteration, issue 40): that step's GPU work alone, as the kernel
        table under it takes it (``pct`` of the step's GPU time).  Its ``calls`` (the module's frames
        on the host) are not narrowed, so under a step they are left empty rather than the trace's."""

        def compute() -> pl.DataFrame:
            from ..analysis.tables.modules import has_modules, module_table  # a re-open reads the kept table

            if not has_modules(self.model):
                return pl.DataFrame()
            table = module_table(self.model, self._gpu_attribution)
            replayed = self._replayed_module_calls()  # a replayed module's calls are its replays'
            if not replayed:
                return table
            more = pl.Series([replayed.get(p, 0) for p in table["path"].to_list()], dtype=table.schema["calls"])
            return table.with_columns(pl.col("calls") + more)

        whole = self._trace_only(self._graph_view_name("modules"), NO_MODULES, compute)
        if step is None or whole.height == 0:
            return whole
        from ..analysis.tables.modules import module_table

        mask = self._step_mask(step)
        narrowed = module_table(self.step_model(step), self._gpu_attribution.filter(mask))
        return narrowed.with_columns(pl.lit(None, dtype=narrowed.schema["calls"]).alias("calls"))

    def module_kernels(self, path: str, step: int | IterationScope | None = None) -> pl.DataFrame:
        """The GPU work launched under module ``path`` (a path as the modules view shows it; ``step``: in it)."""
        from ..analysis.tables.modules import module_kernels

        if path not in set(self.modules()["path"].to_list()):
            raise ProfviewError(self.path, f"no module {path!r}")
        if step is None:
            return module_kernels(self.model, self._gpu_modules, path)
        mask = self._step_mask(step)
        return module_kernels(self.step_model(step), self._gpu_modules.filter(mask), path)

    def source_kernels(self, name: str, step: int | IterationScope | None = None) -> pl.DataFrame:
        """The GPU work launched while source line ``name`` (as the sources view shows it) was open
        (``step``: in that step)."""
        from ..analysis.tables.modules import source_kernels

        if name not in set(self.sources()["name"].to_list()):
            raise ProfviewError(self.path, f"no source line {name!r}")
        if step is None:
            return source_kernels(self.model, self._launch_frames, name, self._replayed_sources())
        mask = self._step_mask(step).to_numpy()  # the frames are per GPU row: narrow both together
        return source_kernels(self.step_model(step), self._launch_frames[mask], name, self._replayed_sources(mask))

    def sources(self) -> pl.DataFrame:
        """GPU time by source line (see :func:`profview.analysis.tables.modules.source_table`)."""
        from ..analysis.tables.modules import source_table

        def compute() -> pl.DataFrame:
            if not self.model.host["is_python"].any():
                return pl.DataFrame()
            return source_table(self.model, self._launch_frames, self._replayed_sources())

        return self._trace_only(self._graph_view_name("sources"), NO_SOURCES, compute)
