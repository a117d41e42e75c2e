"""Issue 24: a profile's efficiency views: GPU time by kernel category, the perf model per operator
and shapes, per step model FLOPs, TFLOP/s and MFU, the kernel and operator tables' efficiency
columns, and the Overview's efficiency lines.  A mixin of
:class:`~profview.profiles.trace_profile.Profile`; every figure comes from
:mod:`profview.analysis.kernel_categories`, :mod:`~profview.analysis.perf_model` and
:mod:`~profview.analysis.device_peaks`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError

if TYPE_CHECKING:
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: Why a trace has no perf model (issue 24).
NO_SHAPES = (
    "no input shapes in this trace, so no FLOPs or bytes per operator "
    "(record with torch.profiler.profile(record_shapes=True))"
)
NO_MODELLED = "no operator in this trace that the perf model sizes (GEMM, attention, convolution, pointwise)"


class EfficiencyViews(ProfileHost):
    """Efficiency (issue 24): kernel categories, the perf model, per-step model FLOPs."""

    @cached_property
    def _categorized(self) -> pl.DataFrame:
        """``model.gpu`` with ``backend``, ``op_name`` and ``category`` per GPU event
        (:mod:`.analysis.kernel_categories`)."""
        from ..analysis.communication import classify_communication
        from ..analysis.kernel_categories import categorize, operator_names

        backend = (self.metadata.get("distributedInfo") or {}).get("backend")
        gpu = classify_communication(self.model.gpu, self.comm_pattern, backend if isinstance(backend, str) else None)
        return categorize(gpu, operator_names(self.model.host, self.model.gpu["op_row"]))

    def categories(self, step: int | None = None) -> pl.DataFrame:
        """GPU time by kernel category (see :func:`profview.analysis.kernel_categories.category_table`)."""
        from ..analysis.kernel_categories import category_table

        if step is not None:
            self._trace_only("categories", "no GPU work in this trace", lambda: category_table(self._categorized))
            return category_table(self._categorized.filter(self._step_mask(step)))
        return self._trace_only("categories", "no GPU work in this trace", lambda: category_table(self._categorized))

    def kernel_categories(self) -> pl.DataFrame:
        """Per kernel name, its category (the one holding most of its time when operators of
        several categories launch it): ``name``, ``category``."""

        def compute() -> pl.DataFrame:
            return (
                self._categorized.lazy()  # the four columns it reads, not a copy of every column
                .filter(pl.col("kind") == "kernel")
                .group_by("name", "category")
                .agg(pl.col("dur").sum())
                .sort(["name", "dur", "category"], descending=[False, True, False])
                .group_by("name", maintain_order=True)
                .first()
                .select("name", "category")
                .collect()
            )

        return self._trace_only("kernel_categories", "no kernels in this trace", compute)

    def device_peak(self) -> tuple[str | None, Any]:
        """(the trace's device name, its :class:`~profview.analysis.device_peaks.DevicePeak` or None)."""
        from ..analysis.device_peaks import trace_device

        return trace_device(self.metadata, self._busiest_device)

    @cached_property
    def _busiest_device(self) -> int | None:
        """The device most GPU events ran on (a fact kept with the views)."""
        saved = self.saved.facts().get("busiest_device") if self.saved else None
        if isinstance(saved, int):
            return saved
        devices = self.gpu["device"].drop_nulls() if self.is_trace else None
        device = int(devices.mode().sort()[0]) if devices is not None and devices.len() else None
        if device is not None:
            self.fresh_facts["busiest_device"] = device
        return device

    @cached_property
    def _call_work(self) -> pl.DataFrame:
        """The modelled operator calls with their FLOPs/bytes (:func:`.analysis.perf_model.call_work`),
        ``tf32`` (an fp32 call whose kernels ran on tensor cores); wrappers dropped."""
        from ..analysis.operators import operator_rows
        from ..analysis.perf_model import call_work, modeled, wrapper_calls

        # The operator rows if they are made already, else those of modelled operators alone: a
        # kernel export needs no others (30 MB less at its peak on gpt2_train_big, issue 25).
        rows = vars(self).get("_operator_rows")
        calls = call_work(rows if rows is not None else operator_rows(self.model, only=modeled))
        tf32_ops = (
            self._categorized.filter(pl.col("name").str.contains(r"(?i)tf32|xf32") & pl.col("op_row").is_not_null())[
                "op_row"
            ]
            .unique()
            .implode()
        )
        wrappers = pl.Series("wrapper", wrapper_calls(calls["row"].to_list(), self.model.tree.parent), dtype=pl.Boolean)
        return calls.filter(~wrappers).with_columns(pl.col("row").is_in(tf32_ops).alias("tf32"))

    def _shapes_check(self, calls: pl.DataFrame) -> None:
        """One line saying why a trace has no perf model rows (no shapes, or no modelled operators)."""
        if calls.height:
            return
        if self.model.host["input_dims"].drop_nulls().len() == 0:
            raise ProfviewError(self.path, NO_SHAPES)
        raise ProfviewError(self.path, NO_MODELLED)

    def efficiency(
        self, peak_tflops: float | None = None, peak_tb_s: float | None = None, step: int | None = None
    ) -> pl.DataFrame:
        """The perf model per (operator, input dims, input types, params) (see
        :func:`profview.analysis.perf_model.efficiency_table`); ``peak_tflops``/``peak_tb_s``
        replace the device's peaks from the table; ``step``: that step's calls alone (those that
        started in its host range, as the operator table under a step takes them)."""
        from ..analysis.perf_model import efficiency_table

        self._require("efficiency")
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no efficiency view (it needs a trace's shapes)")

        def compute() -> pl.DataFrame:
            self._shapes_check(self._call_work)
            return efficiency_table(self._call_work, self.device_peak()[1])

        if peak_tflops is None and peak_tb_s is None and step is None:
            return self._default_view("efficiency", compute)
        self._shapes_check(self._call_work)
        calls = self._call_work if step is None else self._step_calls(step)
        return efficiency_table(calls, self.device_peak()[1], peak_tflops=peak_tflops, peak_tb_s=peak_tb_s)

    def _step_calls(self, step: int) -> pl.DataFrame:
        """The modelled calls that started in step ``step``'s host range (an unknown step: one line)."""
        from ..analysis.step_scope import step_host_range

        self._window(step)  # an unknown step is a one-line error naming the steps there are
        found = step_host_range(self.model, step)
        if found is None:
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        start, end = found
        return self._call_work.filter((pl.col("ts") >= start) & (pl.col("ts") <= end))

    def step_efficiency(self, peak_tflops: float | None = None) -> pl.DataFrame:
        """Per step: ``gpu_busy_us`` (the one GPU-busy rule: all GPU work in the step's window,
        work launched before the profiling window included; docs/efficiency.md), ``model_tflop``
        (FLOPs of the modelled operators the step ran, in 10^12), ``tflops_s`` (÷ the step's
        duration) and ``mfu_pct`` (÷ the device's peak for the precision carrying most FLOPs).
        Kept (and cached) like the default views when no peak is given."""
        if peak_tflops is None:
            return self._default_view("step_efficiency", self._step_efficiency)
        return self._step_efficiency(peak_tflops)

    def _step_efficiency(self, peak_tflops: float | None = None) -> pl.DataFrame:
        from ..analysis.perf_model import dominant_precision, step_flops
        from ..analysis.step_scope import step_host_range

        steps = self.steps()
        ranges = []
        for step in steps["step"].to_list():
            found = step_host_range(self.model, step) if step is not None and step >= 0 else None
            start, end = found or (self.model.span_start, self.model.span_end)
            ranges.append((step, start, end))
        frame = pl.DataFrame(ranges, schema={"step": pl.Int64, "start": pl.Float64, "end": pl.Float64}, orient="row")
        flops = step_flops(self._call_work, frame)
        peak_entry = self.device_peak()[1]
        precision = dominant_precision(self._call_work)
        peak = peak_tflops if peak_tflops is not None else (peak_entry.peak_tflops(precision) if peak_entry else None)
        from ..analysis.step_scope import step_gpu_busy

        busy = step_gpu_busy(self.model).select("step", pl.col("gpu_busy_us").round(3))
        table = steps.select("step", "duration_us").join(flops, on="step", how="left").join(busy, on="step", how="left")
        return table.select(
            "step",
            "gpu_busy_us",
            (pl.col("model_flops") / 1e12).alias("model_tflop"),
            pl.when(pl.col("duration_us") > 0)
            .then(pl.col("model_flops") / pl.col("duration_us") / 1e6)
            .alias("tflops_s"),
            (
                pl.when(pl.col("duration_us") > 0).then(
                    pl.col("model_flops") / pl.col("duration_us") / 1e6 / peak * 100
                )
                if peak
                else pl.lit(None, dtype=pl.Float64)
            ).alias("mfu_pct"),
        )

    def kernel_efficiency(self) -> pl.DataFrame:
        """Per kernel name: ``category`` and ``tflops_s`` (model FLOPs of the calls that launched it
        ÷ its time; null where none was modelled) — the columns the kernel view gains."""
        from ..analysis.perf_model import kernel_flops, kernel_tflops

        def compute() -> pl.DataFrame:
            flops = kernel_flops(self._categorized, self._call_work, self.model.tree.subtree_end)
            tflops = kernel_tflops(self._categorized.with_columns(flops))
            return self.kernel_categories().join(tflops, on="name", how="left")

        return self._trace_only("kernel_efficiency", "no kernels in this trace", compute)

    def operator_efficiency(self, by_shapes: bool = False) -> pl.DataFrame:
        """Per operator name (and input dims): ``category`` (by the operator rule of
        :mod:`..analysis.kernel_categories`) and ``tflops_s`` of its modelled calls."""
        from ..analysis.kernel_categories import operator_category
        from ..analysis.perf_model import operator_tflops

        def compute(by_shapes: bool) -> pl.DataFrame:
            frame = operator_tflops(self._call_work, by_shapes)
            names = self._operator_rows["name"].unique().to_list() if not by_shapes else frame["name"].to_list()
            categories = pl.DataFrame(
                {"name": names, "category": [operator_category(n) for n in names]},
                schema={"name": pl.String, "category": pl.String},
            ).unique("name")
            keys = ["name", "input_dims"] if by_shapes else ["name"]
            if by_shapes:
                return frame.join(categories, on="name", how="left").select(*keys, "category", "tflops_s")
            return categories.join(frame, on="name", how="left").select(*keys, "category", "tflops_s")

        if by_shapes:
            return compute(True)
        return self._default_view("op_efficiency", lambda: compute(False))

    def efficiency_lines(self, step: int | None = None) -> list[str]:
        """The Overview's efficiency lines: GPU time by kernel category, and the average step's
        model FLOPs, achieved TFLOP/s and MFU against the device's peak (or why there are none)."""
        if not self.is_trace:
            return []
        from ..frames import fmt_us

        lines = []
        try:  # every figure below is a kept view: a re-opened trace reads them from the cache
            categories = self.categories(step).filter(pl.col("total_us") > 0)
        except ProfviewError:  # no GPU work
            return []
        shares = ", ".join(f"{c} {p:.1f}%" for c, p in categories.select("category", "pct").head(6).iter_rows())
        more = f", … {categories.height - 6} more" if categories.height > 6 else ""
        lines.append(f"GPU time by category: {shares}{more}")
        try:
            modelled = self.efficiency()
            per_step = self.step_efficiency()
        except ProfviewError as exc:  # no shapes, or nothing modelled: say what is missing, in one line
            return [*lines, f"model FLOPs: none — {exc.problem}"]
        rows = per_step if step is None else per_step.filter(pl.col("step") == step)
        if rows.height == 0:
            return lines
        name, peak = self.device_peak()
        by_precision = (
            modelled.group_by("precision")
            .agg((pl.col("calls") * pl.col("gflops")).sum().alias("gflop"))
            .drop_nulls("precision")
            .sort(["gflop", "precision"], descending=[True, False])
        )
        precision = str(by_precision["precision"][0]) if by_precision.height else None
        tflop = _mean(rows["model_tflop"])
        rate = step_rate(rows, self.steps())
        what = "average step" if step is None and rows.height > 1 else (f"step {step}" if step is not None else "step")
        line = f"model FLOPs per {what} {_flop_text(tflop)}, {_flop_text(rate, 1)}/s"
        if peak is not None and peak.peak_tflops(precision):
            mfu = rate / float(peak.peak_tflops(precision) or 1.0) * 100
            shown = f"{mfu:.1f}" if mfu >= 0.1 or mfu == 0 else f"{mfu:.2g}"
            line += f", MFU {shown}% of the {peak.name} {precision} peak {peak.peak_tflops(precision):g} TFLOP/s"
        else:
            line += f" (no peak known for {name or 'this device'}: --peak-tflops sets one)"
        lines.append(line)
        busy = _mean(rows["gpu_busy_us"])
        lines.append(
            f"GPU busy per {what} {fmt_us(busy)} (all GPU work in the step, launched before the window included)"
        )
        return lines


def step_rate(rows: pl.DataFrame, steps: pl.DataFrame) -> float:
    """The model TFLOP/s of the steps of ``rows`` (``step``, ``model_tflop``): their FLOPs over
    their time, total ÷ total (not the mean of per-step rates: a short step weighs as its time)."""
    timed = rows.join(steps.select("step", "duration_us"), on="step", how="inner").drop_nulls("model_tflop")
    seconds = float(timed["duration_us"].sum() or 0.0) / 1e6
    return float(timed["model_tflop"].sum() or 0.0) / seconds if seconds > 0 else 0.0


def _flop_text(tflop: float, decimals: int = 3) -> str:
    """An amount of TFLOP in the unit that shows it: TFLOP from 1, GFLOP below (a small model's step
    is not ``0.000 TFLOP``)."""
    return f"{tflop:.{decimals}f} TFLOP" if tflop >= 1 or tflop == 0 else f"{tflop * 1e3:.3g} GFLOP"


def _mean(values: pl.Series) -> float:
    """The mean of a numeric column (0 for none)."""
    mean = values.drop_nulls().mean()
    return float(mean) if isinstance(mean, (int, float)) else 0.0
