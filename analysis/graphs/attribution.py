"""Graph replays attributed through their capture, and the views that show them.

:mod:`.replays` finds the replays, graphs and nodes of a trace; :mod:`.capture` the
captures (of this trace, or of a capture trace given with ``--capture``); :mod:`.align`
pairs each graph's nodes with one capture's launches.  Here the three meet:

* each graph is attributed through the capture that fits it best: the most nodes with a launch of
  their kind and name, counted as multisets, then the most paired in order (a capture that has a
  launch for fewer than half the graph's nodes fits none); of equal fits the one
  whose batch size the replay's annotation names (vLLM's ``execute_32_…``, SGLang's ``bs=32``);
  of fits still equal and not alike, none (the note says so);
* a node takes the operator, module, source line and stacks of its captured launch, so every
  replayed GPU event takes those of its node: **replayed** time is then attributed like time
  launched directly;
* ``graphs``, ``graph_nodes`` and ``graph_ops`` are the views (columns below); ``graph_ops`` puts
  every GPU microsecond of the trace under an (operator, module): replayed kernels under their
  captured launch's, the rest under their own launching operator's, as TraceLens' capture-merged
  ``ops_summary.csv`` counts them (docs/graphs.md: where and by how much it differs).

No I/O: pure functions over frames.  Witnesses: the raw events paired in order with the standard
library (tests/graph_witness.py) and TraceLens' ``ops_summary.csv`` of the same replays
(tests/analysis/graphs/test_graphs.py, test_graph_views_attributed.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ...frames import NO_MODULE, NO_SOURCE, UNATTRIBUTED, count_of, display_name
from ..trace.launch_index import LaunchIndex
from ..trace.model import TraceModel
from .align import Alignment, Lane, Template, align_graph, node_kind, template_of
from .capture import LAUNCH_SCHEMA, Capture
from .replays import FULL, Replays

#: The ``graphs`` view.
GRAPH_COLUMNS = (
    "graph",
    "nodes",
    "replays",
    "partial_replays",
    "device_us",
    "pct_of_gpu",
    "attributed_pct",
    "capture",
    "note",
)
#: The ``graph_nodes`` view.
GRAPH_NODE_COLUMNS = (
    "graph",
    "node",
    "name",
    "op",
    "module",
    "source",
    "replays",
    "device_us",
    "mean_us",
    "min_us",
    "max_us",
    "how",
    "stream",
    "op_chain",
    "python_stack",
    "block",
)
#: The ``graph_ops`` view.
GRAPH_OP_COLUMNS = ("name", "module", "calls", "device_us", "graph_us", "pct", "source")
#: Marks an operator chain that a replayed kernel took from its captured launch (a kernel's launchers).
CAPTURED = "(captured)"
#: Replayed GPU work whose node no capture decides (graph_ops' row for it).
NOT_ATTRIBUTED = "(graph replay, not attributed)"
#: Why a graph has no capture at all (the remedy is the profile's to say: it knows the options).
NO_CAPTURE = "no capture of this graph"
#: Why a graph is not attributed through a capture of another trace that names nothing it runs.
FOREIGN_BY_COUNT = (
    "the only capture that fits is another trace's and names none of this graph's kernels (no kernel "
    "name, no Triton anchor): counts alone do not show it is this graph's (another model has as many launches)"
)
#: Why a graph with captures to choose from has none: the best one's score follows
#: (``no capture fits this graph: capture_32_DECODE fits 0 of 421 nodes``).
NO_FIT = "no capture fits this graph"
#: Batch sizes in the annotation around a replay: SGLang's ``step[DECODE bs=32]``, vLLM's
#: ``execute_32_context_0(…)_generation_32(…)``.
REPLAY_BATCH = (re.compile(r"\bbs=([0-9]+)"), re.compile(r"^execute_([0-9]+)_"))
#: Fewer of a graph's nodes than this share paired with a capture's launches: the capture is not its.
MIN_FIT = 0.5

#: The attribution each node takes from its captured launch (null where refused).
NODE_ATTRIBUTES = ("op", "op_row", "op_chain", "python_stack", "module", "source", "sources")


@dataclass
class GraphFrames:
    """The attributed graphs of one trace: what the views and the cache hold.

    ``events``: one row per replayed GPU event (``gpu_row``, ``replay``, ``graph``, ``node``);
    ``replays``: :attr:`Replays.replays`; ``nodes``: one row per node (``graph``, ``node``,
    ``name``, ``kind``, ``stream``, ``capture``, ``launch``, ``how`` and :data:`NODE_ATTRIBUTES`);
    ``graphs``: one row per graph (``graph``, ``capture``: the label of the capture it is
    attributed through, or null; ``note``).
    """

    events: pl.DataFrame
    replays: pl.DataFrame
    nodes: pl.DataFrame
    graphs: pl.DataFrame
    captures: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether the trace replays no graph."""
        return self.events.height == 0


def replay_batch_sizes(model: TraceModel, replays: Replays) -> dict[int, int]:
    """Per graph, the batch size the annotation around its first launched replay names (where one does)."""
    first = replays.replays.filter(pl.col("launch_row").is_not_null()).group_by("graph").agg(pl.col("launch_row").min())
    names = model.host["name"]
    kinds = model.host["kind"]
    parent = model.tree.parent
    sizes = {}
    for graph, row in first.iter_rows():
        if graph is None:
            continue
        node = int(parent[int(row)])
        while node >= 0:
            if kinds[node] == "user_annotation":
                size = _batch_in(str(names[node]))
                if size is not None:
                    sizes[int(graph)] = size
                    break
            node = int(parent[node])
    return sizes


def _batch_in(text: str) -> int | None:
    for pattern in REPLAY_BATCH:
        found = pattern.search(text)
        if found:
            return count_of(found.group(1))  # more than 18 digits: no batch size, not a crash
    return None


def attribute(
    replays: Replays, captures: list[Capture], batch_sizes: dict[int, int] | None = None, origin: str | None = None
) -> GraphFrames:
    """Attribute each graph through the capture that fits it (see the module's docstring; ``origin``:
    the replay's trace, whose own captures need no more than counts to be its graphs')."""
    batch_sizes = batch_sizes or {}
    index = CaptureIndex(captures)
    node_rows: list[pl.DataFrame] = []
    graph_rows: list[dict[str, object]] = []
    # One pass over the nodes (a filter per graph would cost graphs x nodes).
    by_graph = {int(g): part.sort("node") for (g,), part in replays.nodes.partition_by("graph", as_dict=True).items()}
    for graph in replays.graphs:
        nodes = by_graph[graph]
        notes = list(replays.notes.get(graph, []))
        chosen, why = _choose(nodes, index, batch_sizes.get(graph))
        if chosen is not None and origin is not None and not _evidenced(nodes, captures[chosen[0]], origin):
            chosen, why = None, FOREIGN_BY_COUNT
        if chosen is None:
            node_rows.append(_unattributed_nodes(nodes, why))
            notes.append(why)
            graph_rows.append({"graph": graph, "capture": None, "note": "; ".join(notes)})
            continue
        number, alignments = chosen
        node_rows.append(_attributed_nodes(nodes, number, captures[number], alignments))
        refused = sum(1 for a in alignments for launch in a.launch if launch < 0)
        if refused:
            notes.append(f"{refused} of {nodes.height} nodes not attributed (graph_nodes says why)")
        graph_rows.append({"graph": graph, "capture": captures[number].label, "note": "; ".join(notes)})
    node_frame = pl.concat(node_rows) if node_rows else _empty_node_frame()
    graph_frame = pl.DataFrame(graph_rows, schema={"graph": pl.Int64, "capture": pl.String, "note": pl.String})
    events = replays.events.select("gpu_row", "replay", "graph", "node")
    return GraphFrames(events, replays.replays, node_frame, graph_frame, [c.label for c in captures])


def _evidenced(nodes: pl.DataFrame, capture: Capture, origin: str) -> bool:
    """Whether more than counts tie ``capture`` to this graph: it is in the replay's own trace, or it
    names (a kernel, or an anchor) at least one of the graph's kernels."""
    if capture.origin == origin:
        return True
    names = set(nodes["name"].to_list())
    said = set(capture.launches["name"].drop_nulls().to_list()) | set(capture.launches["anchor"].drop_nulls().to_list())
    return bool(names & said)


def _lanes(nodes: pl.DataFrame) -> list[Lane]:
    return [
        Lane(group["kind"].to_list(), group["name"].to_list())
        for _lane, group in nodes.sort("lane", "position").group_by("lane", maintain_order=True)
    ]


class CaptureIndex:
    """The captures of a trace, prepared once for every graph: each one's template (equal templates
    share one number, so they are aligned once), and an index from (kind, kernel name) and from kind
    to the captures' launch counts, so how many of a graph's nodes each capture has a launch for is
    a few array operations per graph, not a pass over every capture's launches.  Only the captures
    that share the most nodes with a graph can be its (:func:`_choose`): only they are aligned."""

    def __init__(self, captures: list[Capture]) -> None:
        self.captures = captures
        count = len(captures)
        self.templates: list[Template] = []
        self.template_of: list[int] = []
        seen: dict[tuple[object, ...], int] = {}
        self.named: dict[tuple[str, str], np.ndarray] = {}
        self.unnamed: dict[str, np.ndarray] = {}
        for number, capture in enumerate(captures):
            template = template_of(capture.launches)
            identity = (tuple(template.kinds), tuple(template.names), tuple(template.anchors), tuple(template.keys))
            if identity not in seen:
                seen[identity] = len(self.templates)
                self.templates.append(template)
            self.template_of.append(seen[identity])
            for kind, name in zip(template.kinds, template.names, strict=True):
                if name:
                    self.named.setdefault((kind, name), np.zeros(count, dtype=np.int64))[number] += 1
                else:
                    self.unnamed.setdefault(kind, np.zeros(count, dtype=np.int64))[number] += 1
        #: Alignments already made: (template number, the graph's lanes) -> alignments.
        self.aligned: dict[tuple[int, tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]], list[Alignment]] = {}

    def shared(self, nodes: pl.DataFrame) -> np.ndarray:
        """Per capture, :func:`_shared_nodes` of the graph: launches naming a node's kernel first,
        then unnamed launches of its kind (a kind's unnamed launches go to whatever its named ones
        left over, whichever name)."""
        count = len(self.captures)
        kinds = [node_kind(k, n) for k, n in zip(nodes["kind"].to_list(), nodes["name"].to_list(), strict=True)]
        graph = Counter(zip(kinds, nodes["name"].to_list(), strict=True))
        took = np.zeros(count, dtype=np.int64)
        left: dict[str, np.ndarray] = {}
        for (kind, name), number in graph.items():
            named = self.named.get((kind, name))
            part = np.minimum(number, named) if named is not None else np.zeros(count, dtype=np.int64)
            took += part
            left[kind] = left.get(kind, np.zeros(count, dtype=np.int64)) + (number - part)
        for kind, rest in left.items():
            unnamed = self.unnamed.get(kind)
            if unnamed is not None:
                took += np.minimum(rest, unnamed)
        return took

    def align(self, number: int, lanes: list[Lane]) -> list[Alignment]:
        """The lanes aligned with capture ``number`` (once per distinct template and lanes)."""
        key = (self.template_of[number], tuple((tuple(lane.kinds), tuple(lane.names)) for lane in lanes))
        found = self.aligned.get(key)
        if found is None:
            found = align_graph(self.templates[key[0]], lanes)
            self.aligned[key] = found
        return found


def _choose(
    nodes: pl.DataFrame, index: CaptureIndex | list[Capture], batch_size: int | None
) -> tuple[tuple[int, list[Alignment]] | None, str]:
    """The capture this graph is attributed through and its lanes' alignments, or None and why."""
    if not isinstance(index, CaptureIndex):
        index = CaptureIndex(index)
    captures = index.captures
    if not captures:
        return None, NO_CAPTURE
    lanes = _lanes(nodes)
    shared = index.shared(nodes)
    most = int(shared.max())
    if most < MIN_FIT * nodes.height:
        label = captures[int(np.argmax(shared))].label
        return None, f"{NO_FIT}: {label} fits {most} of {nodes.height} nodes"
    fits = []
    for number in np.flatnonzero(shared == most).tolist():
        alignments = index.align(number, lanes)
        fits.append(((most, sum(a.matched for a in alignments)), number, alignments))
    best = max(score for score, _n, _a in fits)
    top = [f for f in fits if f[0] == best]
    if len(top) > 1 and batch_size is not None:
        sized = [f for f in top if captures[f[1]].batch_size == batch_size]
        top = sized or top
    if len(top) > 1:
        outcomes = {index.template_of[n]: _outcome(index.templates[index.template_of[n]], a) for _s, n, a in top}
        if len(set(outcomes.values())) > 1:
            labels = ", ".join(repr(captures[n].label) for _s, n, _a in top)
            return None, f"captures {labels} fit this graph equally and attribute it differently"
    _score, number, alignments = top[0]
    return (number, alignments), ""


def _shared_nodes(nodes: pl.DataFrame, launches: pl.DataFrame) -> int:
    """How many of a graph's nodes a capture has a launch for, counted as multisets (by kind and, where
    the capture names kernels, by name): whether the capture is this graph's, whatever the order."""
    kinds = [node_kind(k, n) for k, n in zip(nodes["kind"].to_list(), nodes["name"].to_list(), strict=True)]
    graph = Counter(zip(kinds, nodes["name"].to_list(), strict=True))
    named = Counter((k, n) for k, n in zip(launches["kind"].to_list(), launches["name"].to_list(), strict=True) if n)
    unnamed = Counter(k for k, n in zip(launches["kind"].to_list(), launches["name"].to_list(), strict=True) if not n)
    shared = 0
    for (kind, name), count in graph.items():
        took = min(count, named[(kind, name)])
        rest = min(count - took, unnamed[kind])
        unnamed[kind] -= rest
        shared += took + rest
    return shared


def _outcome(template: Template, alignments: list[Alignment]) -> tuple[tuple[str, ...] | None, ...]:
    """What a capture would attribute the nodes to (equal outcomes make a tie harmless)."""
    keys = template.keys
    return tuple(keys[i] if i >= 0 else None for a in alignments for i in a.launch)


def _attributed_nodes(nodes: pl.DataFrame, number: int, capture: Capture, alignments: list[Alignment]) -> pl.DataFrame:
    """The nodes with their captured launch's attribution (null where refused)."""
    ordered = nodes.sort("lane", "position")
    launch = [i for a in alignments for i in a.launch]
    how = [h for a in alignments for h in a.how]
    paired = ordered.with_columns(
        pl.lit(number, dtype=pl.Int64).alias("capture"),
        pl.Series("launch", [i if i >= 0 else None for i in launch], dtype=pl.Int64),
        pl.Series("how", how, dtype=pl.String),
    )
    described = capture.launches.select(pl.col("index").alias("launch"), *NODE_ATTRIBUTES)
    return (
        paired.join(described, on="launch", how="left", maintain_order="left")
        .sort("node")
        .select(_NODE_FRAME_SCHEMA.keys())
        .cast(pl.Schema(_NODE_FRAME_SCHEMA))
    )


def _unattributed_nodes(nodes: pl.DataFrame, why: str) -> pl.DataFrame:
    frame = nodes.with_columns(
        pl.lit(None, dtype=pl.Int64).alias("capture"),
        pl.lit(None, dtype=pl.Int64).alias("launch"),
        pl.lit(why, dtype=pl.String).alias("how"),
        *[pl.lit(None, dtype=LAUNCH_SCHEMA[a]).alias(a) for a in NODE_ATTRIBUTES],
    )
    return frame.select(_NODE_FRAME_SCHEMA.keys()).cast(pl.Schema(_NODE_FRAME_SCHEMA))


_NODE_FRAME_SCHEMA: dict[str, pl.DataType] = {
    "graph": pl.Int64(),
    "node": pl.Int64(),
    "name": pl.String(),
    "kind": pl.String(),
    "stream": pl.Int64(),
    "capture": pl.Int64(),
    "launch": pl.Int64(),
    "how": pl.String(),
    **{a: LAUNCH_SCHEMA[a] for a in NODE_ATTRIBUTES},
}


def _empty_node_frame() -> pl.DataFrame:
    return pl.DataFrame(schema=_NODE_FRAME_SCHEMA)


# -- per replayed GPU event ----------------------------------------------------------------------


def replayed(
    frames: GraphFrames, gpu: pl.DataFrame, attributes: tuple[str, ...] = (*NODE_ATTRIBUTES, "how")
) -> pl.DataFrame:
    """One row per replayed GPU event: ``gpu_row``, ``graph``, ``node``, ``replay``, ``dur``,
    ``name`` (the kernel), ``attributed`` and the node's ``attributes`` (:data:`NODE_ATTRIBUTES`
    and ``how``; fewer: less to copy per event)."""
    rows = frames.events["gpu_row"]
    events = frames.events.with_columns(gpu["dur"].gather(rows), gpu["name"].gather(rows))
    nodes = frames.nodes.select("graph", "node", pl.col("op").is_not_null().alias("attributed"), *attributes)
    return events.join(nodes, on=["graph", "node"], how="left", maintain_order="left")


# -- the views ------------------------------------------------------------------------------------


def graph_table(frames: GraphFrames, gpu: pl.DataFrame) -> pl.DataFrame:
    """One row per graph (:data:`GRAPH_COLUMNS`): its nodes, replays (whole and cut by the window),
    the GPU time its replays took, that as a share of all GPU time, the share of it attributed
    through a capture, the capture, and what is not known and why."""
    all_gpu = float(gpu["dur"].sum() or 0.0)
    events = replayed(frames, gpu, ())
    per_graph = events.group_by("graph").agg(
        pl.col("dur").sum().alias("device_us"),
        pl.col("dur").filter(pl.col("attributed")).sum().alias("attributed_us"),
    )
    replays = frames.replays.group_by("graph").agg(
        (pl.col("partial") == FULL).sum().cast(pl.Int64).alias("replays"),
        (pl.col("partial") != FULL).sum().cast(pl.Int64).alias("partial_replays"),
    )
    nodes = frames.nodes.group_by("graph").agg(pl.len().cast(pl.Int64).alias("nodes"))
    table = (
        frames.graphs.join(nodes, on="graph", how="left")
        .join(replays, on="graph", how="left")
        .join(per_graph, on="graph", how="left")
        .with_columns(
            (pl.col("device_us") / all_gpu * 100.0 if all_gpu else pl.lit(None, dtype=pl.Float64)).alias("pct_of_gpu"),
            pl.when(pl.col("device_us") > 0)
            .then(pl.col("attributed_us") / pl.col("device_us") * 100.0)
            .alias("attributed_pct"),
        )
    )
    return table.select(GRAPH_COLUMNS).sort("graph")


def graph_node_table(frames: GraphFrames, gpu: pl.DataFrame, graph: int | None = None) -> pl.DataFrame:
    """One row per graph node (:data:`GRAPH_NODE_COLUMNS`; ``graph``: that graph's only): its
    kernel, the operator, module and source line of its captured launch, how many replays ran it,
    their GPU time, mean, shortest and longest, and ``how`` it was attributed (or why not)."""
    nodes = frames.nodes if graph is None else frames.nodes.filter(pl.col("graph") == graph)
    events = replayed(frames, gpu, ())
    per_node = events.group_by("graph", "node").agg(
        pl.col("replay").n_unique().cast(pl.Int64).alias("replays"),
        pl.col("dur").sum().alias("device_us"),
        pl.col("dur").mean().alias("mean_us"),
        pl.col("dur").min().alias("min_us"),
        pl.col("dur").max().alias("max_us"),
    )
    blocks = [
        pl.DataFrame(
            {"graph": group["graph"], "node": group["node"], "block": repeated_blocks(group["name"].to_list())},
            schema={"graph": pl.Int64, "node": pl.Int64, "block": pl.String},
        )
        for _graph, group in nodes.sort("graph", "node").group_by("graph", maintain_order=True)
    ]
    labelled = (
        pl.concat(blocks) if blocks else pl.DataFrame(schema={"graph": pl.Int64, "node": pl.Int64, "block": pl.String})
    )
    return (
        nodes.join(per_node, on=["graph", "node"], how="left")
        .join(labelled, on=["graph", "node"], how="left")
        .with_columns(pl.col("replays").fill_null(0), pl.col("device_us").fill_null(0.0))
        .select(GRAPH_NODE_COLUMNS)
        .sort("graph", "node")
    )


#: Fewest back-to-back repeats of one block of nodes that :func:`repeated_blocks` labels.
MIN_REPEATS = 3
#: The longest block looked for (a model's layer replays tens to hundreds of kernels): trying every
#: length up to a third of the graph was quadratic (200,000 nodes: 26 s); this keeps it linear.
MAX_BLOCK = 1024


def repeated_blocks(names: list[str]) -> list[str | None]:
    """Per node, ``"k/K (inferred)"`` where the nodes hold ``K`` (at least :data:`MIN_REPEATS`)
    back-to-back repeats of one block of kernel names (a layer's kernels, once per layer) and the
    node is in the ``k``-th; else None.  Inferred from the names alone (a model's layers, or a loop,
    look the same): the run that covers the most nodes, of the shortest block (of at most
    :data:`MAX_BLOCK` nodes)."""
    import numpy as np

    n = len(names)
    codes = np.unique(np.array(names, dtype=object), return_inverse=True)[1] if n else np.array([], dtype=np.int64)
    best: tuple[int, int, int, int] | None = None  # (covered, -period, start, count)
    for period in range(2, min(n // MIN_REPEATS, MAX_BLOCK) + 1):
        same = np.concatenate([[False], codes[period:] == codes[:-period], [False]])
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))
        if len(edges) == 0:
            continue
        starts, ends = edges[0::2], edges[1::2]
        longest = int(np.argmax(ends - starts))
        length = int(ends[longest] - starts[longest])
        count = (length + period) // period
        if count < MIN_REPEATS:
            continue
        found = (count * period, -period, int(starts[longest]), count)
        if best is None or found[:2] > best[:2]:
            best = found
    labels: list[str | None] = [None] * n
    if best is not None:
        covered, _period, start, count = best
        period = covered // count
        for at in range(start, start + covered):
            labels[at] = f"{(at - start) // period + 1}/{count} (inferred)"
    return labels


def block_note(nodes: list[int], labels: list[str | None]) -> str | None:
    """What a graph's ``block`` labels (:func:`repeated_blocks`) are, in one line, for the nodes
    table's caption: how many repeats of how many nodes, which nodes they span and how many lie
    outside; and that they come from the kernel names alone, so a repeat may hold two layers
    (layers that alternate their kernels, as GPT-OSS's sliding and full attention do) or start
    mid-layer (a first layer whose kernels differ).  None where no node is labelled."""
    inside = [node for node, label in zip(nodes, labels, strict=True) if label]
    if not inside:
        return None
    first = next(label for label in labels if label)
    count = int(first.split("/", 1)[1].split(" ", 1)[0])
    outside = len(nodes) - len(inside)
    rest = f", {outside} node{'s' if outside != 1 else ''} outside unlabelled" if outside else ""
    return (
        f"block k/{count}: the k-th of {count} back-to-back repeats of the same {len(inside) // count} kernel names "
        f"(nodes {min(inside)}–{max(inside)}{rest}), inferred from the names alone: "
        "a repeat may hold more than one layer, or start mid-layer"
    )


def graph_ops_table(frames: GraphFrames, model: TraceModel, modules: pl.Series, sources: pl.Series) -> pl.DataFrame:
    """Every GPU microsecond of the trace by (operator, module) (:data:`GRAPH_OP_COLUMNS`).

    A replayed event is charged to its node's captured launch (operator, module, source line), or
    to :data:`NOT_ATTRIBUTED` where no capture decides its node; any other event to its own
    launching operator, with ``modules`` and ``sources`` (per ``model.gpu`` row, as the modules and
    sources views place it); one launched by a runtime call no operator encloses, to that call (as
    TraceLens names it); one with no launch in the trace, to :data:`UNATTRIBUTED`.  ``calls``
    counts operator calls (a captured call once per replay that ran it); ``graph_us`` is the
    replayed part of ``device_us``; ``source`` is the row's source line with the most GPU time.
    """
    gpu = model.gpu
    host_names = model.host.select(display_name(pl.col("name")).alias("n"))["n"]
    direct = (
        gpu.select("dur", "op_row", "launch_row")
        .with_row_index("gpu_row")
        .with_columns(
            pl.col("gpu_row").cast(pl.Int64),
            modules.alias("module"),
            sources.alias("source"),
        )
    )
    launch_of = pl.coalesce("op_row", "launch_row")
    direct = direct.with_columns(
        pl.when(launch_of.is_not_null())
        .then(launch_of.map_batches(lambda rows: host_names.gather(rows.fill_null(0)), return_dtype=pl.String))
        .otherwise(pl.lit(UNATTRIBUTED))
        .alias("name"),
        pl.format("row {}", pl.coalesce(launch_of, -pl.col("gpu_row") - 1)).alias("call"),
        pl.lit(0.0).alias("graph_us"),
    )
    events = replayed(frames, gpu, ("op", "op_row", "module", "source"))
    captured = events.select(
        "gpu_row",
        pl.coalesce(display_name(pl.col("op")), pl.lit(NOT_ATTRIBUTED)).alias("name"),
        pl.coalesce("module", pl.lit(NO_MODULE)).alias("module"),
        pl.coalesce("source", pl.lit(NO_SOURCE)).alias("source"),
        pl.format("replay {} op {}", "replay", pl.coalesce("op_row", -pl.col("node") - 1)).alias("call"),
        "dur",
        pl.col("dur").alias("graph_us"),
    )
    replayed_rows = captured["gpu_row"].implode()
    rest = direct.filter(~pl.col("gpu_row").is_in(replayed_rows)).select(captured.columns)
    rows = pl.concat([captured, rest])
    all_gpu = float(rows["dur"].sum() or 0.0)
    best_source = (
        rows.group_by("name", "module", "source")
        .agg(pl.col("dur").sum().alias("source_us"))
        .sort("source_us", "source", descending=[True, False])
        .group_by("name", "module", maintain_order=True)
        .agg(pl.col("source").first())
    )
    table = (
        rows.group_by("name", "module")
        .agg(
            pl.col("call").n_unique().cast(pl.Int64).alias("calls"),
            pl.col("dur").sum().alias("device_us"),
            pl.col("graph_us").sum(),
        )
        .join(best_source, on=["name", "module"], how="left")
        .with_columns(
            (pl.col("device_us") / all_gpu * 100.0 if all_gpu else pl.lit(None, dtype=pl.Float64)).alias("pct")
        )
    )
    return table.select(GRAPH_OP_COLUMNS).sort(["device_us", "name", "module"], descending=[True, False, False])


def with_replayed_paths(index: LaunchIndex, events: pl.DataFrame) -> LaunchIndex:
    """``index`` with the replayed GPU events of ``events`` (:func:`replayed`, attributed ones)
    launched from their captured launch's path: each distinct path a row and path number of its own
    (rows below -1, paths after the index's), its chain led by :data:`CAPTURED`."""
    paths = events.select("op", "op_chain", "python_stack").unique(maintain_order=True)
    first = int(index.paths.select(pl.col("path").max()).item() or 0) + 1 if index.paths.height else 0
    paths = paths.with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("number"),
        pl.format("{} > {}", pl.lit(CAPTURED), "op_chain").alias("op_chain"),
    )
    numbered = events.select("gpu_row", "op", "op_chain", "python_stack").join(
        paths.select("op", pl.col("op_chain").str.strip_prefix(CAPTURED + " > "), "python_stack", "number"),
        on=["op", "op_chain", "python_stack"],
        how="left",
        nulls_equal=True,
    )
    rows = pl.concat(
        [
            index.rows,
            paths.select((-2 - pl.col("number")).alias("op_row"), (first + pl.col("number")).alias("path")),
        ]
    )
    texts = pl.concat(
        [index.paths, paths.select((first + pl.col("number")).alias("path"), "op", "op_chain", "python_stack")]
    )
    replaced = index.gpu.with_row_index("gpu_row").with_columns(pl.col("gpu_row").cast(pl.Int64))
    replaced = replaced.join(
        numbered.select("gpu_row", (-2 - pl.col("number")).alias("captured_row")), on="gpu_row", how="left"
    )
    gpu = replaced.select("name", pl.coalesce("captured_row", "op_row").alias("op_row"), "dur").select(
        index.gpu.columns
    )
    return LaunchIndex(gpu, rows.cast(index.rows.schema), texts.cast(index.paths.schema))


def node_launch_frame(node: dict[str, Any]) -> pl.DataFrame:
    """One row of a kernel's launchers (:data:`~profview.frames.KERNEL_LAUNCH_COLUMNS`) for a
    ``graph_nodes`` row: its captured launch's operator, chain (marked :data:`CAPTURED`) and Python
    stack, and the GPU time of the replays that ran it."""
    calls = int(node.get("replays") or 0)
    total = float(node.get("device_us") or 0.0)
    return pl.DataFrame(
        {
            "op": [node.get("op")],
            "op_chain": [f"{CAPTURED} > {node.get('op_chain') or ''}"],
            "python_stack": [node.get("python_stack") or ""],
            "calls": [calls],
            "total_us": [total],
            "mean_us": [node.get("mean_us")],
            "min_us": [node.get("min_us")],
            "max_us": [node.get("max_us")],
            "pct": [100.0 if total else None],
        },
        schema={
            "op": pl.String,
            "op_chain": pl.String,
            "python_stack": pl.String,
            "calls": pl.Int64,
            "total_us": pl.Float64,
            "mean_us": pl.Float64,
            "min_us": pl.Float64,
            "max_us": pl.Float64,
            "pct": pl.Float64,
        },
    )
