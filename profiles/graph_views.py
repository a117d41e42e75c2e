"""A profile's graph views: the graphs its replays ran, their nodes, and every GPU
microsecond by (operator, module) with replayed kernels charged through their capture.  A mixin of
:class:`~profview.profiles.trace_profile.Profile`; the figures come from
:mod:`profview.analysis.graphs.attribution` (and :mod:`~profview.analysis.graphs.replays`,
:mod:`~profview.analysis.graphs.capture`, :mod:`~profview.analysis.graphs.align`).

The captures are those in the trace itself and those of ``--capture PATH`` (:meth:`use_capture`: a
capture trace, or a folder with vLLM's or SGLang's ``execution_details.json``).  Nothing here runs
unless a graph view, or a view that uses the attribution, asks; the attributed frames are kept with
the trace in the cache, per set of captures (their identity is in the views' names).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from ..errors import ProfviewError
from ..frames import count_of
from ..reads import note

if TYPE_CHECKING:
    from ..analysis.graphs.attribution import GraphFrames
    from ..analysis.graphs.capture import Capture
    from ..analysis.trace.launch_index import LaunchIndex
    from .host import ProfileHost
    from .iteration_scope import IterationScope
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: Why a trace has no graph views.
NO_GRAPHS = (
    "no graph replays in this trace (no cudaGraphLaunch/hipGraphLaunch call, and no single launch that ran "
    "several kernels, as a replay does)"
)
#: What to do where a graph has no capture (summary, Overview, the graphs view's note).
CAPTURE_REMEDY = (
    "record its capture (vLLM: capture_torch_profiler_dir; SGLang: --enable-profile-cuda-graph; "
    "torch.compile: profile the first compiled call), or give it with --capture PATH"
)
#: The same where captures were given (``--capture``) and fit none of these graphs.
CAPTURE_GIVEN_REMEDY = (
    "the captures given with --capture fit none of these graphs; record their own capture (vLLM: "
    "capture_torch_profiler_dir; SGLang: --enable-profile-cuda-graph; torch.compile: profile the first compiled call)"
)
#: The fact saying whether a trace replays graphs at all (kept with its views).
HAS_REPLAYS = "graph_replays"
#: The file vLLM and SGLang write beside their capture traces.
EXECUTION_DETAILS = "execution_details.json"
#: The largest ``execution_details.json`` read (vLLM's and SGLang's are a few KB: one entry per capture).
DETAILS_LIMIT = 16 * 2**20
#: The frames of :class:`~profview.analysis.graphs.attribution.GraphFrames` as the cache keeps them.
_STORED = ("events", "replays", "nodes", "graphs")


class GraphViews(ProfileHost):
    """Graph replays: graphs, graph nodes, operators through the capture."""

    capture: list[str]
    capture_use_cache: bool

    def use_capture(self, paths: list[str], use_cache: bool = True) -> None:
        """Attribute replays through the captures in ``paths`` too (files or capture folders); a
        path that is missing or holds no capture is an error naming it."""
        check_capture_paths(paths)
        self.capture = list(paths)
        self.capture_use_cache = use_cache
        for kept in ("_graph_frames", "_capture_key", "_capture_profiles"):
            vars(self).pop(kept, None)

    def check_captures(self) -> None:
        """Read every ``--capture`` now (each file a trace holding a capture), so that a bad one is
        refused before anything is printed; a profile that is not a trace refuses the option."""
        if not self.capture:
            return
        if not self.is_trace:
            raise capture_error(None, f"graph captures attribute a trace's replays; {self.path} is a {self.format}")
        for path in self.capture:
            for file, size in _capture_files(path):
                _captures_of(file, size, self.capture_use_cache, self.open_capture)

    # -- the captures --------------------------------------------------------------------------
    @cached_property
    def _capture_key(self) -> str:
        """A short key for the set of captures (their files' identities): views are kept per set."""
        if not self.capture:
            return "own"
        from ..store.keys import identity, key

        files = [file for path in self.capture for file, _size in _capture_files(path)]
        # Every file the captures are read from: the traces and each folder's execution_details.json,
        # whose batch sizes decide between equal captures (an edited one must not reuse the old answer).
        details = [
            os.path.join(path, EXECUTION_DETAILS)
            for path in self.capture
            if os.path.isdir(path) and os.path.isfile(os.path.join(path, EXECUTION_DETAILS))
        ]
        return key({"captures": [identity(f) for f in files], "details": [identity(f) for f in details]})[:16]

    def _captures(self) -> list[Capture]:
        """The captures in this trace, then those of ``--capture`` (each file's, in order)."""
        from ..analysis.graphs.capture import find_captures

        found = find_captures(self.model, self._launch_kernels(self._trace_events()), self.path)
        opened: dict[tuple[str, int | None], list[Capture]] = {}  # a file listed twice is read once
        profiles: dict[str, Any] = vars(self).setdefault("_capture_profiles", {})
        load = self.open_capture

        def once(file: str, use_cache: bool = True) -> Any:
            """Each capture trace opened once per profile (the efficiency view reads its calls too)."""
            if file not in profiles:
                assert load is not None
                profiles[file] = load(file, use_cache=use_cache)
            return profiles[file]

        for path in self.capture:
            folder = os.path.isdir(path) and not os.path.isfile(os.path.join(path, EXECUTION_DETAILS))
            kept = 0
            for file, size in _capture_files(path):
                if folder and _same_file(file, self.path):
                    continue  # the replay beside its captures holds none of them
                if (file, size) not in opened:
                    try:
                        opened[(file, size)] = _captures_of(
                            file, size, self.capture_use_cache, once if load is not None else None
                        )
                    except ProfviewError:
                        if not folder:
                            raise
                        opened[(file, size)] = []  # a folder's stray file (config.json): not a capture
                    found += opened[(file, size)]
                kept += len(opened[(file, size)])
            if folder and not kept:
                raise ProfviewError(
                    path, f"--capture: no graph capture in any trace of this folder (and no {EXECUTION_DETAILS})"
                )
        return found

    @staticmethod
    def _launch_kernels(events: pl.DataFrame) -> pl.DataFrame | None:
        """The kernel each launch call names (ROCm), by correlation; None where none does."""
        if "launch_kernel" not in events.columns or events["launch_kernel"].null_count() == events.height:
            return None
        named = events.filter(pl.col("launch_kernel").is_not_null())
        return named.select("correlation", pl.col("launch_kernel").cast(pl.String))

    # -- the attribution -----------------------------------------------------------------------
    @cached_property
    def _graph_frames(self) -> GraphFrames:
        """The replays attributed through the captures: from the cache, else computed once."""
        from ..analysis.graphs.attribution import GraphFrames

        names = [f"graph_{part}-{self._capture_key}" for part in _STORED]
        saved = [self.saved.frame(name) if self.saved else None for name in names]
        if all(frame is not None for frame in saved):
            events, replays, nodes, graphs = saved
            assert events is not None and replays is not None and nodes is not None and graphs is not None
            return GraphFrames(events, replays, nodes, graphs)
        frames = self._attribute()
        for name, frame in zip(names, (frames.events, frames.replays, frames.nodes, frames.graphs), strict=True):
            self.fresh[name] = frame
        return frames

    def _attribute(self) -> GraphFrames:
        from ..analysis.graphs.attribution import attribute, replay_batch_sizes
        from ..analysis.graphs.replays import find_replays, has_replays

        model = self.model
        if not has_replays(model):
            replays = find_replays(model)
            return attribute(replays, [])
        replays = find_replays(model, self._graph_ids())
        captures = self._captures()
        return attribute(replays, captures, replay_batch_sizes(model, replays), self.path)

    def _graph_ids(self) -> pl.DataFrame | None:
        """Per ``model.gpu`` row, Kineto's ``graph id`` and ``graph node id`` (None: the trace has none)."""
        events = self._trace_events()
        if "graph_id" not in events.columns or events["graph_id"].null_count() == events.height:
            return None
        from ..analysis.trace.events import COMPLETE
        from ..frames import GPU_KINDS

        return events.filter(pl.col("kind").is_in(GPU_KINDS) & COMPLETE).select("graph_id", "graph_node_id")

    def has_graphs(self) -> bool:
        """Whether the trace replays any graph (a cheap look at the model: no attribution)."""
        if not self.is_trace:
            return False
        if "_graph_frames" in vars(self):
            return not self._graph_frames.empty
        facts = self.saved.facts() if self.saved else {}
        saved = facts.get(f"graph_summary-{self._capture_key}")
        if isinstance(saved, dict):
            return bool(saved)
        if isinstance(facts.get(HAS_REPLAYS), bool):  # kept with the linked model (remember_views)
            return bool(facts[HAS_REPLAYS])
        if HAS_REPLAYS not in self._facts:
            from ..analysis.graphs.replays import has_replays

            # Without the model, four columns of the stored one (a kernel's launchers stay a few
            # columns' read, issue 25); the answer is kept with the views.
            model = (
                self.model
                if "model" in vars(self)
                else self.model_with(("kind", "name", "row"), ("correlation", "launch_row"))
            )
            self._facts[HAS_REPLAYS] = self.fresh_facts[HAS_REPLAYS] = has_replays(model)
        return bool(self._facts[HAS_REPLAYS])

    def _require_graphs(self) -> GraphFrames:
        if not self.is_trace:
            raise ProfviewError(self.path, f"a {self.format} has no graph views")
        if not self.has_graphs():  # a kept fact or a few stored columns: no attribution, no model linked
            raise ProfviewError(self.path, NO_GRAPHS)
        frames = self._graph_frames
        if frames.empty:
            raise ProfviewError(self.path, NO_GRAPHS)
        return frames

    # -- what the other views take from the attribution --------------------------------------
    def _graph_view_name(self, name: str) -> str:
        """The name a view that uses the attribution is kept under: its own, but with captures
        given (``--capture``), one per set of them."""
        return name if not self.capture else f"{name}-{self._capture_key}"

    def _attributed_replays(self, *attributes: str) -> pl.DataFrame | None:
        """The replayed GPU events a capture attributes, with their nodes' ``attributes`` (see
        :func:`profview.analysis.graphs.attribution.replayed`); None where the trace replays no graph (a cheap
        look first: no attribution) or a capture attributes none of it."""
        if not self.is_trace or not self.has_graphs():
            return None
        from ..analysis.graphs.attribution import replayed

        events = replayed(self._graph_frames, self.gpu, attributes).filter(pl.col("attributed"))
        return events if events.height else None

    def _with_replayed_modules(self, attribution: pl.DataFrame) -> pl.DataFrame:
        """Per ``model.gpu`` row ``module`` and ``pass`` (:func:`profview.analysis.tables.modules.gpu_attribution`),
        a replayed kernel's taken from its captured launch (forward: a graph is replayed inference)."""
        events = self._attributed_replays("module")
        if events is None:
            return attribution
        from ..analysis.tables.modules import FORWARD

        rows = events["gpu_row"].to_numpy()
        module = attribution["module"].to_numpy().copy()
        passes = attribution["pass"].to_numpy().copy()
        module[rows] = events["module"].to_numpy()
        passes[rows] = FORWARD
        return pl.DataFrame({"module": module, "pass": passes}, schema=attribution.schema)

    def replay_place(self, gpu_row: int) -> str | None:
        """Where a replayed GPU event (a ``model.gpu`` row) sits in its graph, in words: ``graph 0
        node 12 (replay 3 of graph 0, cut by the window: its launch is before the trace)``; None
        for an event no graph replay holds.  The Timeline inspector says it where no launching call
        is recorded, instead of guessing why."""
        if not self.has_graphs():
            return None
        from ..analysis.graphs.replays import FULL, PREFIX

        frames = self._graph_frames
        found = frames.events.filter(pl.col("gpu_row") == gpu_row)
        if found.height == 0:
            return None
        graph, node, replay = found.select("graph", "node", "replay").row(0)
        found = frames.replays.filter(pl.col("replay") == replay)
        partial = str(found["partial"][0]) if found.height else FULL
        unlaunched = bool(found.height) and found["launch_row"][0] is None
        where = "the window's end cut it" if partial == PREFIX else "its launch is before the trace window"
        cut = f", cut: {where}" if partial != FULL else ", launched before the trace window" if unlaunched else ""
        if graph is None:
            return f"a graph replay cut by the window, joined to no graph (replay {replay}{cut})"
        return f"graph {graph} node {node} (replay {replay}{cut})"

    def _replayed_module_calls(self) -> dict[str, int]:
        """Per module path, the calls the attributed replays made of it: each replay runs again
        every module frame of the capture that launched one of its nodes, so a call is one
        (replay, capture, frame) seen among the replayed events (none without a capture)."""
        events = self._attributed_replays("capture", "launch")
        if events is None:
            return {}
        from ..analysis.tables.modules import enclosing_module_frames, module_paths

        pairs = events.select("replay", "capture", "launch").unique().drop_nulls()
        captures = self._captures()
        seen: dict[str, set[tuple[int, int, int]]] = {}
        for number in pairs["capture"].unique().to_list():
            capture = captures[int(number)]
            model = self._capture_model(capture.origin)
            rows = pairs.filter(pl.col("capture") == number)
            launches = rows["launch"].unique().sort().to_list()
            host_rows = capture.launches["row"].gather(launches).to_numpy()
            frames = dict(zip(launches, enclosing_module_frames(model, host_rows), strict=True))
            paths, _modules = module_paths(model)
            for replay, launch in rows.select("replay", "launch").iter_rows():
                for frame in frames[launch]:
                    seen.setdefault(paths[frame], set()).add((int(replay), int(number), frame))
        return {path: len(calls) for path, calls in seen.items()}

    def _replayed_sources(self, mask: Any = None) -> dict[int, list[str]] | None:
        """Per replayed ``model.gpu`` row, its captured launch's source lines (innermost first);
        ``mask`` (per GPU row): only those rows, numbered among them."""
        events = self._attributed_replays("sources")
        if events is None:
            return None
        rows = events["gpu_row"].to_list()
        stacks = events["sources"].to_list()
        if mask is None:
            return dict(zip(rows, stacks, strict=True))
        import numpy as np

        kept = np.asarray(mask, dtype=bool)
        renumbered = np.cumsum(kept) - 1
        return {int(renumbered[r]): s for r, s in zip(rows, stacks, strict=True) if kept[r]}

    def graph_device_by_op(self, step: int | IterationScope | None = None) -> pl.DataFrame | None:
        """Per operator name (as the ops view shows it): the replayed GPU time attributed to it
        through a capture (``graph_device_us``) and its captured calls that ran (``graph_calls``:
        once per replay); ``step``: in that step.  None where the trace replays no graph."""
        events = self._attributed_replays("op", "op_row")
        if events is None:
            return None
        from ..frames import display_name

        if step is not None:
            rows = self._step_mask(step).arg_true()
            events = events.filter(pl.col("gpu_row").is_in(rows.implode()))
        return (
            events.group_by(display_name(pl.col("op")).alias("name"))
            .agg(
                pl.struct("replay", "op_row").n_unique().cast(pl.Int64).alias("graph_calls"),
                pl.col("dur").sum().alias("graph_device_us"),
            )
            .sort("name")
        )

    def replayed_launches(self, op: str, step: int | IterationScope | None = None) -> pl.DataFrame | None:
        """The replayed GPU events attributed to operator ``op`` through a capture, or to an operator
        under it there (``direct``: to ``op`` itself), as ``model.gpu`` rows; None where none is."""
        events = self._attributed_replays("op", "op_chain")
        if events is None:
            return None
        from ..frames import CHAIN_SEPARATOR, display_name

        if step is not None:
            events = events.filter(pl.col("gpu_row").is_in(self._step_mask(step).arg_true().implode()))
        shown = display_name(pl.col("op"))
        inside = (shown == op) | pl.col("op_chain").str.split(CHAIN_SEPARATOR).list.contains(op)
        picked = events.filter(inside).select("gpu_row", (shown == op).alias("direct"))
        if picked.height == 0:
            return None
        gpu = self.gpu.with_row_index("gpu_row").with_columns(pl.col("gpu_row").cast(pl.Int64))
        return gpu.join(picked, on="gpu_row").drop("gpu_row")

    def launch_index_with_replays(self) -> LaunchIndex:
        """The launch index (:attr:`Profile.launch_index`) with each replayed kernel a capture
        attributes launched from its captured launch's path (the operator chain marked
        :data:`~profview.analysis.graphs.attribution.CAPTURED`), not from the graph launch's."""
        events = self._attributed_replays("op", "op_chain", "python_stack")
        index = self.launch_index
        if events is None:
            return index
        if "_replay_index" not in vars(self):
            from ..analysis.graphs.attribution import with_replayed_paths

            vars(self)["_replay_index"] = with_replayed_paths(index, events)
        replay_index: LaunchIndex = vars(self)["_replay_index"]
        return replay_index

    # -- the views -----------------------------------------------------------------------------
    def graphs(self) -> pl.DataFrame:
        """One row per graph (see :func:`profview.analysis.graphs.attribution.graph_table`); the note of a graph
        no capture attributes says how to get one."""
        frames = self._require_graphs()  # first: a trace without graphs needs no attribution imported
        from ..analysis.graphs.attribution import NO_CAPTURE, graph_table

        table = graph_table(frames, self.gpu)
        remedy = pl.col("note").str.replace(NO_CAPTURE, f"{NO_CAPTURE}: {self._remedy}", literal=True)
        return table.with_columns(remedy)

    def graph_block_note(self, graph: int) -> str | None:
        """What graph ``graph``'s ``block`` labels are (:func:`profview.analysis.graphs.attribution.block_note`)."""
        from ..analysis.graphs.attribution import block_note

        nodes = self.graph_nodes(graph).sort("node")
        return block_note(nodes["node"].to_list(), nodes["block"].to_list())

    def graph_nodes(self, graph: int | None = None) -> pl.DataFrame:
        """One row per node (see :func:`profview.analysis.graphs.attribution.graph_node_table`); ``graph``: its only."""
        from ..analysis.graphs.attribution import graph_node_table

        frames = self._require_graphs()
        if graph is not None and graph not in set(frames.graphs["graph"].to_list()):
            raise ProfviewError(self.path, f"no graph {graph} (graphs: {frames.graphs['graph'].to_list()})")
        return graph_node_table(frames, self.gpu, graph)

    def graph_ops(self) -> pl.DataFrame:
        """Every GPU microsecond by (operator, module), replays through their capture (see
        :func:`profview.analysis.graphs.attribution.graph_ops_table`)."""
        from ..analysis.graphs.attribution import graph_ops_table

        frames = self._require_graphs()

        def compute() -> pl.DataFrame:
            modules, sources = self._direct_modules_and_sources()
            return graph_ops_table(frames, self.model, modules, sources)

        return self._default_view(f"graph_ops-{self._capture_key}", compute)

    def _direct_modules_and_sources(self) -> tuple[pl.Series, pl.Series]:
        """Per ``model.gpu`` row, the module path and source line the modules and sources views give it."""
        from ..analysis.tables.modules import gpu_attribution, launch_frames, source_line, source_stacks
        from ..frames import NO_MODULE, NO_SOURCE

        model = self.model
        if not model.host["is_python"].any():
            height = model.gpu.height
            return pl.repeat(NO_MODULE, height, eager=True), pl.repeat(NO_SOURCE, height, eager=True)
        frames = launch_frames(model)
        stacks = source_stacks(model, frames)
        return gpu_attribution(model, frames)["module"], pl.Series([source_line(stacks[f]) for f in frames.tolist()])

    def graph_summary(self) -> dict[str, Any] | None:
        """The Overview's and summary's figures: GPU time replayed by graphs, the part attributed,
        graphs without a capture; None where the trace replays no graph.  Kept with the trace's
        views (a re-opened trace's summary reads them, no model)."""
        if not self.is_trace:
            return None
        name = f"graph_summary-{self._capture_key}"
        saved = self.saved.facts().get(name) if self.saved else None
        if isinstance(saved, dict):
            return saved or None
        if name not in self._facts:
            self._facts[name] = self.fresh_facts[name] = self._graph_figures()
        figures: dict[str, Any] = self._facts[name]
        return figures or None

    def _graph_figures(self) -> dict[str, Any]:
        if not self.has_graphs():
            return {}
        from ..analysis.graphs.attribution import replayed
        from ..analysis.graphs.replays import FULL

        frames = self._graph_frames
        events = replayed(frames, self.gpu, ())
        return {
            "all_gpu_us": float(self.gpu["dur"].sum() or 0.0),
            "replayed_us": float(events["dur"].sum() or 0.0),
            "attributed_us": float(events.filter(pl.col("attributed"))["dur"].sum() or 0.0),
            "graphs": frames.graphs.height,
            "replays": int((frames.replays["partial"] == FULL).sum()),
            "partial_replays": int((frames.replays["partial"] != FULL).sum()),
            "without_capture": frames.graphs["capture"].null_count(),
            "captures": sorted(set(frames.graphs["capture"].drop_nulls().to_list())),
            # why each graph without a capture has none, where captures were there to choose from
            "misfits": [
                _why_no_capture(str(note))
                for note in frames.graphs.filter(pl.col("capture").is_null())["note"].to_list()
                if _why_no_capture(str(note))
            ],
        }

    @property
    def _remedy(self) -> str:
        """How to get a capture: with ``--capture`` given, not to give one (it was given)."""
        return CAPTURE_GIVEN_REMEDY if self.capture else CAPTURE_REMEDY

    def graph_lines(self) -> list[str]:
        """The Overview's and summary's graph lines: how much GPU time graph replays took and how
        much of it is attributed through a capture; where a graph has none, how to get one."""
        figures = self.graph_summary()
        if not figures:
            return []
        from ..frames import fmt_share, fmt_us

        share = figures["replayed_us"] / figures["all_gpu_us"] * 100.0 if figures["all_gpu_us"] else 0.0
        partial = f" + {figures['partial_replays']} cut by the window" if figures["partial_replays"] else ""
        counted = f"{_count(figures['graphs'], 'graph')}, {_count(figures['replays'], 'replay')}{partial}"
        first = f"graph replays: {fmt_us(figures['replayed_us'])}, {fmt_share(share)} of GPU time ({counted})"
        misfits = figures.get("misfits") or []
        if figures["without_capture"] == figures["graphs"]:
            if misfits:  # captures were given or found: which fits how well, never "no capture"
                return [first, f"graph replays not attributed to operators: {'; '.join(misfits)}"]
            return [first, f"graph replays not attributed to operators: no capture; {self._remedy}"]
        attributed = figures["attributed_us"] / figures["replayed_us"] * 100.0 if figures["replayed_us"] else 0.0
        captures = ", ".join(figures["captures"])
        second = f"graph replays attributed to operators: {fmt_share(attributed)} through {captures}"
        if misfits:
            second += f"; {_count(len(misfits), 'graph')} not: {'; '.join(misfits)}"
        if figures["without_capture"] > len(misfits):
            bare = _count(figures["without_capture"] - len(misfits), "graph")
            second += f"; {bare} without a capture: {self._remedy}"
        return [first, second]


def capture_inputs(paths: list[str] | None) -> tuple[str, ...]:
    """Every file ``--capture`` may read (a capture trace, and every file of a capture folder:
    ``execution_details.json`` and the traces it lists): none may be written over by an export."""
    found: list[str] = []
    for path in paths or []:
        if os.path.isdir(path):
            try:
                found += [os.path.join(path, name) for name in sorted(os.listdir(path))]
            except OSError:
                continue
        else:
            found.append(path)
    return tuple(found)


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def _why_no_capture(note: str) -> str:
    """The part of a graph's note saying why the captures there were did not attribute it (the
    best one's score, or two that fit equally), or empty where it had none to choose from."""
    from ..analysis.graphs.attribution import NO_FIT

    for part in note.split("; "):
        if part.startswith(NO_FIT):
            return part.removeprefix(f"{NO_FIT}: ")
        if part.startswith("captures ") and "fit this graph equally" in part:
            return part
    return ""


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def check_capture_paths(paths: list[str]) -> None:
    """Each ``--capture`` path exists (said before any work: the viewer takes the terminal after)."""
    for path in paths:
        if not os.path.exists(path):
            raise capture_error(path, "no such file or folder")


def capture_error(path: str | None, problem: str) -> ProfviewError:
    """A ``--capture`` problem as one line that starts ``--capture:`` and names the file."""
    return ProfviewError(None, f"--capture: {path}: {problem}" if path else f"--capture: {problem}")


def _capture_files(path: str) -> list[tuple[str, int | None]]:
    """The capture traces ``path`` names: itself, or a folder's (those its ``execution_details.json``
    lists, with their batch sizes; else every trace file in it)."""
    note(path)  # the capture, and a folder's every file, are inputs: never a write's target
    if not os.path.isdir(path):
        return [(path, None)]
    details = os.path.join(path, EXECUTION_DETAILS)
    if os.path.isfile(details):
        try:
            with open(details, "rb") as fh:
                text = fh.read(DETAILS_LIMIT + 1)
        except OSError as exc:
            raise capture_error(details, f"not readable ({exc.strerror or exc})") from None
        if len(text) > DETAILS_LIMIT:
            raise capture_error(details, f"larger than {DETAILS_LIMIT // 2**20} MiB: not a list of capture files")
        try:
            entries = json.loads(text)
        except ValueError as exc:
            raise capture_error(details, f"not readable as JSON ({exc})") from None
        except RecursionError:
            raise capture_error(details, "JSON nested deeper than profview reads") from None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("file"), str) for e in entries
        ):
            raise capture_error(details, "expected a list of objects with a 'file' each")
        files: dict[tuple[str, int | None], None] = {}  # an entry repeated is one capture file
        for entry in entries:
            file = os.path.join(path, os.path.basename(entry["file"]))
            if not os.path.isfile(file):  # named as listed: a listed folder is not looked in (only this one)
                listed = entry["file"]
                raise capture_error(
                    file, f"listed in {EXECUTION_DETAILS} but not there (listed as {listed!r}; only {path} is read)"
                )
            size = entry.get("batch_size")
            files[(file, count_of(size) if isinstance(size, int) else None)] = None  # 2^63 and more: none
        return list(files)
    traces = sorted(
        os.path.join(path, name)
        for name in os.listdir(path)
        if name.endswith((".json", ".json.gz")) and name != EXECUTION_DETAILS
    )
    if not traces:
        raise capture_error(path, f"no {EXECUTION_DETAILS} and no trace files in this folder")
    return [(file, None) for file in traces]


def _captures_of(file: str, batch_size: int | None, use_cache: bool, load: Callable[..., Any] | None) -> list[Capture]:
    """The captures in one capture trace, opened by ``load`` (:func:`profview.profiles.loading.load`);
    an error naming it where it holds none."""
    from ..analysis.graphs.capture import find_captures

    if load is None:
        raise capture_error(file, "this profile was not opened by profview.load, so it cannot open captures")
    try:
        profile = load(file, use_cache=use_cache)
    except ProfviewError as exc:
        if exc.out_of_memory or exc.leave_now:
            raise
        raise capture_error(file, exc.problem) from None
    if not profile.is_trace:
        raise capture_error(file, f"a {profile.format}, not a trace")
    events = profile._trace_events()
    found = find_captures(profile.model, GraphViews._launch_kernels(events), file, batch_size)
    if not found:
        from ..analysis.trace.runtime_calls import BEGIN_CAPTURE

        begins = int(profile.model.host["name"].str.contains(BEGIN_CAPTURE).sum())
        if begins:  # there is a begin: saying there is none sent people looking for the wrong thing
            raise capture_error(
                file,
                f"no complete graph capture in this trace ({begins} *StreamBeginCapture, none with a "
                "*StreamEndCapture after it on its thread: the profiling window cut the capture)",
            )
        raise capture_error(file, "no graph capture in this trace (no cudaStreamBeginCapture/hipStreamBeginCapture)")
    return found
