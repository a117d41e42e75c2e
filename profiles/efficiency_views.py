"""A profile's efficiency views: GPU time by kernel category, the perf model per operator
and shapes, per step model FLOPs, TFLOP/s and MFU, and the Overview's efficiency lines (the kernel
and operator tables' categories need no model: issue 32, :func:`profview.profiles.views.with_efficiency`).  A mixin of
:class:`~profview.profiles.trace_profile.Profile`; every figure comes from
:mod:`profview.analysis.efficiency.categories`, :mod:`~profview.analysis.efficiency.perf_model` and
:mod:`~profview.analysis.efficiency.device_peaks`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError
from .iteration_scope import IterationScope
from .recording_advice import fit_advice

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
    """Efficiency: kernel categories, the perf model, per-step model FLOPs."""

    @cached_property
    def _categorized(self) -> pl.DataFrame:
        """``model.gpu`` with ``backend``, ``op_name`` and ``category`` per GPU event
        (:mod:`.analysis.efficiency.categories`)."""
        from ..analysis.efficiency.categories import categorize, operator_names
        from ..analysis.trace.communication import classify_communication

        backend = (self.metadata.get("distributedInfo") or {}).get("backend")
        gpu = classify_communication(self.model.gpu, self.comm_pattern, backend if isinstance(backend, str) else None)
        return categorize(gpu, operator_names(self.model.host, self.model.gpu["op_row"]))

    def categories(self, step: int | IterationScope | None = None) -> pl.DataFrame:
        """GPU time by kernel category (see :func:`profview.analysis.efficiency.categories.category_table`)."""

        def compute(frame: pl.DataFrame | None = None) -> pl.DataFrame:
            # imported here: a re-open reads the kept table without the category rules (issue 42)
            from ..analysis.efficiency.categories import category_table

            return category_table(self._categorized if frame is None else frame)

        if step is not None:
            self._trace_only("categories", "no GPU work in this trace", compute)
            return compute(self._categorized.filter(self._step_mask(step)))
        return self._trace_only("categories", "no GPU work in this trace", compute)

    def device_peak(self) -> tuple[str | None, Any]:
        """(the trace's device name, its :class:`~profview.analysis.efficiency.device_peaks.DevicePeak` or None)."""
        from ..analysis.efficiency.device_peaks import trace_device

        return trace_device(self.metadata, self._busiest_device)

    def device_inference(self) -> str | None:
        """Why the device whose peaks rate this trace is inferred (the GPU work ran on a device
        ``deviceProperties`` does not list), or None when the trace records it."""
        from ..analysis.efficiency.device_peaks import device_inferred

        return device_inferred(self.metadata, self._busiest_device) if self.is_trace else None

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
        """The modelled operator calls with their FLOPs/bytes (:func:`.analysis.efficiency.perf_model.call_work`),
        ``tf32`` (an fp32 call whose kernels ran on tensor cores); wrappers and inner calls dropped.
        Compiled Triton kernels are one call per execution (:meth:`_triton_calls`)."""
        from ..analysis.efficiency.perf_model import call_rank, call_work, copies_only, modeled, nested_calls
        from ..analysis.efficiency.work.triton import is_triton
        from ..analysis.tables.operators import operator_rows

        # Folded calls are calls here (the innermost of autocast's mul-in-mul is the row), and only
        # the modelled operators' rows are made: a kernel export needs no others (issue 25).
        rows = operator_rows(self.model, only=modeled, keep_folded=True)
        triton = [n for n in rows["name"].unique().to_list() if n and is_triton(n)]
        calls = call_work(rows.filter(~pl.col("name").is_in(triton)))
        tf32_ops = (  # the two columns it reads (no categories needed: issue 32)
            self.model.gpu.lazy()
            .filter(pl.col("name").str.contains(r"(?i)tf32|xf32") & pl.col("op_row").is_not_null())
            .select(pl.col("op_row").unique().implode())
            .collect()
            .to_series()
        )
        ranks = [call_rank(n, f) for n, f in calls.select("name", "family").iter_rows()]
        launched = self.model.gpu["op_row"].drop_nulls().to_numpy()
        ranks = copies_only(calls["row"].to_numpy(), ranks, self.model.tree.subtree_end, launched)
        wrapper, inner = nested_calls(calls["row"].to_numpy(), ranks, self.model.tree.subtree_end)
        dropped = pl.Series("dropped", wrapper, dtype=pl.Boolean) | pl.Series("inner", inner, dtype=pl.Boolean)
        calls = calls.filter(~dropped).with_columns(pl.col("row").is_in(tf32_ops).alias("tf32"))
        calls = self._with_gemm_layout(calls)
        if triton:
            triton_calls = self._triton_calls(rows.filter(pl.col("name").is_in(triton)))
            calls = pl.concat([calls, triton_calls], how="diagonal_relaxed")
        replays = self._replay_calls()
        if replays is None:
            return calls
        return pl.concat([calls, replays], how="diagonal_relaxed")

    def _replay_calls(self) -> pl.DataFrame | None:
        """Each replayed call a capture attributes, sized from its captured call's shapes by the
        same models as an eager call (:func:`.analysis.efficiency.replays.replay_calls`): one call
        per (replay, captured call); replayed work no captured call sizes keeps its time, and why.
        None where the trace replays no graph."""
        events = self._replayed_events()
        if events is None:
            return None
        from ..analysis.efficiency.replays import replay_calls
        from ..analysis.efficiency.work.gemm import kernel_layout
        from ..analysis.efficiency.work.triton import TRITON_NAME

        captured = self._captured_calls(sorted(set(events["capture"].drop_nulls().to_list())))
        # A Triton kernel no capture attributes is sized by its name's only compiled variant (_triton_calls)
        events = events.filter(pl.col("op").is_not_null() | ~pl.col("kernel").str.contains(TRITON_NAME.pattern))
        calls = replay_calls(events, captured)
        kernels = calls.filter(pl.col("family") == "gemm")["kernel"].unique().to_list()
        layouts = {k: kernel_layout(k) for k in kernels if k}
        layout = pl.col("kernel").replace_strict(layouts, default=None, return_dtype=pl.String)
        return calls.with_columns(pl.when(pl.col("family") == "gemm").then(layout).alias("kernel_layout")).drop(
            "kernel"
        )

    def _replayed_events(self) -> pl.DataFrame | None:
        """The replayed GPU events (``replay``, ``capture``, ``launch``, ``dur``, ``kernel``,
        ``ts_gpu``, ``op``, ``op_row``, ``how``, ``modelled``: whether the perf model knows ``op``, and ``ts``:
        the replay's graph launch on the host, its first event where the window cut the launch off)."""
        if not self.is_trace or not self.has_graphs():
            return None
        from ..analysis.efficiency.op_models import modeled
        from ..analysis.graphs.attribution import replayed

        frames = self._graph_frames
        events = replayed(frames, self.gpu, ("capture", "launch", "op", "op_row", "how"))
        if events.height == 0:
            return None
        host_ts = self.model.host["ts"]
        launches = frames.replays.select("replay", "launch_row").filter(pl.col("launch_row").is_not_null())
        launch_ts = launches.select(
            "replay", host_ts.gather(launches["launch_row"]).alias("launch_ts").cast(pl.Float64)
        )
        ops = {op: modeled(op) for op in events["op"].drop_nulls().unique().to_list()}
        events = events.with_columns(
            self.gpu["ts"].gather(events["gpu_row"]).alias("ts_gpu"),
            pl.col("name").cast(pl.String).alias("kernel"),
            pl.col("op").replace_strict(ops, default=False, return_dtype=pl.Boolean).alias("modelled"),
        ).join(launch_ts, on="replay", how="left")
        first = pl.col("ts_gpu").min().over("replay")
        return events.with_columns(pl.coalesce("launch_ts", first).alias("ts")).select(
            "replay", "capture", "launch", "dur", "kernel", "ts_gpu", "op", "op_row", "how", "modelled", "ts"
        )

    def _captured_calls(self, numbers: list[int]) -> pl.DataFrame:
        """Per launch of the captures ``numbers`` (their places in :meth:`_captures`), the modelled
        call around it in its capture trace (``capture``, ``launch``, ``call``: its host row, and
        the call's columns, sized by :func:`.analysis.efficiency.perf_model.call_work`): the
        calls as the efficiency view keeps them for an eager trace (no wrappers, no inner calls)."""
        from ..analysis.efficiency.replays import CALL_COLUMNS, CALL_SCHEMA, enclosing_calls

        captures = self._captures()
        parts = []
        for number in numbers:
            capture = captures[number]
            model = self._capture_model(capture.origin)
            kept = self._kept_calls(model).sort("row")
            rows = kept["row"].to_numpy()
            at = enclosing_calls(rows, model.tree.subtree_end[rows], capture.launches["row"].to_numpy())
            found = pl.DataFrame({"launch": capture.launches["index"], "at": at}).filter(pl.col("at") >= 0)
            picked = kept.select(pl.col("row").alias("call"), *CALL_COLUMNS).with_row_index("at")
            parts.append(
                found.join(picked.with_columns(pl.col("at").cast(pl.Int64)), on="at")
                .drop("at")
                .with_columns(pl.lit(number, dtype=pl.Int64).alias("capture"))
            )
        schema = {"capture": pl.Int64, "launch": pl.Int64, "call": pl.Int64}
        if not parts:
            return pl.DataFrame(schema={**schema, **CALL_SCHEMA})
        return pl.concat(parts, how="diagonal_relaxed").cast(schema)  # type: ignore[arg-type]

    def _capture_model(self, origin: str) -> Any:
        """The linked model of the trace a capture is in: this one's, or its capture file's (opened once)."""
        if origin == self.path:
            return self.model
        opened: dict[str, Any] = vars(self).setdefault("_capture_profiles", {})
        if origin not in opened:
            if self.open_capture is None:
                raise ProfviewError(origin, "--capture: this profile was not opened by profview.load")
            opened[origin] = self.open_capture(origin, use_cache=self.capture_use_cache)
        return opened[origin].model

    @staticmethod
    def _kept_calls(model: Any) -> pl.DataFrame:
        """The modelled operator calls of ``model`` sized from their arguments, wrappers and inner
        calls dropped (:func:`.analysis.efficiency.perf_model.nested_calls`), Triton host ops included."""
        from ..analysis.efficiency.perf_model import call_rank, call_work, copies_only, modeled, nested_calls
        from ..analysis.tables.operators import operator_rows

        calls = call_work(operator_rows(model, only=modeled, keep_folded=True))
        ranks = [call_rank(n, f) for n, f in calls.select("name", "family").iter_rows()]
        launched = model.gpu["op_row"].drop_nulls().to_numpy()
        ranks = copies_only(calls["row"].to_numpy(), ranks, model.tree.subtree_end, launched)
        wrapper, inner = nested_calls(calls["row"].to_numpy(), ranks, model.tree.subtree_end)
        dropped = pl.Series("dropped", wrapper, dtype=pl.Boolean) | pl.Series("inner", inner, dtype=pl.Boolean)
        return calls.filter(~dropped)

    def _with_gemm_layout(self, calls: pl.DataFrame) -> pl.DataFrame:
        """Calls with ``kernel_layout``: for a GEMM, the operand layout its first kernel's name
        states (an inference from a name, :func:`.analysis.efficiency.work.gemm.kernel_layout`)."""
        from ..analysis.efficiency.perf_model import first_kernels
        from ..analysis.efficiency.work.gemm import kernel_layout

        gemms = calls.filter(pl.col("family") == "gemm")
        kernels = first_kernels(self.model.gpu, gemms["row"].to_numpy(), self.model.tree.subtree_end)
        layouts = {name: kernel_layout(name) for name in kernels["kernel"].unique().to_list() if name}
        found = kernels.select(
            "row", pl.col("kernel").replace_strict(layouts, default=None, return_dtype=pl.String).alias("kernel_layout")
        )
        return calls.join(found, on="row", how="left")

    def _triton_calls(self, host_ops: pl.DataFrame) -> pl.DataFrame:
        """One call per execution of a compiled Triton kernel, sized by its host op's
        arguments (:func:`.analysis.efficiency.triton.executions`); an execution no call sizes keeps
        its time, and the reason."""
        from ..analysis.efficiency.perf_model import call_work
        from ..analysis.efficiency.triton import executions

        names = host_ops["name"].unique().implode()
        kernels = self.model.gpu.filter((pl.col("kind") == "kernel") & pl.col("name").is_in(names))
        attributed = self._attributed_replays() if self.has_graphs() else None
        if attributed is not None:  # sized through their capture (:meth:`_replay_calls`)
            kept = ~pl.int_range(self.model.gpu.height).is_in(attributed["gpu_row"].implode())
            kernels = self.model.gpu.filter(kept & (pl.col("kind") == "kernel") & pl.col("name").is_in(names))
        runs = executions(host_ops, kernels).rename({"note": "how_note"})
        sized = call_work(runs.filter(pl.col("how") != "none"))
        sized = sized.with_columns(pl.coalesce("note", "how_note").alias("note"))
        unsized = runs.filter(pl.col("how") == "none").with_columns(
            pl.col("how_note").alias("note"), pl.lit("triton").alias("family")
        )
        return (
            pl.concat([sized, unsized], how="diagonal_relaxed")
            .drop("how_note", "how")
            .with_columns(pl.lit(False).alias("tf32"))
        )

    def _shapes_check(self, calls: pl.DataFrame) -> None:
        """One line saying why a trace has no perf model rows (no shapes, or no modelled operators)."""
        if calls.height:
            return
        if self.model.host["input_dims"].drop_nulls().len() == 0:
            raise ProfviewError(self.path, fit_advice(self.format, NO_SHAPES))
        raise ProfviewError(self.path, NO_MODELLED)

    def efficiency(
        self,
        peak_tflops: float | None = None,
        peak_tb_s: float | None = None,
        step: int | IterationScope | None = None,
    ) -> pl.DataFrame:
        """The perf model per (operator, input dims, input types, params) (see
        :func:`profview.analysis.efficiency.perf_model.efficiency_table`); ``peak_tflops``/``peak_tb_s``
        replace the device's peaks from the table; ``step``: that step's calls alone (those that
        started in its host range, as the operator table under a step takes them)."""
        self._require("efficiency")
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no efficiency view (it needs a trace's shapes)")

        def compute() -> pl.DataFrame:
            # imported here: a re-open reads the kept table without the perf model (issue 42)
            from ..analysis.efficiency.perf_model import efficiency_table

            self._shapes_check(self._call_work)
            return efficiency_table(self._call_work, self.device_peak()[1])

        if peak_tflops is None and peak_tb_s is None and step is None:
            return self._default_view(self._graph_view_name("efficiency"), compute)
        from ..analysis.efficiency.perf_model import efficiency_table

        self._shapes_check(self._call_work)
        calls = self._call_work if step is None else self._step_calls(step)
        return efficiency_table(calls, self.device_peak()[1], peak_tflops=peak_tflops, peak_tb_s=peak_tb_s)

    def _step_calls(self, step: int | IterationScope) -> pl.DataFrame:
        """The modelled calls that started in step ``step``'s host range (an unknown step: one line);
        an iteration's: those that started in its host range (issue 40)."""
        from ..analysis.tables.step_scope import step_host_range

        if isinstance(step, IterationScope):
            return self._call_work.filter((pl.col("ts") >= step.start) & (pl.col("ts") <= step.end))
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
            return self._default_view(self._graph_view_name("step_efficiency"), self._step_efficiency)
        return self._step_efficiency(peak_tflops)

    def _step_efficiency(self, peak_tflops: float | None = None) -> pl.DataFrame:
        from ..analysis.efficiency.perf_model import dominant_precision, step_flops
        from ..analysis.tables.step_scope import step_host_range

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
        if peak_tflops is None and peak and self._mostly_unsized():
            peak = None  # the precision of most of the work is unknown: no MFU (as the Overview says)
        from ..analysis.tables.step_scope import step_gpu_busy

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

    def _mostly_unsized(self) -> bool:
        """Whether rows without figures hold more GPU time than sized rows (a graph replay with no
        capture): the sized FLOPs' precision then says nothing of the work's, and no MFU is given."""
        try:
            sized, unsized, _left = self.efficiency_share(self.efficiency())
        except ProfviewError:
            return False
        return unsized > sized

    def kernel_triton(self) -> pl.DataFrame:
        """Per Triton kernel name, ``fused_ops`` (from the name) and the ``kernel_file``,
        ``kernel_hash``, ``num_warps`` and ``num_stages`` its host ops recorded
        (:func:`profview.analysis.efficiency.triton.kernel_columns`); kept with the cached views.
        The host ops come from the linked model where it is built, else from the events (a
        kernel export links nothing for these)."""
        from ..analysis.efficiency.triton import TRITON_KERNEL_COLUMNS, kernel_columns

        def compute() -> pl.DataFrame:
            host = self.model.host if "model" in vars(self) else self._trace_events()
            wanted = ["name", *TRITON_KERNEL_COLUMNS[1:]]
            ops = host.filter(pl.col("kernel_hash").is_not_null()) if "kernel_hash" in host.columns else None
            found = kernel_columns(self.kernels()["name"].to_list(), ops.select(wanted) if ops is not None else None)
            if found is None:
                return pl.DataFrame(schema={"name": pl.String, "fused_ops": pl.String})
            return found

        return self._default_view("kernel_triton", compute)

    def efficiency_share(
        self, frame: pl.DataFrame, step: int | IterationScope | None = None
    ) -> tuple[float, float, float]:
        """What share (%) of GPU time (all GPU events', as the categories view counts it; ``step``:
        that step's) the efficiency rows ``frame`` size (rows with figures), hold without figures
        (their ``note`` says why), and leave out (operators the perf model does not know)."""
        try:
            total = float(self.categories(step)["total_us"].sum() or 0.0)
        except ProfviewError:  # no GPU work
            return 0.0, 0.0, 0.0
        if total <= 0:
            return 0.0, 0.0, 0.0
        sized = float(frame.filter(pl.col("gflops").is_not_null())["kernel_us"].sum() or 0.0)
        unsized = float(frame.filter(pl.col("gflops").is_null())["kernel_us"].sum() or 0.0)
        sized_pct, unsized_pct = sized / total * 100, unsized / total * 100
        return sized_pct, unsized_pct, max(100.0 - sized_pct - unsized_pct, 0.0)

    def efficiency_share_text(self, frame: pl.DataFrame, step: int | IterationScope | None = None) -> str:
        """:meth:`efficiency_share` in words, for the summary line and the viewer's caption."""
        sized, unsized, left = self.efficiency_share(frame, step)
        return f"rows size {sized:.1f}% of GPU time, {unsized:.1f}% in rows without figures, {left:.1f}% in none"

    def efficiency_share_short(self, frame: pl.DataFrame, step: int | IterationScope | None = None) -> str:
        """:meth:`efficiency_share` for the viewer's one-line caption (what the rows leave unsized)."""
        sized, unsized, _left = self.efficiency_share(frame, step)
        return f"rows size {sized:.1f}% of GPU time" + (f" ({unsized:.1f}% unsized)" if unsized >= 0.05 else "")

    def _step_efficiency_rows(self, step: int, modelled: pl.DataFrame) -> pl.DataFrame:
        """The efficiency rows of one step's calls (none where the step has no modelled call)."""
        try:
            return self.efficiency(step=step)
        except ProfviewError:
            return _no_rows(modelled)

    def efficiency_figures(self, step: int | None = None) -> dict[str, Any] | None:
        """The Overview's efficiency figures as numbers (None where the trace has no GPU work):
        GPU time by kernel category, and the average step's model FLOPs, achieved TFLOP/s and MFU
        against the device's peak.  A figure that cannot be known is None, with the reason in
        ``mfu_unknown`` or ``model_unknown``; :meth:`efficiency_lines` renders these words."""
        if not self.is_trace:
            return None
        try:  # every figure below is a kept view: a re-opened trace reads them from the cache
            categories = self.categories(step).filter(pl.col("total_us") > 0)
        except ProfviewError:  # no GPU work
            return None
        figures: dict[str, Any] = {
            "step": step,
            "categories": [
                {"category": str(c), "total_us": float(t), "pct": float(p)}
                for c, t, p in categories.select("category", "total_us", "pct").iter_rows()
            ],
            "model": None,
            "model_unknown": None,
        }
        try:
            modelled = self.efficiency()
            per_step = self.step_efficiency()
        except ProfviewError as exc:  # no shapes, or nothing modelled: say what is missing, in one line
            figures["model_unknown"] = exc.problem
            return figures
        rows = per_step if step is None else per_step.filter(pl.col("step") == step)
        if rows.height == 0:
            figures["model_unknown"] = "no step of the perf model's table" + ("" if step is None else f" is {step}")
            return figures
        name, peak = self.device_peak()
        # issue 51: under a chosen step every figure is the step's own: its calls' precisions and
        # the share of its GPU time they size
        scoped = modelled if step is None else self._step_efficiency_rows(step, modelled)
        by_precision = (
            scoped.group_by("precision")
            .agg((pl.col("calls") * pl.col("gflops")).sum().alias("gflop"))
            .drop_nulls("precision")
            .sort(["gflop", "precision"], descending=[True, False])
        )
        precision = str(by_precision["precision"][0]) if by_precision.height else None
        whole = step is None and rows.height == 1 and "step" in rows.columns and (rows["step"][0] or 0) < 0
        scope = (
            "step" if step is not None else "whole_trace" if whole else "average_step" if rows.height > 1 else "step"
        )
        rate = step_rate(rows, self.steps())
        # no FLOPs known, or none of the calls sized: unknown, not 0
        known = rows["model_tflop"].drop_nulls().len() > 0
        sized, unsized, left = self.efficiency_share(scoped, step)
        known = known and not (sized <= 0 and not _mean(rows["model_tflop"]))
        peak_tflops = float(peak.peak_tflops(precision)) if peak is not None and peak.peak_tflops(precision) else None
        mfu: float | None = None
        mfu_unknown: str | None = None
        if peak_tflops is None:
            mfu_unknown = f"no peak known for {name or 'this device'}: --peak-tflops sets one"
        elif unsized > sized:  # most work of unknown precision: no peak (the steps view: _mostly_unsized)
            mfu_unknown = (
                f"the sized rows, {_precision_mix(by_precision)}, hold {sized:.1f}% of GPU time; "
                f"{unsized:.1f}% is unsized, of unknown precision"
            )
        else:
            mfu = rate / peak_tflops * 100 if known else None
            mfu_unknown = None if known else "no step's FLOPs are known"
        total_gflop = float(by_precision["gflop"].sum() or 0.0)
        figures["model"] = {
            "scope": scope,
            "steps": rows.height,
            "model_tflops_per_step": _mean(rows["model_tflop"]) if known else None,
            "model_tflops_per_s": rate if known else None,
            "mfu_pct": mfu,
            "mfu_unknown": mfu_unknown,
            "device": name,
            "peak_name": None if peak is None else peak.name,
            "precision": precision,
            "peak_tflops_per_s": peak_tflops,
            "device_inferred": self.device_inference(),
            "precision_mix": [
                {"precision": str(p), "flop_pct": (g / total_gflop * 100) if total_gflop > 0 else None}
                for p, g in by_precision.select("precision", "gflop").iter_rows()
            ],
            "precision_mix_text": _precision_mix(by_precision),
            "sized_pct": sized,
            "unsized_pct": unsized,
            "unmodelled_pct": left,
            "gpu_busy_us_per_step": _mean(rows["gpu_busy_us"]) if rows["gpu_busy_us"].drop_nulls().len() else None,
        }
        return figures

    def efficiency_lines(self, step: int | None = None) -> list[str]:
        """The Overview's efficiency lines: :meth:`efficiency_figures` in words."""
        figures = self.efficiency_figures(step)
        return [] if figures is None else efficiency_text(figures)


def efficiency_text(figures: dict[str, Any]) -> list[str]:
    """:meth:`EfficiencyViews.efficiency_figures` in words: GPU time by kernel category, and the
    average step's model FLOPs, achieved TFLOP/s and MFU against the device's peak (or why not)."""
    from ..frames import fmt_us

    step = figures["step"]
    categories = figures["categories"]
    shares = ", ".join(f"{c['category']} {c['pct']:.1f}%" for c in categories[:6])
    more = f", … {len(categories) - 6} more" if len(categories) > 6 else ""
    # issue 34: shares of the GPU events' summed time (the communication line's is of GPU busy time)
    scope = "" if step is None else f" in step {step}"
    lines = [f"GPU time by category{scope} (of all GPU events' time): {shares}{more}"]
    model = figures["model"]
    if model is None:
        unknown = figures["model_unknown"]
        if unknown and not unknown.startswith("no step of the perf model"):
            lines.append(f"model FLOPs: none — {unknown}")
        return lines
    # issue 34: each line says its scope (``per step 17 6.623 TFLOP`` read as one number)
    whole = model["scope"] == "whole_trace"
    what = (
        f"in step {step}"
        if step is not None
        else "in the whole trace (no steps)"
        if whole
        else "per average step"
        if model["scope"] == "average_step"
        else "per step"
    )
    tflop, rate = model["model_tflops_per_step"] or 0.0, model["model_tflops_per_s"] or 0.0
    line = f"model FLOPs {what}: {_flop_text(tflop)}, {_flop_text(rate, 1)}/s"
    if model["model_tflops_per_step"] is None:  # nothing sized: the FLOPs are unknown, not zero
        line = f"model FLOPs {what}: unknown (none of its calls is sized by the perf model)"
    elif model["peak_tflops_per_s"] is None:
        line += f" ({model['mfu_unknown']})"
    elif model["mfu_pct"] is None:
        line += f" (no MFU: {model['mfu_unknown']})"
    else:
        mfu = model["mfu_pct"]
        # two significant digits, never in exponent form (0.000028, not 2.8e-05)
        shown = f"{mfu:.1f}" if mfu >= 0.1 or mfu <= 0 else f"{mfu:.{1 - math.floor(math.log10(mfu))}f}"
        peak = f"{model['peak_name']} {model['precision']} peak {model['peak_tflops_per_s']:g} TFLOP/s"
        line += f", MFU {shown}% of the {peak}"
        mix = model["precision_mix_text"]
        if "%" in mix:  # several precisions carry sized FLOPs: the peak is the first one's
            line += f" (sized FLOPs: {mix})"
        if model["device_inferred"]:
            line += " (device inferred)"
    lines.append(line)
    if model["device_inferred"] and model["peak_name"] is not None:
        lines.append(model["device_inferred"])
    # issue 40: how much of the GPU time the rows size (a replayed call is sized through its capture)
    share = (
        f"rows size {model['sized_pct']:.1f}% of GPU time, {model['unsized_pct']:.1f}% in rows without "
        f"figures, {model['unmodelled_pct']:.1f}% in none"
    )
    lines.append(f"efficiency {share}" if step is None else f"efficiency in step {step}: {share}")
    lines.append(
        f"GPU busy {what}: {fmt_us(model['gpu_busy_us_per_step'] or 0.0)} "
        f"(all GPU work in the {'trace' if whole else 'step'}, "
        "launched before the window included)"
    )
    return lines


def _no_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.clear()


def step_rate(rows: pl.DataFrame, steps: pl.DataFrame) -> float:
    """The model TFLOP/s of the steps of ``rows`` (``step``, ``model_tflop``): their FLOPs over
    their time, total ÷ total (not the mean of per-step rates: a short step weighs as its time)."""
    timed = rows.join(steps.select("step", "duration_us"), on="step", how="inner").drop_nulls("model_tflop")
    seconds = float(timed["duration_us"].sum() or 0.0) / 1e6
    return float(timed["model_tflop"].sum() or 0.0) / seconds if seconds > 0 else 0.0


def _precision_mix(by_precision: pl.DataFrame) -> str:
    """The sized FLOPs' precisions in words (``fp32``, or ``bf16 97.0%, fp32 3.0%``), from the
    per-precision ``gflop`` sums :meth:`EfficiencyViews.efficiency_lines` makes."""
    total = float(by_precision["gflop"].sum() or 0.0)
    if total <= 0:
        return ", ".join(str(p) for p in by_precision["precision"].to_list()) or "of no known precision"
    shares = [(p, g / total * 100) for p, g in by_precision.select("precision", "gflop").iter_rows()]
    shown = [(p, pct) for p, pct in shares if pct >= 0.05]  # what rounds to 0.0% is not a share worth a word
    if len(shown) == 1:
        return str(shown[0][0])
    return ", ".join(f"{p} {pct:.1f}%" for p, pct in shown)


def _flop_text(tflop: float, decimals: int = 3) -> str:
    """An amount of TFLOP in the unit that shows it: TFLOP from 1, GFLOP below (a small model's step
    is not ``0.000 TFLOP``)."""
    return f"{tflop:.{decimals}f} TFLOP" if tflop >= 1 or tflop == 0 else f"{tflop * 1e3:.3g} GFLOP"


def _mean(values: pl.Series) -> float:
    """The mean of a numeric column (0 for none)."""
    mean = values.drop_nulls().mean()
    return float(mean) if isinstance(mean, (int, float)) else 0.0
