"""A loaded profile: the one object the CLI, the viewer, exports and notebooks read.

A trace profile computes its views from the events frame (lazily, once each); a profile read
from a text table carries the views its format provides.  Either way every figure comes from
:mod:`profview.analysis`, so the CLI, the viewer and exports agree.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..analysis.events import gpu_work
from ..analysis.kernels import kernel_table
from ..errors import ProfviewError
from ..frames import Overview, with_share

if TYPE_CHECKING:
    from ..analysis.critical_path_frames import StepPaths
    from ..analysis.launch_index import LaunchIndex
    from ..analysis.model import TraceModel
    from ..store.trace_cache import SavedViews

# The model-based analysis modules (NumPy, the call tree) are imported where they are first
# needed, so that a kernel table from a cached trace starts with Polars alone.

VIEWS = ("kernels", "ops", "steps", "launches")
#: Why a trace has no memory / modules / sources view.
NO_MEMORY = "no memory events in this trace (record with torch.profiler.profile(profile_memory=True))"
NO_MODULES = "no nn.Module frames in this trace (record with with_stack=True or with_modules=True)"
NO_SOURCES = "no Python frames in this trace (record with with_stack=True)"
#: Why a trace has no perf model (issue 24).
NO_SHAPES = (
    "no input shapes in this trace, so no FLOPs or bytes per operator "
    "(record with torch.profiler.profile(record_shapes=True))"
)
#: Computing a critical path is done once, by whichever thread asks first (a viewer's workers
#: may ask for the same path at once: the others wait for it instead of computing it again).
_PATH_LOCK = threading.Lock()
NO_MODELLED = "no operator in this trace that the perf model sizes (GEMM, attention, convolution, pointwise)"
#: Why a trace has no critical path (issue 26).
NO_RUNTIME = (
    "no runtime launch events link the GPU work to the host in this trace (the critical path needs "
    "cuda_runtime/cuda_driver events with correlation ids: record with ProfilerActivity.CPU and CUDA)"
)


@dataclass
class Profile:
    """One profile: a trace (``events_source`` set) or the views of a text format (``tables``).

    ``events_source`` is the events frame, or a function that reads it (a cache hit reads events
    only when a view needs them); ``saved`` holds views computed by an earlier run for the same
    ``settings`` (see :mod:`profview.store.trace_cache`).  ``missing`` maps a view that this profile cannot
    provide to the reason, shown to the user.  ``comm_pattern`` (``--comm-pattern``, kept in
    ``settings``) is a regex naming more kernels as communication (see
    :mod:`profview.analysis.communication`); views are saved and kept per setting, so changing it
    never shows figures computed without it.
    """

    path: str
    format: str
    events_source: pl.DataFrame | Callable[[], pl.DataFrame] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    runs: list[str] = field(default_factory=list)
    run: str | None = None
    event_count: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    saved: SavedViews | None = None
    #: Reads the linked model stored by an earlier run (None: none stored, build it from the events);
    #: given (host columns, GPU columns), only those (and the call tree).
    saved_model: Callable[..., TraceModel | None] | None = field(default=None, repr=False)
    #: Whether the cache holds this profile's linked model (read from it, or written by
    #: :func:`profview.profiles.loading.remember_views`): then it is not written again.
    model_stored: bool = field(default=False, repr=False)
    #: Reads the launch index stored by an earlier run (None: none stored, compute it from the model).
    saved_launch_index: Callable[[], LaunchIndex | None] | None = field(default=None, repr=False)
    #: Whether the cache holds this profile's launch index (then it is not written again).
    launch_index_stored: bool = field(default=False, repr=False)
    cacheable: bool = False
    #: Reads the events frame again (from the cache, or by parsing the file again); set by
    #: :func:`profview.profiles.loading.load` for a trace it parsed.
    reread_events: Callable[[], pl.DataFrame] | None = field(default=None, repr=False)
    #: Let the events frame go once the model is linked (a one-shot export of a view that reads
    #: only the model and the GPU frame): the rest of the command runs in that much less memory;
    #: anything that still asks for the events reads them again (:attr:`reread_events`).
    release_events_after_link: bool = field(default=False, repr=False)
    #: Views computed in this process (not read from ``saved``), and facts about them.
    fresh: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    fresh_facts: dict[str, Any] = field(default_factory=dict, repr=False)
    _views: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _facts: dict[str, Any] = field(default_factory=dict, repr=False)
    _partial_models: dict[tuple[tuple[str, ...], tuple[str, ...]], TraceModel] = field(default_factory=dict, repr=False)
    _communication: dict[str | None, pl.DataFrame] = field(default_factory=dict, repr=False)

    # -- derived ---------------------------------------------------------------------------
    @property
    def is_trace(self) -> bool:
        """Whether this profile is a trace (it has events), not a text format's tables."""
        return self.events_source is not None

    @cached_property
    def events(self) -> pl.DataFrame | None:
        """The events frame of a trace (read now if it came from the cache); None for text formats."""
        source = self.events_source
        return source() if callable(source) else source

    def _trace_events(self) -> pl.DataFrame:
        """The events frame; :class:`ProfviewError` for a text format, which has none."""
        events = self.events
        if events is None:
            raise ProfviewError(self.path, f"{self.format} has no trace events")
        return events

    @cached_property
    def model(self) -> TraceModel:
        """The linked trace model (traces only): the stored one of a re-opened trace, else built."""
        if self.saved_model is not None:
            model = self.saved_model()
            if model is not None:
                self.model_stored = True
                return model
        from ..analysis.model import NEST_COLUMNS, link_model, nest_host

        gpu = self.gpu
        host_events = self._trace_events().select(NEST_COLUMNS)  # the same buffers, not a copy
        if self.release_events_after_link:
            self.release_events()  # the other columns go now, the host events once sorted
        nested = nest_host(host_events)  # the one stage that reads the events
        del host_events
        return link_model(nested, gpu)

    def release_events(self) -> None:
        """Let the held events frame go, if it can be read again (:attr:`reread_events`)."""
        if self.reread_events is not None and isinstance(self.events_source, pl.DataFrame):
            self.events_source = self.reread_events
            vars(self).pop("events", None)

    def model_with(self, host: tuple[str, ...], gpu: tuple[str, ...]) -> TraceModel:
        """The model, or of a re-opened trace only these host and GPU columns of the stored one
        (a drill-down from the CLI reads a few columns instead of the whole model)."""
        if "model" in vars(self) or self.saved_model is None:
            return self.model
        key = (host, gpu)
        if key not in self._partial_models:
            self._partial_models[key] = self.saved_model((list(host), list(gpu))) or self.model
        return self._partial_models[key]

    @cached_property
    def launch_index(self) -> LaunchIndex:
        """GPU events with the launching path of every operator row that launched them (traces
        only): the stored one of a re-opened trace, else computed once from the model (issue 25)."""
        if self.saved_launch_index is not None:
            stored = self.saved_launch_index()
            if stored is not None:
                self.launch_index_stored = True
                return stored
        from ..analysis.launch_index import KERNEL_LAUNCH_GPU_COLUMNS
        from ..analysis.launches import KERNEL_LAUNCH_HOST_COLUMNS, launch_index

        return launch_index(self.model_with(KERNEL_LAUNCH_HOST_COLUMNS, KERNEL_LAUNCH_GPU_COLUMNS))

    @cached_property
    def gpu(self) -> pl.DataFrame:
        """GPU work of a trace, without the links to operators (enough for kernel tables)."""
        return gpu_work(self._trace_events())

    @cached_property
    def _operator_rows(self) -> pl.DataFrame:
        from ..analysis.operators import operator_rows

        return operator_rows(self.model)

    @cached_property
    def span_start(self) -> float:
        """The trace's time origin: ``start_us`` of steps counts from here."""
        saved = self.saved.facts().get("span_start") if self.saved else None
        if isinstance(saved, (int, float)):
            return float(saved)
        self.fresh_facts["span_start"] = self.model.span_start
        return self.model.span_start

    @property
    def comm_pattern(self) -> str | None:
        """The user's regex for more communication kernels (``settings["comm_pattern"]``)."""
        return self.settings.get("comm_pattern")

    @comm_pattern.setter
    def comm_pattern(self, pattern: str | None) -> None:
        if pattern == self.comm_pattern:
            return
        self.settings = {k: v for k, v in self.settings.items() if k != "comm_pattern"}
        if pattern:
            self.settings["comm_pattern"] = pattern
        # Views saved or computed for the old setting no longer apply.
        self.saved = None
        for kept in (self._views, self._facts, self.fresh, self.fresh_facts):
            kept.clear()

    def communication(self) -> pl.DataFrame:
        """GPU work with ``backend`` and ``collective_name`` (null: not communication), per event."""
        pattern = self.comm_pattern
        if pattern not in self._communication:
            from ..analysis.communication import classify_communication

            backend = (self.metadata.get("distributedInfo") or {}).get("backend")
            self._communication[pattern] = classify_communication(
                self.gpu, pattern, backend if isinstance(backend, str) else None
            )
        return self._communication[pattern]

    def _default_view(self, name: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A view with default options: saved by an earlier run, or computed once and kept."""
        if name not in self._views:
            frame = self.saved.frame(name) if self.saved else None
            if frame is None:
                frame = self.fresh[name] = compute()
            self._views[name] = frame
        return self._views[name]

    def available(self, view: str) -> bool:
        """Whether this profile can show ``view``."""
        return view not in self.missing and (self.is_trace or view in self.tables)

    def _require(self, view: str) -> pl.DataFrame | None:
        if view in self.missing:
            raise ProfviewError(self.path, self.missing[view])
        if not self.is_trace:
            if view not in self.tables:
                raise ProfviewError(self.path, f"a {self.format} has no {view} view")
            return self.tables[view]
        return None

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

    # -- views -----------------------------------------------------------------------------
    def kernels(self, by_shape: bool = False, step: int | None = None) -> pl.DataFrame:
        """The kernel table (see :func:`profview.analysis.kernels.kernel_table`)."""
        given = self._require("kernels")
        if given is not None:
            return given
        if not by_shape and step is None:
            return self._default_view("kernels", lambda: kernel_table(self.gpu))
        gpu = self.gpu if step is None else self.step_model(step).gpu  # issue 13: the step's own launches
        return kernel_table(gpu, by_shape)

    def ops(self, by_shapes: bool = False, step: int | None = None) -> pl.DataFrame:
        """The operator table (see :func:`profview.analysis.operators.operator_table`)."""
        given = self._require("ops")
        if given is not None:
            return self.tables.get("ops_by_shapes", given) if by_shapes else given
        if not by_shapes and step is None:
            return self._default_view("ops", lambda: self._operator_table(None, by_shapes=False))
        return self._operator_table(step, by_shapes)

    def _operator_table(self, step: int | None, by_shapes: bool) -> pl.DataFrame:
        """Issue 13: under a step, the operator calls that started in its host range, and the
        unattributed GPU work of the step (:mod:`.analysis.step_scope`), as its drill-downs count."""
        from ..analysis.operators import operator_table

        rows = self._operator_rows
        unattributed = self.step_model(step).gpu.filter(pl.col("op_row").is_null())
        if step is not None:
            from ..analysis.step_scope import step_host_range

            start, end = step_host_range(self.model, step) or (0.0, -1.0)
            rows = rows.filter(pl.col("ts").is_between(start, end))
        return operator_table(rows, unattributed, by_shapes)

    def steps(self) -> pl.DataFrame:
        """The step breakdown (see :func:`profview.analysis.steps.step_table`)."""
        given = self._require("steps")
        if given is not None:
            return given
        from ..analysis.steps import step_table

        return self._default_view("steps", lambda: step_table(self.model, self.comm_pattern))

    def launches(self, op: str, step: int | None = None, input_dims: str | None = None) -> pl.DataFrame:
        """GPU work launched by operator ``op``, directly or through its children (``step``: in that
        step; ``input_dims``: only its calls with these input shapes)."""
        given = self._require("launches")
        if given is not None:
            self._no_step(step)
            rows = given.filter(pl.col("op") == op).drop("op") if "op" in given.columns else given
            if "total_us" in rows.columns:  # issue 22: longest first, as a trace's drill-down (the log's order is not)
                rows = rows.sort(["total_us", "name"], descending=[True, False], nulls_last=True, maintain_order=True)
            return rows
        from ..analysis.launches import op_launches

        return op_launches(self.step_model(step), op, input_dims)

    def kernel_launches(self, kernel: str, step: int | None = None) -> pl.DataFrame:
        """The operator chains and Python stacks that launched kernel ``kernel`` (``step``: in that step)."""
        given = self._require("launches")
        if given is None:
            if step is None:  # every launching row's path, once (of a re-opened trace: read, no host row)
                from ..analysis.launch_index import kernel_launchers

                return kernel_launchers(self.launch_index, kernel)
            from ..analysis.launches import kernel_launches

            return kernel_launches(self.step_model(step), kernel)
        self._no_step(step)
        rows = given.filter(pl.col("name") == kernel)  # a format's operator → kernel tree, read backwards
        frame = rows.select(
            "op",
            pl.col("op").alias("op_chain"),
            pl.lit("").alias("python_stack"),
            "calls",
            "total_us",
            "mean_us",
            "min_us",
            "max_us",
        )
        return with_share(frame)

    def overview(self) -> Overview:
        """Devices, span, GPU busy time and the average step (traces only)."""
        if "overview" not in self._facts:
            saved = self.saved.facts().get("overview") if self.saved else None
            if isinstance(saved, dict):
                self._facts["overview"] = Overview(**saved)
            else:
                from ..analysis.overview import build_overview

                view = build_overview(self.model, self.steps(), self.kernels(), self.metadata, self.communication())
                self._facts["overview"] = view
                self.fresh_facts["overview"] = asdict(view)
        return self._facts["overview"]

    # -- memory and modules (issue 15) --------------------------------------------------------
    def _trace_only(self, view: str, why: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A trace view kept like the default views; an empty one is an error naming ``why``."""
        self._require(view)
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no {view} view")
        frame = self._default_view(view, compute)
        if frame.height == 0:
            raise ProfviewError(self.path, why)
        return frame

    def memory(self) -> pl.DataFrame:
        """One row per allocator event (see :func:`profview.analysis.memory.memory_events`)."""
        from ..analysis.memory import memory_events

        return self._trace_only("memory", NO_MEMORY, lambda: memory_events(self.model, self._trace_events()))

    def memory_ops(self) -> pl.DataFrame:
        """Memory per operator and device (see :func:`profview.analysis.memory.memory_ops`)."""
        from ..analysis.memory import memory_ops

        return self._trace_only("memory_ops", NO_MEMORY, lambda: memory_ops(self.memory()))

    def memory_peaks(self) -> pl.DataFrame:
        """The peak per device (see :func:`profview.analysis.memory.memory_peaks`)."""
        from ..analysis.memory import memory_peaks

        return self._trace_only("memory_peaks", NO_MEMORY, lambda: memory_peaks(self.memory()))

    @cached_property
    def _launch_frames(self) -> Any:
        from ..analysis.modules import launch_frames

        return launch_frames(self.model)

    @cached_property
    def _gpu_attribution(self) -> pl.DataFrame:
        from ..analysis.modules import gpu_attribution

        return gpu_attribution(self.model, self._launch_frames)

    @cached_property
    def _gpu_modules(self) -> pl.Series:
        return self._gpu_attribution["module"]

    def modules(self) -> pl.DataFrame:
        """GPU time by module path (see :func:`profview.analysis.modules.module_table`)."""
        from ..analysis.modules import has_modules, module_table

        def compute() -> pl.DataFrame:
            if not has_modules(self.model):
                return pl.DataFrame()
            return module_table(self.model, self._gpu_attribution)

        return self._trace_only("modules", NO_MODULES, compute)

    def module_kernels(self, path: str, step: int | None = None) -> pl.DataFrame:
        """The GPU work launched under module ``path`` (a path as the modules view shows it; ``step``: in it)."""
        from ..analysis.modules import module_kernels

        if path not in set(self.modules()["path"].to_list()):
            raise ProfviewError(self.path, f"no module {path!r}")
        if step is None:
            return module_kernels(self.model, self._gpu_modules, path)
        mask = self._step_mask(step)
        return module_kernels(self.step_model(step), self._gpu_modules.filter(mask), path)

    def source_kernels(self, name: str, step: int | None = None) -> pl.DataFrame:
        """The GPU work launched while source line ``name`` (as the sources view shows it) was open
        (``step``: in that step)."""
        from ..analysis.modules import source_kernels

        if name not in set(self.sources()["name"].to_list()):
            raise ProfviewError(self.path, f"no source line {name!r}")
        if step is None:
            return source_kernels(self.model, self._launch_frames, name)
        mask = self._step_mask(step).to_numpy()  # the frames are per GPU row: narrow both together
        return source_kernels(self.step_model(step), self._launch_frames[mask], name)

    def sources(self) -> pl.DataFrame:
        """GPU time by source line (see :func:`profview.analysis.modules.source_table`)."""
        from ..analysis.modules import source_table

        def compute() -> pl.DataFrame:
            if not self.model.host["is_python"].any():
                return pl.DataFrame()
            return source_table(self.model, self._launch_frames)

        return self._trace_only("sources", NO_SOURCES, compute)

    # -- the timeline (issue 15) ------------------------------------------------------------------
    @cached_property
    def _idle(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        from ..analysis.gaps import idle_gaps

        return idle_gaps(self.model, self.model_communication())

    def model_communication(self) -> pl.Series:
        """Per ``model.gpu`` row, its communication backend (null: not communication)."""
        from ..analysis.communication import classify_communication

        backend = (self.metadata.get("distributedInfo") or {}).get("backend")
        frame = classify_communication(self.model.gpu, self.comm_pattern, backend if isinstance(backend, str) else None)
        return frame["backend"]

    def gpu_idle(self) -> pl.DataFrame:
        """Per step: GPU busy, compute, communication and their overlap, idle time by likely cause
        (see :func:`profview.analysis.gaps.idle_gaps`)."""
        return self._trace_only("gpu_idle", "no GPU work in this trace", lambda: self._idle[0])

    def gaps(self) -> pl.DataFrame:
        """The GPU's idle gaps, one row each, with their likely cause."""
        return self._trace_only("gaps", "no GPU idle gaps in this trace", lambda: self._idle[1])

    # -- the critical path (issue 26) ----------------------------------------------------------------
    def step_paths(self, step: int | None = None, rules: str = "profview") -> StepPaths:
        """The critical path of every step (``step``: that one) under ``rules`` (``profview`` or
        ``hta``; see :mod:`profview.analysis.critical_path`), computed once each (and so is the
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
        from ..analysis.critical_path import RULES
        from ..analysis.critical_path_frames import has_runtime, step_paths, step_ranges

        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no critical path (it needs a trace)")
        if rules not in RULES:
            raise ProfviewError(None, f"unknown rules {rules!r}: choose one of {', '.join(RULES)}")
        if self.model.gpu.height and not has_runtime(self.model):
            raise ProfviewError(self.path, NO_RUNTIME)
        if step is not None and step not in step_ranges(self.model)["step"].to_list():
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        comm = self.model_communication().is_not_null().to_numpy()
        try:
            return step_paths(self.model, RULES[rules], comm, step=step)
        except ValueError as exc:  # a dependency cycle: events out of order in the trace
            raise ProfviewError(self.path, f"no critical path: {exc}") from None

    def has_step_paths(self, step: int | None = None, rules: str = "profview") -> bool:
        """Whether :meth:`step_paths` has been computed, or found there is none (a viewer shows
        either without waiting)."""
        return f"critical_path:{rules}:{step}" in self._facts

    def critical_path(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """Per step and bound kind, its µs on the critical path (see
        :func:`profview.analysis.critical_path_frames.path_frame`)."""
        from ..analysis.critical_path_frames import path_frame

        return path_frame(self.step_paths(step, rules))

    def critical_path_events(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """The events on each step's critical path, in order."""
        from ..analysis.critical_path_frames import events_frame

        return events_frame(self.step_paths(step, rules))

    def critical_path_names(self, step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """Per operator and kernel name, its time on the critical path beside its total (computed
        once per step and rules: the viewer's on-path column reads it on every redraw)."""
        from ..analysis.critical_path_frames import names_frame

        key = f"critical_path_names:{rules}:{step}"
        if key not in self._facts:
            self._facts[key] = names_frame(self.step_paths(step, rules))
        names: pl.DataFrame = self._facts[key]
        return names

    def what_if(self, scalings: list[str], step: int | None = None, rules: str = "profview") -> pl.DataFrame:
        """The critical path before and after scaling the events named by ``scalings``
        (``'REGEX=FACTOR'`` each): a model (see :mod:`profview.analysis.what_if`)."""
        from ..analysis.what_if import parse_scaling, what_if

        try:
            parsed = [parse_scaling(text) for text in scalings]
        except ValueError as exc:
            raise ProfviewError(None, str(exc)) from None
        steps = self.steps()
        durations = dict(zip(steps["step"].to_list(), steps["duration_us"].to_list(), strict=True))
        return what_if(self.step_paths(step, rules), parsed, durations)[0]

    def timeline_lanes(self) -> Any:
        """The timeline's lanes (see :func:`profview.analysis.lanes.build_lanes`), built once."""
        if "lanes" not in self._facts:
            from ..analysis.lanes import build_lanes

            if not self.is_trace:
                raise ProfviewError(self.path, f"a {self.format} has no timeline")
            self._facts["lanes"] = build_lanes(self.model, self.model_communication())
        return self._facts["lanes"]

    # -- one step (issue 13: a step chosen in Steps narrows every view) --------------------------
    def _step_mask(self, step: int) -> pl.Series:
        """Per ``model.gpu`` row, whether it is step ``step``'s work (:mod:`.analysis.step_scope`)."""
        key = f"step_mask:{step}"
        if key not in self._facts:
            from ..analysis.step_scope import step_gpu_mask

            window = self._window(step)  # an unknown step is a one-line error naming the steps there are
            self._facts[key] = step_gpu_mask(self.model, step, window)
        return self._facts[key]

    def step_model(self, step: int | None) -> TraceModel:
        """The trace model, its GPU work narrowed to ``step`` (None: the whole trace)."""
        if step is None:
            return self.model
        from dataclasses import replace

        return replace(self.model, gpu=self.model.gpu.filter(self._step_mask(step)))

    def _no_step(self, step: int | None) -> None:
        if step is not None:
            raise ProfviewError(self.path, f"a {self.format} has no per-step launches (--step)")

    def step_overview(self, step: int) -> dict[str, Any]:
        """Step ``step``'s row of the steps table, with ``gpu_busy_us`` (GPU work, any device, inside
        the step's window) and ``gpu_busy_pct`` of its duration."""
        from ..analysis.step_scope import gpu_busy_in

        rows = self.steps().filter(pl.col("step") == step)
        if rows.height == 0:
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        row = rows.row(0, named=True)
        start = self.span_start + float(row["start_us"])
        busy = gpu_busy_in(self.model.gpu, start, start + float(row["duration_us"]))
        row["gpu_busy_us"] = busy
        row["gpu_busy_pct"] = busy / row["duration_us"] * 100 if row["duration_us"] else 0.0
        return row

    # -- efficiency (issue 24): kernel categories, the perf model, per-step model FLOPs ------------
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
        from ..analysis.perf_model import call_work, wrapper_calls

        calls = call_work(self._operator_rows)
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

    def efficiency(self, peak_tflops: float | None = None, peak_tb_s: float | None = None) -> pl.DataFrame:
        """The perf model per (operator, input dims, input types) (see
        :func:`profview.analysis.perf_model.efficiency_table`); ``peak_tflops``/``peak_tb_s``
        replace the device's peaks from the table."""
        from ..analysis.perf_model import efficiency_table

        self._require("efficiency")
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no efficiency view (it needs a trace's shapes)")

        def compute() -> pl.DataFrame:
            self._shapes_check(self._call_work)
            return efficiency_table(self._call_work, self.device_peak()[1])

        if peak_tflops is None and peak_tb_s is None:
            return self._default_view("efficiency", compute)
        self._shapes_check(self._call_work)
        return efficiency_table(self._call_work, self.device_peak()[1], peak_tflops=peak_tflops, peak_tb_s=peak_tb_s)

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
        rate = _mean(rows["tflops_s"])
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



def _flop_text(tflop: float, decimals: int = 3) -> str:
    """An amount of TFLOP in the unit that shows it: TFLOP from 1, GFLOP below (a small model's step
    is not ``0.000 TFLOP``)."""
    return f"{tflop:.{decimals}f} TFLOP" if tflop >= 1 or tflop == 0 else f"{tflop * 1e3:.3g} GFLOP"


def _mean(values: pl.Series) -> float:
    """The mean of a numeric column (0 for none)."""
    mean = values.drop_nulls().mean()
    return float(mean) if isinstance(mean, (int, float)) else 0.0
