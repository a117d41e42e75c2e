"""The critical path of a step: the longest chain of dependent work from the step's start to its end.

The dependency graph follows Holistic Trace Analysis' lightweight model (HTA 0.5,
``critical_path_analysis``), so that its figures can be checked against HTA's; the rules and
where profview departs from HTA are in docs/critical_path.md.  In short, every event is two
nodes (its start and its end) and the edges are:

* **operator**: along each host thread, from one start/end point to the next inside a top-level
  operator (``cpu_op``, runtime and driver calls; annotations are not nodes), weighted by the time
  between them and attributed to the innermost event open over it; the time inside a
  synchronising call (:data:`HTA_BLOCKING`, or under the default rules only the calls that did
  wait) weighs nothing;
* **dependency**: from the end of a top-level operator to the start of the next one on its
  thread, weightless (host idle time is never on the path);
* **kernel**: from a GPU event's start to its end, weighted by its duration;
* **launch delay**: from a launching runtime call's start to its GPU work's start, when the
  stream was idle at launch (HTA's queue-length rule, :func:`_queue_lengths`; by default, when
  the launch came after the previous work on the stream ended);
* **kernel-kernel delay**: otherwise, from the previous GPU event on the same stream to this one;
* **sync**: from the GPU work a host call waited for to the call's end, and from GPU work on one
  stream to the next GPU work of another stream that waited for it (``cudaStreamWaitEvent``);
  weightless;
* **GPU queue wait** (default rules): from a launching call's start to its GPU work's start when
  the work was queued behind earlier GPU work on its stream that is not in the window's graph (a
  replay launched while the previous step's work still ran): the delay is the GPU's, bound by
  ``gpu_compute_bound``, not launch overhead (issue 40); and the delay of work launched by a
  blocking copy or sync (:data:`WAITING_CALLS`: ``cudaMemcpy``, ``hipMemcpyWithStream``, …) that
  ran while the call waited for it (it ended before the call returned) is that call's own host
  time (``cpu_bound``, named by the call), not launch overhead.

With ``within_step`` (default rules) no path leaves its window: an edge counts only the part of
its time before the window's end, so a step's path never exceeds the step's span.

The critical path is the longest path through this graph (a DAG: every edge goes forward in
time); each edge on it is attributed to one ``bound_by`` kind (:data:`BOUNDS`).  Pure functions
over the frames of :class:`~profview.analysis.trace.model.TraceModel`; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ...frames import PATH_BOUNDS
from ..trace.calltree import subtree_mask
from ..trace.model import TraceModel
from ..trace.runtime_calls import BLOCKING_CALLS

if TYPE_CHECKING:
    import numpy as np
else:  # NumPy on first use: the viewer's first screen needs none (profview.lazy_numpy)
    from ... import lazy_numpy as np

#: Edge kinds (HTA's CPEdgeType), as stored in :attr:`PathGraph.kind`.
OPERATOR, DEPENDENCY, LAUNCH, KERNEL_GAP, SYNC, QUEUE = range(6)
EDGE_KINDS = ("operator", "dependency", "launch_delay", "kernel_kernel_delay", "sync", "gpu_queue_wait")
BOUNDS = PATH_BOUNDS  # what an edge on the path is bound by (frames.PATH_BOUNDS)
#: Runtime calls whose own time HTA 0.5 never puts on the path (it treats them as waits).
HTA_BLOCKING = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventQuery",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
)
#: Host calls that may wait for GPU work (the default rules: a wait only if some GPU work ended
#: while the call was running).
WAITING_CALLS = BLOCKING_CALLS
#: Runtime calls that HTA's queue-length rule counts as launches (others, ``cuLaunchKernelEx``
#: among them, launch GPU work that the rule never sees).
HTA_LAUNCH_CALLS = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)
#: A ``cudaStreamWaitEvent`` makes the next GPU work launched after it wait for the GPU work
#: launched before the ``cudaEventRecord`` that preceded it on the same thread.
RECORD_CALLS = ("cudaEventRecord", "cudaEventRecordWithFlags", "hipEventRecord", "hipEventRecordWithFlags")
WAIT_EVENT_CALLS = ("cudaStreamWaitEvent", "hipStreamWaitEvent")
DATALOADER_RANGE = r"^enumerate\(DataLoader\)"


@dataclass(frozen=True)
class PathRules:
    """Which variant of the model to build (see docs/critical_path.md).

    ``whole_us``: round every event to whole microseconds as HTA does (start up, end down);
    ``blocking``: the calls whose own time weighs nothing — HTA's fixed list, or (None) only a
    call during which some GPU work ended; ``infer_sync``: sync edges from runtime calls (HTA
    only reads Kineto's ``cuda_sync`` events, which traces rarely hold); ``data_loading``: host time
    under ``enumerate(DataLoader)`` is ``data_loading``, not ``cpu_bound`` (HTA 0.5 has no such kind);
    ``last_arrival``: GPU work depends on whichever of its launch, the previous work on its stream
    and the work it waited for was ready last (HTA: a launch delay only when the stream's queue
    was empty at the launch and stayed so until the work started, else the previous work).
    """

    whole_us: bool
    blocking: tuple[str, ...] | None
    infer_sync: bool
    data_loading: bool
    last_arrival: bool
    name: str
    #: Count only the time before the window's end (a step's path never exceeds its span), and
    #: call the wait of work queued behind earlier GPU work outside the window the GPU's.
    within_step: bool = False


HTA_RULES = PathRules(
    whole_us=True, blocking=HTA_BLOCKING, infer_sync=False, data_loading=False, last_arrival=False, name="hta"
)
PROFVIEW_RULES = PathRules(
    whole_us=False,
    blocking=None,
    infer_sync=True,
    data_loading=True,
    last_arrival=True,
    name="profview",
    within_step=True,
)
RULES = {rules.name: rules for rules in (PROFVIEW_RULES, HTA_RULES)}


@dataclass
class PathGraph:
    """The dependency graph of one or more windows (steps), as flat arrays.

    Events are host rows (``event < n_host``: ``model.host`` row ``host_rows[event]``) and GPU
    rows (``model.gpu`` row ``gpu_rows[event - n_host]``); each has a start node ``2e`` and an end
    node ``2e + 1``.  Edge ``k`` runs ``src[k] → dst[k]`` with ``weight[k]`` µs (``reported[k]``:
    as the rules report it, see :func:`build_graph`), ``kind[k]``
    (:data:`EDGE_KINDS`), attributed to event ``event[k]`` (-1: none) and bound by
    ``bound[k]`` (index into :data:`BOUNDS`, -1: weightless).  ``window[e]`` is the window an
    event belongs to.
    """

    host_rows: np.ndarray
    gpu_rows: np.ndarray
    start: np.ndarray
    end: np.ndarray
    window: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    reported: np.ndarray
    kind: np.ndarray
    event: np.ndarray
    bound: np.ndarray
    windows: int

    @property
    def n_host(self) -> int:
        return len(self.host_rows)


@dataclass
class PathResult:
    """The critical path of each window: its edges in order (``edges[w]``, indices into the graph's
    edge arrays) and its length in µs (``length[w]``, the sum of its reported weights)."""

    graph: PathGraph
    edges: list[np.ndarray]
    length: np.ndarray


def _times(frame: pl.DataFrame, whole_us: bool) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in µs of a frame's events, rounded as HTA does when ``whole_us``."""
    ts = frame["ts"].to_numpy().astype(np.float64)
    end = ts + frame["dur"].to_numpy().astype(np.float64)
    if whole_us:
        return np.ceil(ts), np.floor(end)
    return ts, end


def build_graph(
    model: TraceModel,
    windows: list[tuple[float, float]],
    rules: PathRules = PROFVIEW_RULES,
    comm: np.ndarray | None = None,
    limits: list[tuple[float, float]] | None = None,
) -> PathGraph:
    """The dependency graph of each host window ``(start, end)`` in µs (a step's host range).

    A window holds the host events (operators, runtime and driver calls) that start in it and the
    GPU work launched by those calls.  ``comm``: per ``model.gpu`` row, whether it is a collective.
    ``limits``: per window, the step's span ``(start, end)`` (its GPU work included: the steps
    view's window); with ``rules.within_step`` an edge counts only its time inside it (default:
    the host window).
    """
    host, gpu = model.host, model.gpu
    h_start, h_end = _times(host, rules.whole_us)
    lo = np.array([w[0] for w in windows], dtype=np.float64)
    hi = np.array([w[1] for w in windows], dtype=np.float64)
    if rules.whole_us:
        lo, hi = np.ceil(lo), np.floor(hi)
    order = np.argsort(lo, kind="stable")
    h_window = _window_of(h_start, lo[order], hi[order], order)
    kind = host["kind"].cast(pl.String)
    is_node = kind.is_in(["cpu_op", "runtime", "driver"]).to_numpy() & (h_end > h_start)
    h_sel = np.flatnonzero(is_node & (h_window >= 0))
    # GPU work whose launching call is a node of some window.
    launch = gpu["launch_row"].fill_null(-1).to_numpy().astype(np.int64)
    g_start, g_end = _times(gpu, rules.whole_us)
    launched = launch >= 0
    node_of_window = np.full(host.height, -1, dtype=np.int64)
    node_of_window[h_sel] = h_window[h_sel]
    g_window = np.where(launched, node_of_window[np.where(launched, launch, 0)], -1)
    g_sel = np.flatnonzero(g_window >= 0)

    n_host = len(h_sel)
    start = np.concatenate([h_start[h_sel], g_start[g_sel]])
    end = np.concatenate([h_end[h_sel], g_end[g_sel]])
    window = np.concatenate([h_window[h_sel], g_window[g_sel]])
    names = host["name"]
    host_event = np.full(host.height, -1, dtype=np.int64)
    host_event[h_sel] = np.arange(n_host)

    edges: list[tuple[np.ndarray, ...]] = []
    g_stream = gpu["stream"].fill_null(-1).to_numpy()[g_sel]
    g_launch = start[host_event[launch[g_sel]]]  # when each GPU event's launching call started
    waits = _host_waits(rules, names, h_sel, start, end, window, g_launch) if rules.infer_sync else (_none(), _none())
    if rules.blocking is not None:
        blocking = _named(names, h_sel, rules.blocking)
    else:  # only a call that did wait for GPU work
        blocking = np.zeros(n_host, dtype=bool)
        blocking[waits[1]] = True
    edges.append(_host_edges(host, model.tree.parent, h_sel, start, end, window, blocking, host_event))
    waited = (
        _stream_waits(host, names, h_sel, g_sel, launch, start, end, window, g_stream)
        if rules.infer_sync
        else np.full(len(g_sel), -1, dtype=np.int64)
    )
    edges.extend(_gpu_edges(model, rules, h_sel, g_sel, start, end, launch, host_event, names, window, waited))
    sync_src, sync_dst = waits  # GPU end → the waiting call's end
    n_sync = len(sync_src)
    edges.append((2 * sync_src + 1, 2 * sync_dst + 1, np.zeros(n_sync), _filled(n_sync, SYNC), _none(n_sync)))
    src, dst, weight, kinds, event = (np.concatenate(parts) for parts in zip(*edges, strict=True))
    if rules.within_step and len(src):  # only the time inside the step's span counts
        node_time = np.stack([start, end], axis=1).reshape(-1)
        span = np.asarray(limits if limits is not None else windows, dtype=np.float64).reshape(-1, 2)
        edge_window = window[src // 2]
        inside = np.minimum(node_time[dst], span[edge_window, 1]) - np.maximum(node_time[src], span[edge_window, 0])
        weight = np.minimum(weight, np.maximum(inside, 0.0))
    # Clock skew, or HTA's rounding (a 0.4 µs kernel lasts -1 µs), gives negative weights: the path
    # is found with them at 0; HTA still reports them as they were (its breakdown sums to less).
    reported = weight if rules.whole_us else np.maximum(weight, 0.0)
    weight = np.maximum(weight, 0.0)
    is_comm = np.zeros(len(g_sel), dtype=bool) if comm is None else np.asarray(comm, dtype=bool)[g_sel]
    is_loading = np.zeros(n_host, dtype=bool)
    if rules.data_loading:
        loading = (kind == "user_annotation") & names.str.contains(DATALOADER_RANGE)
        loaders = np.flatnonzero(loading.fill_null(False).to_numpy())
        is_loading = subtree_mask(model.tree, loaders)[h_sel]
    bound = _bounds(kinds, event, n_host, is_comm, is_loading)
    return PathGraph(h_sel, g_sel, start, end, window, src, dst, weight, reported, kinds, event, bound, len(windows))


def _window_of(ts: np.ndarray, lo: np.ndarray, hi: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per time, the window (an index into the unsorted windows) whose [lo, hi] holds it, or -1."""
    at = np.searchsorted(lo, ts, side="right") - 1
    inside = (at >= 0) & (ts <= hi[np.clip(at, 0, None)])
    return np.where(inside, order[np.clip(at, 0, None)], -1)


def _host_edges(
    host: pl.DataFrame,
    parent: np.ndarray,
    h_sel: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    window: np.ndarray,
    blocking: np.ndarray,
    host_event: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """Operator and dependency edges along each host thread of each window.

    The start and end points of a thread's events, in time order (nesting order at equal times:
    an end before a start, the longer of two starts first, the shorter of two ends first), are
    chained; a point where no event is open links to the next with a weightless dependency edge.
    """
    n = len(h_sel)
    if n == 0:
        return _no_edges()
    thread = _threads(host, h_sel)
    events = np.arange(n)
    dur = end[:n] - start[:n]
    is_end = np.concatenate([np.zeros(n, dtype=np.int8), np.ones(n, dtype=np.int8)])
    ev = np.concatenate([events, events])
    time = np.concatenate([start[:n], end[:n]])
    # At equal times an end goes first; starts: longer first, then earlier row; ends: shorter
    # first, then later row (HTA's call-stack order).
    second = np.where(is_end == 1, np.concatenate([dur, dur]), -np.concatenate([dur, dur]))
    third = np.where(is_end == 1, -ev, ev)
    key_window = np.concatenate([window[:n], window[:n]])
    key_thread = np.concatenate([thread, thread])
    order = np.lexsort((third, second, 1 - is_end, time, key_thread, key_window))
    p_ev, p_end, p_time = ev[order], is_end[order], time[order]
    same = (key_window[order][1:] == key_window[order][:-1]) & (key_thread[order][1:] == key_thread[order][:-1])
    depth = np.cumsum(np.where(p_end == 1, -1, 1))
    # Depth restarts per (window, thread): subtract the running depth at each group's start.
    group_start = np.concatenate([[True], ~same])
    base = np.maximum.accumulate(np.where(group_start, np.arange(len(depth)), 0))
    depth = depth - np.where(base > 0, depth[base - 1], 0)
    a, b = np.arange(len(order) - 1), np.arange(1, len(order))
    keep = same
    a, b = a[keep], b[keep]
    top_gap = (p_end[a] == 1) & (depth[a] == 0)
    src = 2 * p_ev[a] + p_end[a]
    dst = 2 * p_ev[b] + p_end[b]
    weight = np.where(top_gap, 0.0, p_time[b] - p_time[a])
    weight = np.where((p_end[b] == 1) & blocking[p_ev[b]], 0.0, weight)
    kinds = np.where(top_gap, DEPENDENCY, OPERATOR).astype(np.int8)
    # Attribution (HTA): from a start, its event; into an end, that event; end → start, the parent.
    parent_row = parent[h_sel[p_ev[a]]]
    parent_event = np.where(parent_row >= 0, host_event[np.clip(parent_row, 0, None)], -1)
    parent_event = np.where(parent_event >= 0, parent_event, p_ev[a])
    event = np.where(p_end[a] == 0, p_ev[a], np.where(p_end[b] == 1, p_ev[b], parent_event))
    event = np.where(top_gap, -1, event)
    return src, dst, weight, kinds, event.astype(np.int64)


def _queue_lengths(
    model: TraceModel, launch: np.ndarray, names: pl.Series, g_start: np.ndarray, h_start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """HTA's queue lengths, per ``model.gpu`` row: outstanding work on its stream just after its
    launching call, and just after it started (NaN where the rule does not count it).

    A launch (:data:`HTA_LAUNCH_CALLS`) adds one to its work's stream, the work's start takes one
    away; the counts run over the whole trace, per stream number."""
    gpu = model.gpu
    counted = launch >= 0
    counted[counted] = _named(names, launch[counted], HTA_LAUNCH_CALLS)
    rows = np.flatnonzero(counted)
    q_launch = np.full(gpu.height, np.nan)
    q_start = np.full(gpu.height, np.nan)
    if len(rows) == 0:
        return q_launch, q_start
    stream = gpu["stream"].fill_null(-1).to_numpy()[rows]
    time = np.concatenate([h_start[launch[rows]], g_start[rows]])
    step = np.concatenate([np.ones(len(rows)), -np.ones(len(rows))])
    key_stream = np.concatenate([stream, stream])
    # Ties: a launch before the start of work (as the launch must precede it).
    order = np.lexsort((-step, time, key_stream))
    counts = np.cumsum(step[order])
    first = np.concatenate([[True], key_stream[order][1:] != key_stream[order][:-1]])
    base = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    counts = counts - np.where(base > 0, counts[base - 1], 0)
    value = np.empty(len(order))
    value[order] = counts
    q_launch[rows] = value[: len(rows)]
    q_start[rows] = value[len(rows) :]
    return q_launch, q_start


def _gpu_edges(
    model: TraceModel,
    rules: PathRules,
    h_sel: np.ndarray,
    g_sel: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    launch: np.ndarray,
    host_event: np.ndarray,
    names: pl.Series,
    window: np.ndarray,
    waited: np.ndarray,
) -> list[tuple[np.ndarray, ...]]:
    """Kernel, launch-delay, kernel-kernel and stream-wait edges of the selected GPU work.

    Per stream in start order: a launch-delay edge when the stream was idle at launch (queue of
    one after the launch, none after the start), the previous work on the stream ended before the
    launch, and so did any work it waited for; else a kernel-kernel edge from the previous work on
    the stream (when what it waited for ended before that); a stream wait adds a sync edge."""
    gpu = model.gpu
    m = len(g_sel)
    n_host = len(h_sel)
    if m == 0:
        return [_no_edges()]
    h_start_all, _ = _times(model.host, rules.whole_us)
    g_start_all, _ = _times(gpu, rules.whole_us)
    q_launch, q_start = _queue_lengths(model, launch, names, g_start_all, h_start_all)
    events = n_host + np.arange(m)
    g_s, g_e = start[n_host:], end[n_host:]

    launch_start = h_start_all[launch[g_sel]]
    stream = gpu["stream"].fill_null(-1).to_numpy()[g_sel]
    g_window = window[n_host:]
    order = np.lexsort((g_s, stream, g_window))
    same = np.zeros(m, dtype=bool)  # whether the previous in order is on the same stream and window
    same[order[1:]] = (stream[order][1:] == stream[order][:-1]) & (g_window[order][1:] == g_window[order][:-1])
    prev = np.full(m, -1, dtype=np.int64)
    prev[order[1:]] = order[:-1]
    prev = np.where(same, prev, -1)
    prev_end = np.where(prev >= 0, g_e[np.clip(prev, 0, None)], -np.inf)
    # A stream runs one thing at a time: where the record overlaps two (clock rounding), the later
    # one's time on the path starts when the earlier ended (else a path could count it twice).
    run = g_e - (np.maximum(g_s, prev_end) if rules.within_step else g_s)
    kernel = (2 * events, 2 * events + 1, run, np.full(m, OPERATOR, dtype=np.int8), events)

    wait_end = np.where(waited >= 0, g_e[np.clip(waited, 0, None)], -np.inf)
    queued = np.zeros(m, dtype=bool)
    if rules.within_step:  # queued behind GPU work of the stream outside the window (an earlier step's)
        queued = (prev < 0) & (_stream_busy_until(model, rules, g_sel) > launch_start)
    if rules.last_arrival:  # the one predecessor that was ready last
        launch_edge = (launch_start >= prev_end) & (launch_start >= wait_end)
        gap_edge = ~launch_edge & (prev >= 0) & (prev_end >= wait_end)
        waited = np.where(launch_edge | gap_edge, -1, waited)
    else:  # HTA: the queue-length rule, and every wait
        idle = (q_launch[g_sel] == 1) & (q_start[g_sel] == 0)
        launch_edge = idle & (prev_end < launch_start) & (wait_end < launch_start)
        gap_edge = ~launch_edge & (prev >= 0) & (wait_end < prev_end)
    launch_events = host_event[launch[g_sel]]
    # A blocking copy or sync (cudaMemcpy, hipMemcpyWithStream, …) whose work ran while the call
    # waited (ended before the call returned): the delay is the call's own time, not launch overhead.
    blocking_launch = np.zeros(m, dtype=bool)
    if rules.within_step:
        call_end = end[launch_events_of(host_event, launch, g_sel)]
        blocking_launch = _named(names, launch[g_sel], WAITING_CALLS) & (g_e <= call_end)
    parts: list[tuple[np.ndarray, ...]] = [kernel]
    li = np.flatnonzero(launch_edge)
    by_call = blocking_launch[li] & ~queued[li]
    parts.append(
        (
            2 * launch_events[li],
            2 * events[li],
            g_s[li] - launch_start[li],
            np.where(queued[li], QUEUE, np.where(by_call, OPERATOR, LAUNCH)).astype(np.int8),
            np.where(by_call, launch_events[li], -1).astype(np.int64),
        )
    )
    gi = np.flatnonzero(gap_edge)
    parts.append(
        (
            2 * events[prev[gi]] + 1,
            2 * events[gi],
            g_s[gi] - g_e[prev[gi]],
            np.full(len(gi), KERNEL_GAP, dtype=np.int8),
            events[prev[gi]],  # HTA: the gap belongs to the work before it
        )
    )
    wi = np.flatnonzero(waited >= 0)
    parts.append(
        (
            2 * events[waited[wi]] + 1,
            2 * events[wi],
            np.zeros(len(wi)),
            np.full(len(wi), SYNC, dtype=np.int8),
            np.full(len(wi), -1, dtype=np.int64),
        )
    )
    return parts


def launch_events_of(host_event: np.ndarray, launch: np.ndarray, g_sel: np.ndarray) -> np.ndarray:
    """Per selected GPU event, the graph event of its launching call."""
    events: np.ndarray = host_event[launch[g_sel]]
    return events


def _stream_busy_until(model: TraceModel, rules: PathRules, g_sel: np.ndarray) -> np.ndarray:
    """Per selected GPU event, when the GPU work before it on its stream (any window, any launch)
    had all ended (the latest end of the earlier work); -inf for the first work of its stream."""
    g_start, g_end = _times(model.gpu, rules.whole_us)
    frame = pl.DataFrame({"stream": model.gpu["stream"].fill_null(-1), "start": g_start, "end": g_end}).with_row_index(
        "row"
    )
    before = (
        frame.sort("stream", "start", "row")
        .with_columns(pl.col("end").shift(1).cum_max().over("stream").fill_null(-np.inf).alias("before"))
        .sort("row")["before"]
        .to_numpy()
    )
    busy: np.ndarray = before[g_sel]
    return busy


def _threads(host: pl.DataFrame, rows: np.ndarray) -> np.ndarray:
    """A number per host thread (pid, tid), for the rows ``rows``."""
    pairs = host.select("pid", "tid")[pl.Series(rows)]
    thread: np.ndarray = pairs.select(pl.struct("pid", "tid").rank("dense"))[:, 0].to_numpy().astype(np.int64)
    return thread


def _named(names: pl.Series, rows: np.ndarray, choices: tuple[str, ...]) -> np.ndarray:
    """Per row of ``rows``, whether ``names`` there is one of ``choices``."""
    found: np.ndarray = names.gather(rows).is_in(list(choices)).fill_null(False).to_numpy()
    return found


def _none(n: int = 0) -> np.ndarray:
    return np.full(n, -1, dtype=np.int64)


def _filled(n: int, kind: int) -> np.ndarray:
    return np.full(n, kind, dtype=np.int8)


def _no_edges() -> tuple[np.ndarray, ...]:
    return (_none(), _none(), np.zeros(0), _filled(0, OPERATOR), _none())


#: How many earlier-ending GPU events a waiting call looks back over for one launched before it
#: ended (skewed clocks put a later launch's work inside the call; see :func:`_host_waits`).
WAIT_LOOK_BACK = 8


def _host_waits(
    rules: PathRules,
    names: pl.Series,
    h_sel: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    window: np.ndarray,
    g_launch: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Sync edges GPU → host, as (GPU event, host event) arrays: a waiting call
    (:data:`WAITING_CALLS`) waited for the GPU work of its window that ended last while it ran;
    if none ended then, it did not wait.

    Only work launched before the call ended (``g_launch``: its launching call's start) can have
    been waited for: with the GPU's clock 17 µs ahead, a kernel launched after a
    ``cudaDeviceSynchronize`` appeared to end inside it, and the edge back made a cycle that cost
    every step its path (issue 35).  The call takes the latest-ending work that was launched in
    time, among the :data:`WAIT_LOOK_BACK` latest."""
    n_host = len(h_sel)
    calls = np.flatnonzero(_named(names, h_sel, WAITING_CALLS))
    g_end, g_win = end[n_host:], window[n_host:]
    if len(calls) == 0 or len(g_end) == 0:
        return _none(), _none()
    lo = min(float(np.min(g_end)), float(np.min(end[calls])))
    scale = max(float(np.max(g_end)), float(np.max(end[calls]))) - lo + 1.0
    key = g_win * scale + (g_end - lo)
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], window[calls] * scale + (end[calls] - lo), side="right") - 1
    found = np.full(len(calls), -1, dtype=np.int64)
    for back in range(WAIT_LOOK_BACK):
        pos = at - back
        candidate = order[np.clip(pos, 0, None)]
        ended_inside = (pos >= 0) & (g_win[candidate] == window[calls]) & (g_end[candidate] >= start[calls])
        if not ended_inside.any():
            break
        fits = (found < 0) & ended_inside & (g_launch[candidate] <= end[calls])
        found[fits] = candidate[fits]
    ok = found >= 0
    return n_host + found[ok], calls[ok]


def _stream_waits(
    host: pl.DataFrame,
    names: pl.Series,
    h_sel: np.ndarray,
    g_sel: np.ndarray,
    launch: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    window: np.ndarray,
    g_stream: np.ndarray,
) -> np.ndarray:
    """Per selected GPU event, the selected GPU event it waited for through ``cudaStreamWaitEvent``
    (-1: none): the work launched last on the waiting call's thread before the
    ``cudaEventRecord`` that preceded the wait, when the next work launched on that thread after
    the wait runs on another stream (Kineto does not say which event a wait names)."""
    m, n_host = len(g_sel), len(h_sel)
    waited = _none(m)
    waits = np.flatnonzero(_named(names, h_sel, WAIT_EVENT_CALLS))
    records = np.flatnonzero(_named(names, h_sel, RECORD_CALLS))
    if len(waits) == 0 or len(records) == 0 or m == 0:
        return waited
    thread = _threads(host, h_sel)
    group = thread * (int(window.max()) + 2) + window[:n_host] + 1  # (thread, window)
    host_event = np.full(int(h_sel.max()) + 1, -1, dtype=np.int64)
    host_event[h_sel] = np.arange(n_host)
    # Launching calls of selected GPU work, each with its first GPU event (a graph launch has many).
    launchers, first_gpu = np.unique(host_event[launch[g_sel]], return_index=True)
    times = np.concatenate([start[launchers], start[records], start[waits], end[waits]])
    lo, scale = float(times.min()), float(times.max() - times.min()) + 1.0

    def key(items: np.ndarray, time: np.ndarray) -> np.ndarray:
        keys: np.ndarray = group[items] * scale + (time - lo)
        return keys

    l_order = np.argsort(key(launchers, start[launchers]), kind="stable")
    l_key = key(launchers, start[launchers])[l_order]
    r_order = np.argsort(key(records, start[records]), kind="stable")
    r_key = key(records, start[records])[r_order]
    r_at = np.searchsorted(r_key, key(waits, start[waits]), side="right") - 1
    record = records[r_order[np.clip(r_at, 0, None)]]
    s_at = np.searchsorted(l_key, key(record, start[record]), side="left") - 1
    d_at = np.searchsorted(l_key, key(waits, end[waits]), side="left")
    last = len(launchers) - 1
    src_pos = l_order[np.clip(s_at, 0, last)]
    dst_pos = l_order[np.clip(d_at, 0, last)]
    same = group[waits]
    ok = (r_at >= 0) & (group[record] == same) & (s_at >= 0) & (d_at <= last)
    ok &= (group[launchers[src_pos]] == same) & (group[launchers[dst_pos]] == same)
    src_gpu, dst_gpu = first_gpu[src_pos[ok]], first_gpu[dst_pos[ok]]
    # A wait between streams, and one the trace does not contradict (the waiting work started
    # after the work it waited for ended: else the guess named the wrong work).
    g_start, g_end = start[n_host:], end[n_host:]
    plausible = (g_stream[src_gpu] != g_stream[dst_gpu]) & (g_end[src_gpu] <= g_start[dst_gpu])
    src_gpu, dst_gpu = src_gpu[plausible], dst_gpu[plausible]
    return _apply_waits(waited, src_gpu, dst_gpu, end[n_host:])


def _apply_waits(waited: np.ndarray, src: np.ndarray, dst: np.ndarray, g_end: np.ndarray) -> np.ndarray:
    """Set ``waited[dst] = src`` (the latest-ending source where several waits name one event)."""
    order = np.argsort(g_end[src], kind="stable")
    waited[dst[order]] = src[order]
    return waited


def _bounds(
    kinds: np.ndarray,
    event: np.ndarray,
    n_host: int,
    is_comm: np.ndarray,
    is_loading: np.ndarray,
) -> np.ndarray:
    """Per edge, its :data:`BOUNDS` index (-1: weightless kinds, never bound by anything)."""
    bound = np.full(len(kinds), -1, dtype=np.int8)
    on_host = (kinds == OPERATOR) & (event < n_host)
    host_ev = np.clip(event, 0, max(n_host - 1, 0))
    bound[on_host] = np.where(is_loading[host_ev[on_host]], BOUNDS.index("data_loading"), BOUNDS.index("cpu_bound"))
    on_gpu = (kinds == OPERATOR) & (event >= n_host)
    gpu_ev = np.clip(event - n_host, 0, None)
    comm = is_comm[gpu_ev[on_gpu]] if len(is_comm) else np.zeros(int(on_gpu.sum()), dtype=bool)
    bound[on_gpu] = np.where(comm, BOUNDS.index("gpu_communication_bound"), BOUNDS.index("gpu_compute_bound"))
    bound[kinds == KERNEL_GAP] = BOUNDS.index("gpu_kernel_kernel_overhead")
    bound[kinds == LAUNCH] = BOUNDS.index("gpu_kernel_launch_overhead")
    bound[kinds == QUEUE] = BOUNDS.index("gpu_compute_bound")  # the GPU was busy with earlier work
    return bound


class GraphCycle(ValueError):
    """The dependency graph has a cycle (events out of order in the trace): in ``windows`` only,
    for no edge joins two windows."""

    def __init__(self, windows: list[int], nodes: int) -> None:
        self.windows = windows
        super().__init__(f"the dependency graph has a cycle ({nodes} nodes on or after it)")


def longest_paths(graph: PathGraph, weight: np.ndarray | None = None) -> PathResult:
    """The longest path of each window (``weight``: other edge weights, for a what-if).

    One pass in topological order (Kahn's): each node keeps its longest distance from any start
    and the edge that gave it; each window's path ends at its farthest node and is read back."""
    reported = graph.reported if weight is None else weight
    weight = graph.weight if weight is None else weight
    nodes = 2 * len(graph.start)
    src, dst = graph.src, graph.dst
    order = np.argsort(src, kind="stable")
    out_ptr = np.searchsorted(src[order], np.arange(nodes + 1)).tolist()
    out_edges = order.tolist()
    dst_list = dst.tolist()
    w_list = weight.tolist()
    indegree = np.bincount(dst, minlength=nodes).tolist()
    dist = [0.0] * nodes
    best_edge = [-1] * nodes
    ready = [v for v in range(nodes) if indegree[v] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        du = dist[u]
        for k in out_edges[out_ptr[u] : out_ptr[u + 1]]:
            v = dst_list[k]
            candidate = du + w_list[k]
            if candidate > dist[v] or (best_edge[v] < 0 and candidate == dist[v]):
                dist[v] = candidate
                best_edge[v] = k
            indegree[v] -= 1
            if indegree[v] == 0:
                ready.append(v)
    node_window = np.repeat(graph.window, 2)
    if seen < nodes:
        stuck = np.flatnonzero(np.asarray(indegree) > 0)
        raise GraphCycle(sorted(set(node_window[stuck].tolist())), len(stuck))
    dist_arr = np.asarray(dist)
    edges: list[np.ndarray] = []
    length = np.zeros(graph.windows)
    for w in range(graph.windows):
        members = np.flatnonzero(node_window == w)
        if len(members) == 0:
            edges.append(_none())
            continue
        last = int(members[np.argmax(dist_arr[members])])
        path = []
        while best_edge[last] >= 0:
            k = best_edge[last]
            path.append(k)
            last = int(src[k])
        edges.append(np.asarray(path[::-1], dtype=np.int64))
        length[w] = float(reported[edges[-1]].sum())
    return PathResult(graph, edges, length)


def breakdown(result: PathResult, weight: np.ndarray | None = None) -> np.ndarray:
    """µs of each window's path per :data:`BOUNDS` kind, shape (windows, len(BOUNDS))."""
    weight = result.graph.reported if weight is None else weight
    table = np.zeros((result.graph.windows, len(BOUNDS)))
    for w, path in enumerate(result.edges):
        bound = result.graph.bound[path]
        weighted = bound >= 0
        table[w] = np.bincount(bound[weighted], weights=weight[path][weighted], minlength=len(BOUNDS))
    return table
