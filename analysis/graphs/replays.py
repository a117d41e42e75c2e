"""Graph replays found in a trace without any capture, and the graphs and nodes they replay.

A **replay** is the GPU work of one graph launch: the GPU events (kernel, memcpy, memset) whose
launching runtime call is a ``cudaGraphLaunch``/``hipGraphLaunch``/``cuGraphLaunch`` (they share
its ``correlation``).  A run of two or more GPU events sharing a correlation with no runtime call in
the trace is a **partial replay**: a graph launched before the profiling window (Kineto drops
what started before it), whose tail is in the trace.  One event alone proves nothing (an eager
kernel launched before the window looks the same), so a lone event is never taken for one.

A replay's events are ordered per stream (streams by id, events by start): its **node sequence**.
A **graph** is a distinct node sequence (by name); replays of the same sequence replay the same
graph, and each node is a position in it (``graph id`` / ``graph node id``, which newer Kineto
writes on replayed events, take precedence where present).  A partial replay at the window's start
is joined to the one graph whose node sequence ends with its own (per stream), and the last replay
launched, cut at the window's end, to the one graph whose sequence begins with its own; where two
graphs fit, neither is chosen (the note says so).  No I/O: pure functions over the linked model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ..trace.model import TraceModel

#: Runtime/driver calls that launch a graph (``cudaGraphLaunch``, ``hipGraphLaunch``,
#: ``cuGraphLaunch`` and their per-thread-stream variants).
GRAPH_LAUNCH = r"^(cuda|hip|cu)GraphLaunch"
#: How a replay joined its graph (``partial`` column): the whole graph, or the window cut it.
FULL, SUFFIX, PREFIX = "full", "suffix", "prefix"

#: One row per replayed GPU event: ``gpu_row`` (its row in ``model.gpu``: its name and times are
#: there), the ``replay``, its ``graph`` and ``node`` (position in the graph's node order).
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "gpu_row": pl.Int64(),
    "replay": pl.Int64(),
    "graph": pl.Int64(),
    "node": pl.Int64(),
}


@dataclass
class Replays:
    """The graph replays of one trace (see the module's docstring).

    ``events``: :data:`EVENT_SCHEMA`.  ``replays``: one row per replay (``replay``, ``graph``,
    ``launch_row``: the graph launch call, null for a partial replay at the window's start,
    ``partial``: :data:`FULL`, :data:`SUFFIX` or :data:`PREFIX`, ``start``, ``events``).
    ``nodes``: one row per (``graph``, ``node``): ``name``, ``kind``, ``stream`` (the stream id
    in the replays that define it), ``lane`` (the stream's rank in the graph), ``position`` (in
    its lane).  ``by_id``: graphs identified by Kineto's ``graph id`` rather than by names.
    ``notes``: per graph (or -1 for partial replays joined to none), why something is not known.
    """

    events: pl.DataFrame
    replays: pl.DataFrame
    nodes: pl.DataFrame
    by_id: bool = False
    notes: dict[int, list[str]] = field(default_factory=dict)

    @property
    def graphs(self) -> list[int]:
        """The graph numbers, in the order of their first replay."""
        return [int(g) for g in self.nodes["graph"].unique(maintain_order=True).to_list()]

    def node_sequence(self, graph: int) -> pl.DataFrame:
        """The nodes of ``graph`` in order (``node``, ``name``, ``kind``, ``stream``, ``lane``, ``position``)."""
        return self.nodes.filter(pl.col("graph") == graph).sort("node")


def graph_launch_rows(model: TraceModel) -> pl.Series:
    """The host rows of graph launch calls (runtime or driver)."""
    host = model.host
    calls = host.filter(pl.col("kind").is_in(["runtime", "driver"])).select("row", "name")
    return calls.filter(pl.col("name").str.contains(GRAPH_LAUNCH))["row"]


def has_replays(model: TraceModel) -> bool:
    """Whether the trace holds any graph replay (a graph launch, or a partial replay)."""
    if graph_launch_rows(model).len():
        return True
    return bool(_orphans(model.gpu).height)


def _orphans(gpu: pl.DataFrame) -> pl.DataFrame:
    """GPU rows (``gpu_row``, ``correlation``) with no launch call in the trace whose correlation
    two or more such events share (a partial replay)."""
    unlaunched = gpu.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("gpu_row"), "correlation", "launch_row"
    ).filter(pl.col("launch_row").is_null() & pl.col("correlation").is_not_null())
    return unlaunched.filter(pl.len().over("correlation") >= 2).select("gpu_row", "correlation")


def find_replays(model: TraceModel, ids: pl.DataFrame | None = None) -> Replays:
    """The replays, graphs and nodes of a trace (``ids``: per ``model.gpu`` row, ``graph_id`` and
    ``graph_node_id`` as Kineto wrote them, when the trace has any)."""
    gpu = model.gpu
    launches = graph_launch_rows(model)
    launched = (
        gpu.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("gpu_row"), "launch_row")
        .filter(pl.col("launch_row").is_in(launches.implode()))
        .select("gpu_row", pl.col("launch_row").alias("key"), pl.lit(False).alias("orphan"))
    )
    orphans = _orphans(gpu).select("gpu_row", pl.col("correlation").alias("key"), pl.lit(True).alias("orphan"))
    picked = pl.concat([launched, orphans])
    # Each event's columns gathered by row (no join), the texts as categorical codes: the sorts and
    # joins below then move numbers, not kernel names (100,000 replays are millions of events).
    columns = gpu.select(
        pl.col("name").cast(pl.Categorical),
        pl.col("kind").cast(pl.String).cast(pl.Categorical),
        pl.col("stream").fill_null(-1),
        "ts",
        "launch_row",
    )
    events = pl.concat([picked, columns[picked["gpu_row"]]], how="horizontal")
    if ids is not None:
        events = pl.concat([events, ids[picked["gpu_row"]]], how="horizontal")
    return _identify(events, ids is not None)


def _identify(events: pl.DataFrame, with_ids: bool) -> Replays:
    """Number the replays, order their nodes, and group them into graphs."""
    if events.height == 0:
        empty = pl.DataFrame(schema=EVENT_SCHEMA)
        return Replays(empty, _empty_replays(), _empty_nodes())
    # Replays numbered by their first event; events ordered per stream (lane), by start.
    replay_order = (
        events.group_by("orphan", "key")
        .agg(pl.col("ts").min().alias("start"), pl.len().alias("events"), pl.col("launch_row").first())
        .sort("start", "key")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("replay"))
    )
    events = (
        events.join(replay_order.select("orphan", "key", "replay"), on=["orphan", "key"])
        .sort("replay", "stream", "ts", "gpu_row")
        .with_columns(
            (pl.col("stream").rank("dense").over("replay") - 1).cast(pl.Int64).alias("lane"),
        )
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("replay", "lane").alias("position"))
        .with_columns((pl.col("lane") * (1 << 32) + pl.col("name").to_physical().cast(pl.Int64)).alias("token"))
    )
    if with_ids and _ids_usable(events):
        return _identify_by_id(events, replay_order)
    sequences = (
        events.group_by("replay", maintain_order=True)
        .agg(pl.col("token"))
        .join(replay_order.select("replay", "orphan", "start"), on="replay")
    )
    # Only a stream's first replay can have been running when the window opened (a stream runs one
    # replay at a time): an unlaunched replay after it on every one of its streams is whole (its launch
    # is missing, as in a GPU-only profile), not cut.  So at most one cut replay per stream is fitted.
    first_on_stream = events.group_by("stream").agg(pl.col("replay").sort_by("ts", "gpu_row").first())["replay"]
    cut_at_start = sequences.filter(pl.col("orphan") & pl.col("replay").is_in(first_on_stream.implode()))
    whole = sequences.filter(~pl.col("replay").is_in(cut_at_start["replay"].implode()))
    notes: dict[int, list[str]] = {}
    offsets: dict[int, dict[int, int]] = {}  # replay -> its lane -> first position in the graph's lane
    graphs, members = _number_graphs(whole, drop=None)
    lanes = _graph_lanes(events, graphs)
    cut_short = _cut_at_end(events, whole, graphs, lanes)
    if cut_short is not None:  # the last launched replay: the window's end cut it
        graphs, members = _number_graphs(whole, drop=cut_short)
        lanes = _graph_lanes(events, graphs)
    assign = dict(zip(members["replay"].to_list(), members["graph"].to_list(), strict=True))
    partial = dict.fromkeys(assign, FULL)
    cuts = [(cut_short, True)] if cut_short is not None else []
    cuts += [(int(replay), False) for replay in cut_at_start["replay"].to_list()]
    # A first replay that is a whole graph's node sequence exactly is that graph's, whole.
    equal = cut_at_start.join(graphs.select("token", "graph"), on="token", how="inner")
    for replay, graph in equal.select("replay", "graph").iter_rows():
        assign[int(replay)], partial[int(replay)] = int(graph), FULL
    alone = []
    for replay, at_start in cuts:
        if replay in assign and partial.get(replay) == FULL and not at_start:
            continue
        fitted = _fit(events, replay, lanes, at_start=at_start)
        if fitted is None:
            alone.append(replay)
            continue
        assign[replay], offsets[replay] = fitted
        partial[replay] = PREFIX if at_start else SUFFIX
    for replay in alone:  # a graph of its own, known only by its cut replay
        graph = graphs.height
        notes[graph] = [_unjoined_note(events, replay, lanes)]
        assign[replay], partial[replay] = graph, PREFIX if replay == cut_short else SUFFIX
        alone_graph = pl.DataFrame({"first": [replay], "graph": [graph]}, schema={"first": pl.Int64, "graph": pl.Int64})
        graphs = pl.concat([graphs.select("first", "graph"), alone_graph])
    nodes = _node_frame(events, graphs)
    placed = _place(events, assign, offsets, lanes).join(
        nodes.select("graph", "lane", "position", "node"), on=["graph", "lane", "position"], how="left"
    )
    replays = replay_order.select(
        "replay",
        pl.col("replay").replace_strict(assign, default=None, return_dtype=pl.Int64).alias("graph"),
        pl.when(pl.col("orphan")).then(None).otherwise(pl.col("launch_row")).alias("launch_row"),
        pl.col("replay").replace_strict(partial, default=SUFFIX, return_dtype=pl.String).alias("partial"),
        "start",
        pl.col("events").cast(pl.Int64),
    )
    return Replays(placed.select(EVENT_SCHEMA.keys()).cast(pl.Schema(EVENT_SCHEMA)), replays, nodes, False, notes)


def _ids_usable(events: pl.DataFrame) -> bool:
    """Whether Kineto's ids name every replayed event's graph and node, each node once per replay
    (a missing ``graph node id`` dropped that event's time; one repeated merged two kernels under
    one node): else the graphs are found by their node sequences, as without ids."""
    if not (events["graph_id"].is_not_null().all() and events["graph_node_id"].is_not_null().all()):
        return False
    return events.select(pl.struct("replay", "graph_node_id").is_unique().all()).item() is True


def _identify_by_id(events: pl.DataFrame, replay_order: pl.DataFrame) -> Replays:
    """Graphs and nodes by Kineto's ``graph id`` and ``graph node id`` (numbered in order of first replay)."""
    graph_numbers = (
        events.group_by("graph_id").agg(pl.col("ts").min().alias("first")).sort("first", "graph_id")
    ).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("graph"))
    events = events.join(graph_numbers.select("graph_id", "graph"), on="graph_id")
    node_ids = events.filter(pl.col("graph_node_id").is_not_null())
    nodes = (
        node_ids.sort("replay", "lane", "position")
        .group_by("graph", "graph_node_id", maintain_order=True)
        .agg(
            pl.col("name").first(),
            pl.col("kind").first(),
            pl.col("stream").first(),
            pl.col("lane").first(),
            pl.col("position").first(),
        )
        .sort("graph", "lane", "position", "graph_node_id")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("graph").alias("node"))
    )
    placed = events.join(nodes.select("graph", "graph_node_id", "node"), on=["graph", "graph_node_id"], how="left")
    per_replay = placed.group_by("replay").agg(pl.col("graph").first())
    replays = (
        replay_order.join(per_replay, on="replay")
        .select(
            "replay",
            "graph",
            pl.when(pl.col("orphan")).then(None).otherwise(pl.col("launch_row")).alias("launch_row"),
            pl.when(pl.col("orphan")).then(pl.lit(SUFFIX)).otherwise(pl.lit(FULL)).alias("partial"),
            "start",
            pl.col("events").cast(pl.Int64),
        )
        .sort("replay")
    )
    node_frame = nodes.select(
        "graph", "node", pl.col("name").cast(pl.String), pl.col("kind").cast(pl.String), "stream", "lane", "position"
    )
    return Replays(placed.select(EVENT_SCHEMA.keys()).cast(pl.Schema(EVENT_SCHEMA)), replays, node_frame, True, {})


def _graph_lanes(events: pl.DataFrame, graphs: pl.DataFrame) -> dict[int, dict[int, list[str]]]:
    """Per graph, per stream id, the node names of its first replay's lane on that stream."""
    first = events.join(graphs.select(pl.col("first").alias("replay"), "graph"), on="replay")
    lanes: dict[int, dict[int, list[str]]] = {}
    for (graph, stream), group in first.sort("position").group_by("graph", "stream", maintain_order=True):
        lanes.setdefault(int(graph), {})[int(stream)] = group["name"].to_list()
    return lanes


def _fit(
    events: pl.DataFrame, replay: int, lanes: dict[int, dict[int, list[str]]], at_start: bool
) -> tuple[int, dict[int, int]] | None:
    """The one graph whose lanes begin (``at_start``: strictly longer) or end with this replay's,
    stream by stream, and the position each of the replay's lanes starts at; None if none or several."""
    mine = events.filter(pl.col("replay") == replay).sort("lane", "position")
    streams = {int(s): g["name"].to_list() for (s,), g in mine.group_by("stream", maintain_order=True)}
    lane_of = {int(s): int(lane) for s, lane in mine.select("stream", "lane").unique().iter_rows()}
    found = []
    for graph, graph_lanes in lanes.items():
        offsets = {}
        for stream, names in streams.items():
            full = graph_lanes.get(stream)
            if full is None or len(full) < len(names):
                break
            if at_start and full[: len(names)] == names:
                offsets[lane_of[stream]] = 0
            elif not at_start and full[len(full) - len(names) :] == names:
                offsets[lane_of[stream]] = len(full) - len(names)
            else:
                break
        else:
            if not at_start or any(len(graph_lanes[s]) > len(n) for s, n in streams.items()):
                found.append((graph, offsets))
    return found[0] if len(found) == 1 else None


def _number_graphs(whole: pl.DataFrame, drop: int | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The graphs of the launched replays (but replay ``drop``): one per distinct node sequence
    (``token`` list: lane and name of each node), numbered in order of first replay (``graph``,
    ``first``, ``count``, ``token``); and each replay's graph (``replay``, ``graph``)."""
    kept = whole if drop is None else whole.filter(pl.col("replay") != drop)
    graphs = (
        kept.group_by("token", maintain_order=True)
        .agg(pl.col("replay"), pl.col("replay").first().alias("first"), pl.len().alias("count"))
        .sort("first")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("graph"))
    )
    members = graphs.select("replay", "graph").explode("replay")
    return graphs.drop("replay"), members


def _cut_at_end(
    events: pl.DataFrame, whole: pl.DataFrame, graphs: pl.DataFrame, lanes: dict[int, dict[int, list[str]]]
) -> int | None:
    """The last launched replay, if its node sequence is its own and begins exactly one other
    graph's: the window's end cut it short."""
    if graphs.height < 2:
        return None
    last = int(whole.sort("start")["replay"][-1])
    own = graphs.filter(pl.col("first") == last)
    if own.height != 1 or own["count"].item() != 1:
        return None
    others = {g: lanes[g] for g in lanes if g != own["graph"].item()}
    return last if _fit(events, last, others, at_start=True) is not None else None


def _unjoined_note(events: pl.DataFrame, replay: int, lanes: dict[int, dict[int, list[str]]]) -> str:
    """Why a graph is known only by one replay the window cut (at its start or its end)."""
    count = events.filter(pl.col("replay") == replay).height
    if not lanes:
        return (
            f"known only by a replay the profiling window cut ({count} GPU events): its nodes are a part of the graph"
        )
    return (
        f"known only by a replay the profiling window cut ({count} GPU events), which ends (or begins) no other "
        "graph's node sequence, or several: its nodes are a part of the graph"
    )


def _place(
    events: pl.DataFrame,
    assign: dict[int, int],
    offsets: dict[int, dict[int, int]],
    lanes: dict[int, dict[int, list[str]]],
) -> pl.DataFrame:
    """Each event with its ``graph``, and its ``lane`` and ``position`` as numbered in that graph: a
    whole replay's are its own; a partial replay's lanes start further in (``offsets``) and are
    renumbered by the graph's streams (it may miss a stream entirely).  Only the partial replays'
    few events go through the small table of shifts."""
    graph_of = pl.DataFrame(
        {"replay": list(assign), "graph": list(assign.values())}, schema={"replay": pl.Int64, "graph": pl.Int64}
    )
    shifts = [
        (replay, stream, sorted(lanes[assign[replay]]).index(stream), lane_offsets.get(lane, 0))
        for replay, lane_offsets in offsets.items()
        for stream, lane in events.filter(pl.col("replay") == replay).select("stream", "lane").unique().iter_rows()
    ]
    shift = pl.DataFrame(
        shifts,
        schema={"replay": pl.Int64, "stream": pl.Int64, "graph_lane": pl.Int64, "offset": pl.Int64},
        orient="row",
    )
    return (
        events.join(graph_of, on="replay", how="left")
        .join(shift, on=["replay", "stream"], how="left")
        .with_columns(
            pl.coalesce("graph_lane", "lane").alias("lane"),
            (pl.col("position") + pl.col("offset").fill_null(0)).alias("position"),
        )
    )


def _node_frame(events: pl.DataFrame, graphs: pl.DataFrame) -> pl.DataFrame:
    """The nodes of each graph, from its first replay: numbered lane by lane, in order."""
    if graphs.height == 0:
        return _empty_nodes()
    first = events.join(graphs.select(pl.col("first").alias("replay"), "graph"), on="replay")
    return (
        first.sort("graph", "lane", "position")
        .with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over("graph").alias("node"),
            pl.col("name").cast(pl.String),
            pl.col("kind").cast(pl.String),
        )
        .select("graph", "node", "name", "kind", "stream", "lane", "position")
    )


def _empty_nodes() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "graph": pl.Int64,
            "node": pl.Int64,
            "name": pl.String,
            "kind": pl.String,
            "stream": pl.Int64,
            "lane": pl.Int64,
            "position": pl.Int64,
        }
    )


def _empty_replays() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "replay": pl.Int64,
            "graph": pl.Int64,
            "launch_row": pl.Int64,
            "partial": pl.String,
            "start": pl.Float64,
            "events": pl.Int64,
        }
    )
