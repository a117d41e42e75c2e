"""A loaded profile: the one object the CLI, the viewer, exports and notebooks read.

A trace profile computes its views from the events frame (lazily, once each); a profile read
from a text table carries the views its format provides.  Either way every figure comes from
:mod:`profview.analysis`, so the CLI, the viewer and exports agree.

This module is the profile's core: its fields, the events, the linked model, the GPU frame and the
launch index, and the default views (kernels, operators, steps, launches, the overview).  The
other views come from one mixin each: :mod:`.memory_views` (memory, modules, sources),
:mod:`.path_views` (the timeline and the critical path), :mod:`.step_views` (one step) and
:mod:`.efficiency_views` (kernel categories and the perf model), :mod:`.iteration_views` (serving
and decode loops: iterations and phases), :mod:`.gate_views` (the gate's per-step samples),
:mod:`.launch_views` (launch statistics, queue length, Tensor Core use).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..analysis.tables.kernels import kernel_table
from ..analysis.trace.events import GPU_COLUMNS, GPU_LINK_COLUMNS, gpu_work
from ..errors import ProfviewError
from ..frames import UNATTRIBUTED, Overview, cut_replay_graph, with_share
from ..parsers.schema import EVENT_SCHEMA
from .efficiency_views import NO_MODELLED, NO_SHAPES, EfficiencyViews
from .gate_views import GateViews
from .graph_views import GraphViews
from .iteration_views import IterationScope, IterationViews
from .launch_views import LaunchViews
from .memory_views import NO_MEMORY, NO_MODULES, NO_SOURCES, MemoryViews
from .path_views import NO_RUNTIME, PathViews
from .recording_advice import fit_advice
from .step_views import StepViews

if TYPE_CHECKING:
    from ..analysis.trace.launch_index import LaunchIndex
    from ..analysis.trace.model import TraceModel
    from ..store.trace_cache import SavedViews

# The model-based analysis modules (NumPy, the call tree) are imported where they are first
# needed, so that a kernel table from a cached trace starts with Polars alone.

__all__ = ["NO_MEMORY", "NO_MODELLED", "NO_MODULES", "NO_RUNTIME", "NO_SHAPES", "NO_SOURCES", "VIEWS", "Profile"]

VIEWS = ("kernels", "ops", "steps", "launches")


@dataclass
class Profile(StepViews, MemoryViews, PathViews, EfficiencyViews, GraphViews, IterationViews, GateViews, LaunchViews):
    """One profile: a trace (``events_source`` set) or the views of a text format (``tables``).

    ``events_source`` is the events frame, or a function that reads it (a cache hit reads events
    only when a view needs them); ``saved`` holds views computed by an earlier run for the same
    ``settings`` (see :mod:`profview.store.trace_cache`).  ``missing`` maps a view that this profile cannot
    provide to the reason, shown to the user.  ``comm_pattern`` (``--comm-pattern``, kept in
    ``settings``) is a regex naming more kernels as communication (see
    :mod:`profview.analysis.trace.communication`); views are saved and kept per setting, so changing it
    never shows figures computed without it.

    The views beyond the default ones come from the mixins (see the module's docstring); each
    keeps what it computes in this profile's ``_views`` / ``_facts`` or as a cached property.
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
    #: Reads the GPU work of the linked model stored by an earlier run, given its columns, or makes
    #: it from the GPU events an export was read as far as (None: the GPU work then comes from the events).
    saved_gpu: Callable[[list[str]], pl.DataFrame | None] | None = field(default=None, repr=False)
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
    #: Opens a capture trace named by ``--capture`` (issue 36) as this profile was opened; set by
    #: :func:`profview.profiles.loading.load` (the views never import the loader: no import circle).
    open_capture: Callable[..., Profile] | None = field(default=None, repr=False)
    #: Views computed in this process (not read from ``saved``), and facts about them.
    fresh: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    fresh_facts: dict[str, Any] = field(default_factory=dict, repr=False)
    _views: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _facts: dict[str, Any] = field(default_factory=dict, repr=False)
    _partial_models: dict[tuple[tuple[str, ...], tuple[str, ...]], TraceModel] = field(default_factory=dict, repr=False)
    _communication: dict[str | None, pl.DataFrame] = field(default_factory=dict, repr=False)
    #: Issue 36: capture traces or folders (``--capture``) that graph replays are attributed through
    #: (:meth:`GraphViews.use_capture`), and whether they may be read from the cache.
    capture: list[str] = field(default_factory=list)
    capture_use_cache: bool = field(default=True, repr=False)

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
        from ..analysis.trace.model import NEST_COLUMNS, link_model, nest_host

        gpu = vars(self).get("gpu")  # made for the kernel table already, or made here and not kept
        if gpu is None:  # (the model holds it with its links: self.gpu then drops them from that)
            gpu = gpu_work(self._trace_events())
        host_events = self._trace_events().select(NEST_COLUMNS)  # the same buffers, not a copy
        if self.release_events_after_link:
            self.release_events()  # the other columns go now, the host events once sorted
        nested = nest_host(host_events)  # the one stage that reads the events
        del host_events
        return link_model(nested, gpu)

    def release_events(self) -> None:
        """Let the held events frame go, if it can be read again (:attr:`reread_events`)."""
        if self.reread_events is None:
            return
        # Events read by a function (an export's host events, read when first asked for) are let
        # go as a held frame is; a function not yet called is kept (it reads no more than again).
        if isinstance(self.events_source, pl.DataFrame) or "events" in vars(self):
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
        from ..analysis.tables.launches import KERNEL_LAUNCH_HOST_COLUMNS, launch_index
        from ..analysis.trace.launch_index import KERNEL_LAUNCH_GPU_COLUMNS

        return launch_index(self.model_with(KERNEL_LAUNCH_HOST_COLUMNS, KERNEL_LAUNCH_GPU_COLUMNS))

    @cached_property
    def gpu(self) -> pl.DataFrame:
        """GPU work of a trace, without the links to operators (enough for kernel tables): the
        linked model's GPU frame less its links when the model is held, or read alone from the
        cache when one is stored (the same rows and columns, and no NumPy or call tree: a re-opened
        trace's viewer then reads no events, 93 MB for gpt2_train_big), else made from the events."""
        if "model" in vars(self):
            return self.model.gpu.drop(GPU_LINK_COLUMNS)
        if self.saved_gpu is not None:
            stored = self.saved_gpu([*GPU_COLUMNS, "end"])
            if stored is not None:
                return stored
        return gpu_work(self._trace_events())

    @cached_property
    def _operator_rows(self) -> pl.DataFrame:
        from ..analysis.tables.operators import operator_rows

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
            from ..analysis.trace.communication import classify_communication

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

    def kept_view(self, name: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A view made from the default ones (:func:`profview.profiles.views.with_efficiency`'s
        kernel table with its categories), kept with the trace as they are: a cached re-open reads
        it instead of reading the table it is made from and computing it again."""
        return self._default_view(name, compute)

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

    # -- views -----------------------------------------------------------------------------
    def kernels(self, by_shape: bool = False, step: int | IterationScope | None = None) -> pl.DataFrame:
        """The kernel table (see :func:`profview.analysis.tables.kernels.kernel_table`)."""
        given = self._require("kernels")
        if given is not None:
            return given
        if not by_shape and step is None:
            return self._default_view("kernels", lambda: kernel_table(self.gpu))
        gpu = self.gpu if step is None else self.step_model(step).gpu  # issue 13: the step's own launches
        return kernel_table(gpu, by_shape)

    def ops(self, by_shapes: bool = False, step: int | IterationScope | None = None) -> pl.DataFrame:
        """The operator table (see :func:`profview.analysis.tables.operators.operator_table`)."""
        given = self._require("ops")
        if given is not None:
            return self.tables.get("ops_by_shapes", given) if by_shapes else given
        if not by_shapes and step is None:
            return self._default_view("ops", lambda: self._operator_table(None, by_shapes=False))
        return self._operator_table(step, by_shapes)

    def _operator_table(self, step: int | IterationScope | None, by_shapes: bool) -> pl.DataFrame:
        """Under a step, the operator calls that started in its host range, and the
        unattributed GPU work of the step (:mod:`.analysis.tables.step_scope`), as its drill-downs count."""
        from ..analysis.tables.operators import operator_table

        rows = self._operator_rows
        gpu = self.model.gpu.with_columns(self._cut_replays)  # a cut replay's work is its graph's row
        if step is not None:
            gpu = gpu.filter(self._step_mask(step))
        unattributed = gpu.filter(pl.col("op_row").is_null())
        if step is not None:
            from ..analysis.tables.step_scope import step_host_range

            if isinstance(step, IterationScope):  # issue 31: the calls that started in its host range
                start, end = step.start, step.end
            else:
                start, end = step_host_range(self.model, step) or (0.0, -1.0)
            rows = rows.filter(pl.col("ts").is_between(start, end))
        return operator_table(rows, unattributed, by_shapes)

    def steps(self) -> pl.DataFrame:
        """The step breakdown (see :func:`profview.analysis.tables.steps.step_table`)."""
        given = self._require("steps")
        if given is not None:
            return given

        def compute() -> pl.DataFrame:
            from ..analysis.tables.steps import step_table  # a re-open reads the kept table (issue 42)

            return step_table(self.model, self.comm_pattern)

        return self._default_view("steps", compute)

    def launches(
        self, op: str, step: int | IterationScope | None = None, input_dims: str | None = None
    ) -> pl.DataFrame:
        """GPU work launched by operator ``op``, directly or through its children (``step``: in that
        step; ``input_dims``: only its calls with these input shapes)."""
        given = self._require("launches")
        if given is not None:
            self._no_step(step)
            rows = given.filter(pl.col("op") == op).drop("op") if "op" in given.columns else given
            if "total_us" in rows.columns:  # issue 22: longest first, as a trace's drill-down (the log's order is not)
                rows = rows.sort(["total_us", "name"], descending=[True, False], nulls_last=True, maintain_order=True)
            return rows
        from ..analysis.tables.launches import op_launches

        replayed = self.replayed_launches(op, step) if input_dims is None else None  # replays of its captured calls
        model = self.step_model(step)
        graph = cut_replay_graph(op)
        if op == UNATTRIBUTED or graph is not None:  # the work of cut replays is apart, as the table shows it
            from dataclasses import replace

            cut = self._cut_replays["cut_graph"]
            if step is not None:
                cut = cut.filter(self._step_mask(step))
            kept = cut.is_null() if graph is None else (cut == graph).fill_null(False)
            return op_launches(replace(model, gpu=model.gpu.filter(kept)), UNATTRIBUTED, input_dims, replayed)
        return op_launches(model, op, input_dims, replayed)

    @cached_property
    def _cut_replays(self) -> pl.DataFrame:
        """Per ``model.gpu`` row, ``cut_graph`` and ``cut_replay``: the graph and replay of a replay
        launched before the window (no launch call in the trace: the window cut it, or it was
        queued before), else null."""
        height = self.model.gpu.height
        schema = {"cut_graph": pl.Int64, "cut_replay": pl.Int64}
        if not self.has_graphs():
            return pl.DataFrame({"cut_graph": [None] * height, "cut_replay": [None] * height}, schema=schema)
        frames = self._graph_frames
        cut = frames.replays.filter(pl.col("launch_row").is_null()).select("replay")
        events = frames.events.join(cut, on="replay").filter(pl.col("graph").is_not_null())
        rows = pl.DataFrame({"gpu_row": pl.int_range(height, eager=True, dtype=pl.Int64)})
        found = events.select("gpu_row", pl.col("graph").alias("cut_graph"), pl.col("replay").alias("cut_replay"))
        joined = rows.join(found.cast({"gpu_row": pl.Int64}), on="gpu_row", how="left", maintain_order="left")
        return joined.select("cut_graph", "cut_replay").cast(schema)  # type: ignore[arg-type]

    def kernel_launches(self, kernel: str, step: int | IterationScope | None = None) -> pl.DataFrame:
        """The operator chains and Python stacks that launched kernel ``kernel`` (``step``: in that step)."""
        given = self._require("launches")
        if given is None:
            if step is None:  # every launching row's path, once (of a re-opened trace: read, no host row)
                from ..analysis.trace.launch_index import kernel_launchers

                return kernel_launchers(self.launch_index_with_replays(), kernel)  # issue 36: through captures
            from ..analysis.tables.launches import kernel_launches

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
                from ..analysis.tables.overview import build_overview

                # a trace without GPU work (no kernels view) still has its span, steps and hints
                kernels = self.kernels() if self.available("kernels") else _no_kernels()
                view = build_overview(self.model, self.steps(), kernels, self.metadata, self.communication())
                from ..analysis.efficiency.tensor_cores import kernel_table_hint

                tensor_cores = kernel_table_hint(kernels, self.comm_pattern)  # FP32 GEMMs off the Tensor Cores
                if tensor_cores is not None:
                    view.hints.append(tensor_cores)
                view.notes = [*_unread_notes(self._trace_events()), *view.notes]
                self._facts["overview"] = view
                self.fresh_facts["overview"] = asdict(view)
        return self._facts["overview"]

    # -- trace-only views (memory, modules, the timeline, efficiency) ---------------------------
    def _trace_only(self, view: str, why: str, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """A trace view kept like the default views; an empty one is an error naming ``why``."""
        self._require(view)
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no {view} view")
        frame = self._default_view(view, compute)
        if frame.height == 0:
            raise ProfviewError(self.path, fit_advice(self.format, why))
        return frame


def _no_kernels() -> pl.DataFrame:
    """An empty kernel table, for the overview of a trace that has no kernels view."""
    from ..analysis.tables.kernels import kernel_table

    return kernel_table(gpu_work(pl.DataFrame(schema=EVENT_SCHEMA)))


def _unread_notes(events: pl.DataFrame) -> list[str]:
    """A line naming the categories of events that were not read (profview does not know them)."""
    from ..parsers.schema import unknown_categories

    count, categories = unknown_categories(events)
    if not count:
        return []
    named = ", ".join(categories[:3]) + (f", … {len(categories) - 3} more" if len(categories) > 3 else "")
    kinds = "category" if len(categories) == 1 else "categories"
    return [f"{count:,} events of {len(categories)} unknown {kinds} were not read: {named}"]
