"""A profile's launch and Tensor Core views: per kernel launch its delay and durations, their
distribution per name, each stream's queue length (all as Holistic Trace Analysis defines them),
and Tensor Core use per GEMM and convolution kernel.  A mixin of
:class:`~profview.profiles.trace_profile.Profile`; the figures come from
:mod:`profview.analysis.tables.launch_stats` and :mod:`profview.analysis.efficiency.tensor_cores`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError

if TYPE_CHECKING:
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: The views of this mixin, by export name.
LAUNCH_VIEWS = ("launch_stats", "launch_names", "queue_length", "queue_series")
#: Why a trace has no launch statistics.
NO_LAUNCHES = (
    "no kernel launch calls (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync ...) linked to GPU work in this "
    "trace: launch statistics need the cuda_runtime/cuda_driver events with correlation ids"
)


class LaunchViews(ProfileHost):
    """Launch statistics, queue length and Tensor Core use."""

    def _launch_rows(self) -> pl.DataFrame:
        """Every launch's row (kept for the session), or the reason the trace has none."""
        if "launch_stats" not in self._facts:
            if not self.is_trace:
                raise ProfviewError(self.path, f"a {self.format} has no launch statistics (it holds no events)")
            self._require("launches")  # a trace that links no launch to its GPU work says why
            from ..analysis.tables.launch_stats import launch_stats

            model = self.model
            self._facts["launch_stats"] = launch_stats(model.host, model.gpu, self.span_start)
        frame: pl.DataFrame = self._facts["launch_stats"]
        if frame.height == 0:
            from ..analysis.tables.launch_stats import LAUNCH_CALLS

            calls = int(self.model.host["name"].cast(pl.String).is_in(LAUNCH_CALLS).sum())
            if calls:  # the host asked, and the trace has no GPU record of what it asked for
                raise ProfviewError(
                    self.path,
                    f"{calls:,} launch calls and no GPU event linked to them (GPU activities off, or the "
                    "profiler's GPU buffers lost): launch delays are unknown",
                )
            raise ProfviewError(self.path, NO_LAUNCHES)
        return frame

    def launch_stats(self) -> pl.DataFrame:
        """One row per GPU event launched by one call: its launch delay, the call's and its own
        duration, short kernel / slow launch / long delay (HTA's ``get_cuda_kernel_launch_stats``)."""
        return self._launch_rows()

    def launch_names(self) -> pl.DataFrame:
        """Per GPU event name: the distribution of its launch delays, its short kernels and long delays."""
        from ..analysis.tables.launch_stats import launch_stats_by_name

        return launch_stats_by_name(self._launch_rows())

    def queue_series(self) -> pl.DataFrame:
        """Per stream, the queue length after each change (HTA's ``get_queue_length_time_series``)."""
        from ..analysis.tables.launch_stats import queue_length_series

        return queue_length_series(self._launch_rows())

    def queue_length(self) -> pl.DataFrame:
        """Per stream, the queue length's summary (HTA's ``get_queue_length_summary``)."""
        from ..analysis.tables.launch_stats import queue_length_summary

        return queue_length_summary(self.queue_series())

    def launch_figures(self) -> dict[str, Any] | None:
        """The summary's launch figures (launches, short kernels, delays, per-stream queue maxima),
        or None where the trace has no launch statistics."""
        from ..analysis.tables.launch_stats import launch_totals

        try:
            rows = self._launch_rows()
        except ProfviewError:
            return None
        queue = self.queue_length()
        figures: dict[str, Any] = dict(launch_totals(rows))
        figures["queue_max_by_stream"] = {str(s): int(m) for s, m in zip(queue["stream"], queue["max"], strict=True)}
        return figures

    def tensor_cores(self) -> pl.DataFrame:
        """Each GEMM and convolution kernel with its Tensor Core use, read from its name (see
        :mod:`profview.analysis.efficiency.tensor_cores`)."""
        from ..analysis.efficiency.categories import with_name_category
        from ..analysis.efficiency.tensor_cores import tensor_core_table

        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no kernel names to read Tensor Core use from")
        table = tensor_core_table(with_name_category(self.kernels(), self.comm_pattern))
        if table.height == 0:
            raise ProfviewError(self.path, "no GEMM or convolution kernels in this trace")
        return table

    def tensor_core_hint(self) -> str | None:
        """The Overview's Tensor Core hint (:func:`profview.analysis.efficiency.tensor_cores.fp32_simt_hint`),
        or None (no such share, or no GEMM in the trace)."""
        from ..analysis.efficiency.tensor_cores import fp32_simt_hint

        try:
            return fp32_simt_hint(self.tensor_cores())
        except ProfviewError:
            return None
