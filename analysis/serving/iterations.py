"""Serving and decode loops, one row per iteration (a scheduler step, one token's decode).

**Finding the iterations** (the first rule that finds any; ``found_by`` says which):

1. ``regex``: the user's ``--iteration REGEX`` (host operators and annotations whose name it matches);
2. ``annotation``: the frameworks' iteration annotations (:mod:`.names`: vLLM, SGLang,
   ATOM, plain ``prefill``/``decode`` ranges);
3. ``repeated``: the user annotation repeated most often directly inside a ``ProfilerStep`` (at least
   twice in one step: an eager loop's per-token ranges under one step);
4. ``steps``: the ``ProfilerStep`` ranges.

An iteration is the host range of its annotation; a matching range inside another one of the same
thread (SGLang's ``step[DECODE …]`` inside its ``execute_…`` range) is part of the outer iteration.

**GPU work belongs to the iteration that launched it**: the runtime call sharing its correlation
id started inside the iteration's host range (any thread), wherever the GPU ran it (SGLang's
replayed kernels run later, as one deferred burst: sglang #31545).  A CUDA/HIP graph replay counts
in the iteration of its ``cudaGraphLaunch``/``hipGraphLaunch``: every replayed kernel carries that
launch's correlation.  GPU work with no launch in the trace belongs to no iteration.

**Tokens** come from the annotation (``tokens_from`` = ``annotation``), else, for an iteration
whose phase is known, from its first ``aten::embedding`` call: the product of the index tensor's
shape (batch × sequence; ``embedding``); else, for an iteration that replays one CUDA/HIP graph
and calls no embedding itself, from the embedding call the trace recorded while capturing the
graph (between ``…StreamBeginCapture`` and ``…StreamEndCapture``: ``capture``), where every
capture in the trace that embeds gives the same count (a replay runs what was captured, at the
captured shape; captures of several batch sizes could not say which one a replay ran).  An
iteration of unknown phase (a training step) has no tokens: a step's sequence length is not a
number of generated tokens.

The figures (docs/iterations.md has a worked example of each; tests/analysis/serving/test_iterations.py
recomputes each from the raw JSON with tests/serving_witness.py):

* ``host_us``: the annotation's duration; ``start_us`` from the trace's start (as ``steps``);
* ``wall_us``: from the host start to the end of the last GPU work the iteration launched (never
  into the next iteration's window: the next starts no earlier, the steps' rule);
* ``gpu_us``: the summed durations of the GPU work launched inside it (kernels, memcpy, memset);
  ``kernels``: its kernel events; ``launches``: runtime calls in the host range that launched
  recorded GPU work; ``graph_launches``: ``*GraphLaunch`` calls in the host range;
* ``gpu_busy_pct``: the union of the GPU work the iteration launched (the events ``gpu_us`` sums)
  inside its window over ``wall_us``; ``idle_us`` = ``wall_us`` − that union: the time none of its
  own work ran.  GPU work it did not launch (queued before it, or with no launch in the trace) is
  neither busy nor in ``gpu_us``, so the three columns count the same work (busy ≤ ``gpu_us``: a
  union is no longer than the summed durations; the steps view's busy counts all GPU work);
* ``gpu_us_per_token`` = ``gpu_us`` / ``tokens``;
* ``outlier``: ``wall_us`` above median + 3 × 1.4826 × MAD of the iterations of its phase (and 5 %
  above their median: :mod:`~profview.analysis.tables.step_outliers`' rule).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl

from ...frames import MAX_RANK, STEP_NAME, checked_product, count_of
from ..tables.step_outliers import outlier_threshold
from ..trace.communication import merge_intervals
from ..trace.model import OP_LAYER, TraceModel
from .names import IterationName, parse_iteration_name

#: One row per iteration (times in µs).
ITERATION_COLUMNS = (
    "iteration",
    "name",
    "step",
    "phase",
    "requests",
    "tokens",
    "tokens_from",
    "context_tokens",
    "start_us",
    "host_us",
    "wall_us",
    "gpu_us",
    "gpu_busy_pct",
    "idle_us",
    "kernels",
    "launches",
    "graph_launches",
    "gpu_us_per_token",
    "outlier",
    "found_by",
)
#: The operator whose index tensor gives an iteration's tokens when its annotation does not.
EMBEDDING_OP = "aten::embedding"
#: A CUDA/HIP graph replay call (``cudaGraphLaunch``, ``hipGraphLaunch``, versioned names).
GRAPH_LAUNCH = r"GraphLaunch"
#: The annotation formats whose phase is a word in the name (not counts): the tokens may overrule it.
WORD_FORMATS = ("plain", "atom")
#: How often an annotation must repeat inside one ProfilerStep for rule 3.
MIN_REPEATS = 2


@dataclass
class IterationRanges:
    """The host ranges found (``row``, ``name``, ``ts``, ``end``, sorted by ``ts``) and the rule that
    found them (``regex``, ``annotation``, ``repeated`` or ``steps``)."""

    frame: pl.DataFrame
    found_by: str


def find_iterations(model: TraceModel, pattern: str | None = None) -> IterationRanges | None:
    """The iterations of a trace by the rules of the module's docstring (None: none found).

    ``pattern``: a regex (Polars' linear-time engine) that host operator names must match; the
    caller validates it."""
    ops = model.host.filter(pl.col("is_op") & (pl.col("layer") == OP_LAYER)).select("row", "kind", "name", "ts", "end")
    if pattern is not None:
        return _found(model, ops.filter(pl.col("name").str.contains(pattern)), "regex")
    annotations = ops.filter((pl.col("kind") == "user_annotation") & ~pl.col("name").str.contains(STEP_NAME))
    names = annotations["name"].unique()
    known = [n for n in names.to_list() if n is not None and parse_iteration_name(n) is not None]
    if known:
        return _found(model, annotations.filter(pl.col("name").is_in(known)), "annotation")
    steps = ops.filter(pl.col("name").str.contains(STEP_NAME))
    repeated = _repeated_in_steps(model, annotations, steps)
    if repeated is not None:
        return _found(model, annotations.filter(pl.col("name") == repeated), "repeated")
    if steps.height:
        ranges = (
            steps.group_by("name")
            .agg(pl.col("row").min(), pl.col("ts").min(), pl.col("end").max())
            .select("row", "name", "ts", "end")
        )
        return IterationRanges(ranges.sort("ts", "row"), "steps")
    return None


def _found(model: TraceModel, rows: pl.DataFrame, found_by: str) -> IterationRanges | None:
    """The outermost of ``rows`` (a range inside another of them, same thread, is part of it)."""
    if rows.height == 0:
        return None
    rows = rows.sort("row")
    positions = rows["row"].to_numpy()
    reach = np.maximum.accumulate(model.tree.subtree_end[positions])
    inner = np.concatenate([[False], positions[1:] < reach[:-1]])
    outer = rows.filter(pl.Series(~inner))
    return IterationRanges(outer.select("row", "name", "ts", "end").sort("ts", "row"), found_by)


def _repeated_in_steps(model: TraceModel, annotations: pl.DataFrame, steps: pl.DataFrame) -> str | None:
    """The annotation name repeated most often directly inside one ProfilerStep (at least
    :data:`MIN_REPEATS` times in some step), or None."""
    if steps.height == 0 or annotations.height == 0:
        return None
    parents = model.tree.parent[annotations["row"].to_numpy()]
    inside = annotations.with_columns(pl.Series("parent", parents)).filter(
        pl.col("parent").is_in(steps["row"].implode())
    )
    counts = inside.group_by("parent", "name").agg(pl.len().alias("n"), pl.col("ts").min().alias("first"))
    repeated = counts.filter(pl.col("n") >= MIN_REPEATS)
    if repeated.height == 0:
        return None
    best = (
        counts.filter(pl.col("name").is_in(repeated["name"].implode()))
        .group_by("name")
        .agg(pl.col("n").sum(), pl.col("first").min())
        .sort(["n", "first", "name"], descending=[True, False, False])
    )
    return str(best["name"][0])


def iteration_table(model: TraceModel, ranges: IterationRanges) -> pl.DataFrame:
    """One row per iteration (:data:`ITERATION_COLUMNS`; the rules are the module's docstring)."""
    frame = ranges.frame
    starts, ends = frame["ts"].to_numpy().astype(float), frame["end"].to_numpy().astype(float)
    count = len(starts)
    gpu = model.gpu.filter(pl.col("launch_row").is_not_null())
    launch_ts = model.host["ts"].gather(gpu["launch_row"]).to_numpy().astype(float)
    owner = _owner(starts, ends, launch_ts)
    mine = owner >= 0
    owner, gpu = owner[mine], gpu.filter(pl.Series(mine))
    durations = gpu["dur"].to_numpy().astype(float)
    gpu_us = np.bincount(owner, weights=durations, minlength=count)
    kernels = np.bincount(owner[(gpu["kind"] == "kernel").to_numpy()], minlength=count)
    launch_pairs = (
        np.unique(np.stack([owner, gpu["launch_row"].to_numpy()]), axis=1) if len(owner) else np.zeros((2, 0))
    )
    launches = np.bincount(launch_pairs[0].astype(np.int64), minlength=count)
    gpu_end = np.full(count, -np.inf)
    np.maximum.at(gpu_end, owner, gpu["end"].to_numpy().astype(float))
    graph = model.host.filter(pl.col("kind").is_in(["runtime", "driver"]) & pl.col("name").str.contains(GRAPH_LAUNCH))
    graph_owner = _owner(starts, ends, graph["ts"].to_numpy().astype(float))
    graph_launches = np.bincount(graph_owner[graph_owner >= 0], minlength=count)
    window_start, window_end = _windows(starts, np.maximum(ends, gpu_end))
    # Busy is the union of the work gpu_us sums (each event clipped to its iteration's window, so
    # the windows, disjoint, keep each iteration's union apart): GPU work the iteration did not
    # launch (queued before it, or with no launch in the trace) is no busy time of it.
    # Times from the first window's start: an event's end as its start plus its duration, which at
    # the trace's absolute µs (10^12) would round by up to 0.5 ns an event.
    base = float(window_start[0]) if count else 0.0
    lo, hi = window_start - base, window_end - base
    own_start = gpu["ts"].to_numpy().astype(float) - base
    own = pl.DataFrame(
        {
            "ts": np.clip(own_start, lo[owner], hi[owner]),
            "end": np.clip(own_start + durations, lo[owner], hi[owner]),
        }
    )
    busy = _busy(own, lo, hi)
    wall = window_end - window_start
    facts = [parse_iteration_name(str(name)) for name in frame["name"].to_list()]
    phases = [fact.phase if fact else "unknown" for fact in facts]
    tokens: list[int | None] = [fact.tokens if fact else None for fact in facts]
    tokens_from: list[str | None] = ["annotation" if t is not None else None for t in tokens]
    requests: list[int | None] = [fact.requests if fact else None for fact in facts]
    embedded = _embedding_tokens(model, starts, ends)
    captured = _capture_tokens(model)
    for i, (phase, lookup) in enumerate(zip(phases, embedded, strict=True)):
        if tokens[i] is None and phase != "unknown" and lookup is not None:
            tokens[i], tokens_from[i] = lookup[0], "embedding"
            if requests[i] is None:
                requests[i] = lookup[1]
        elif tokens[i] is None and phase != "unknown" and captured is not None and graph_launches[i] == 1:
            tokens[i], tokens_from[i] = captured[0], "capture"
            if requests[i] is None:
                requests[i] = captured[1]
    found_by = phase_from_tokens(facts, phases, tokens, requests, ranges.found_by)
    table = pl.DataFrame(
        {
            "iteration": np.arange(count, dtype=np.int64),
            "name": frame["name"],
            "step": _steps_of(model, starts),
            "phase": phases,
            "requests": requests,
            "tokens": tokens,
            "tokens_from": tokens_from,
            "context_tokens": [fact.context_tokens if fact else None for fact in facts],
            "start_us": np.round(starts - model.span_start, 3),
            "host_us": np.round(ends - starts, 3),
            "wall_us": np.round(wall, 3),
            "gpu_us": np.round(gpu_us, 3),
            "gpu_busy_pct": np.round(np.divide(busy * 100.0, wall, out=np.zeros(count), where=wall > 0), 2),
            "idle_us": np.round(wall - busy, 3),
            "kernels": kernels.astype(np.int64),
            "launches": launches.astype(np.int64),
            "graph_launches": graph_launches.astype(np.int64),
        },
        schema_overrides={
            "requests": pl.Int64,
            "tokens": pl.Int64,
            "tokens_from": pl.String,
            "context_tokens": pl.Int64,
        },
    )
    per_token = pl.when(pl.col("tokens") > 0).then((pl.col("gpu_us") / pl.col("tokens")).round(3))
    table = table.with_columns(per_token.alias("gpu_us_per_token"), pl.Series("found_by", found_by, dtype=pl.String))
    return _with_outliers(table).select(ITERATION_COLUMNS)


def _owner(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per time in ``at``, the iteration whose host range holds it (the latest started), else -1."""
    which = np.searchsorted(starts, at, side="right") - 1
    inside = (which >= 0) & (at <= ends[np.clip(which, 0, None)]) if len(starts) else np.zeros(len(at), dtype=bool)
    return np.where(inside, which, -1).astype(np.int64)


def _windows(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each iteration's window: its start to ``ends``, the next one starting no earlier (steps' rule)."""
    starts, ends = starts.copy(), ends.copy()
    for i in range(len(starts)):
        if i:
            starts[i] = max(starts[i], ends[i - 1])
        ends[i] = max(ends[i], starts[i])
    return starts, ends


def _busy(gpu: pl.DataFrame, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """µs of each window [lo, hi) during which some GPU work (any device, stream, launch) ran."""
    starts, ends = merge_intervals(gpu["ts"].to_numpy().astype(float), gpu["end"].to_numpy().astype(float))
    if not len(starts):
        return np.zeros(len(lo))
    before = np.concatenate([[0.0], np.cumsum(ends - starts)])  # union length before each interval

    def covered(t: np.ndarray) -> np.ndarray:
        which = np.searchsorted(starts, t, side="right") - 1
        safe = np.clip(which, 0, None)
        inside = np.clip(t - starts[safe], 0.0, ends[safe] - starts[safe])
        return np.where(which >= 0, before[safe] + inside, 0.0)

    return np.asarray(covered(hi) - covered(lo))


def _steps_of(model: TraceModel, starts: np.ndarray) -> pl.Series:
    """Per iteration, the ProfilerStep whose host range holds its start (null: none)."""
    steps = (
        model.host.filter(pl.col("is_op") & pl.col("name").str.contains(STEP_NAME))
        .group_by("name")
        .agg(pl.col("ts").min(), pl.col("end").max())
        .with_columns(pl.col("name").str.extract(r"#(\d+)$").cast(pl.Int64).alias("step"))
        .sort("ts")
    )
    owner = _owner(steps["ts"].to_numpy().astype(float), steps["end"].to_numpy().astype(float), starts)
    numbers = steps["step"].to_list()
    return pl.Series("step", [numbers[i] if i >= 0 else None for i in owner], dtype=pl.Int64)


def phase_from_tokens(
    facts: list[IterationName | None],
    phases: list[str],
    tokens: list[int | None],
    requests: list[int | None],
    found_by: str,
) -> list[str]:
    """Decide the phase of word-named iterations by their tokens (``phases`` is changed in place);
    returns each iteration's ``found_by``.

    A ``prefill``/``decode`` word in an annotation (a plain loop's range, ATOM's) is a hint, not a
    fact: an eager loop may call every iteration ``decode_token``, the prompt's included.  The
    evidence is the new tokens per request (``tokens`` ÷ ``requests``: the annotation's counts, or
    the embedding index tensor's batch × sequence).  Where the loop holds both iterations of one new
    token per request and iterations of several, the former are decode and the latter prefill,
    whatever they are called; where every iteration processes one (or every one several: a
    speculative decode, a prefill-only run), the tokens cannot tell and the word stands.  An
    iteration whose word the tokens overrule says both in ``found_by``
    (``annotation; tokens say prefill: 32 per request (named decode)``)."""
    rule = [found_by] * len(phases)
    per_request: dict[int, float] = {}
    for i, fact in enumerate(facts):
        count, many = tokens[i], requests[i]
        if fact is None or fact.format not in WORD_FORMATS or phases[i] not in ("prefill", "decode"):
            continue
        if count is not None and many is not None and many > 0 and count > 0:
            per_request[i] = count / many
    if not (any(v == 1 for v in per_request.values()) and any(v > 1 for v in per_request.values())):
        return rule
    for i, each in per_request.items():
        evidence = "decode" if each == 1 else "prefill"
        if evidence != phases[i]:
            rule[i] = f"{found_by}; tokens say {evidence}: {each:g} per request (named {phases[i]})"
            phases[i] = evidence
    return rule


def _embedding_tokens(model: TraceModel, starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int | None] | None]:
    """Per iteration, batch × sequence of its first embedding call's index tensor and its batch (the
    first dimension of an index tensor of two or more; None for a flat one), or None: no call in
    its host range, or no integer index tensor of known shape."""
    calls = (
        model.host.filter(pl.col("is_op") & (pl.col("name") == EMBEDDING_OP))
        .select("ts", "input_dims", "input_type")
        .sort("ts")
    )
    found: list[tuple[int, int | None] | None] = [None] * len(starts)
    if calls.height == 0:
        return found
    at = np.searchsorted(calls["ts"].to_numpy().astype(float), starts, side="left")
    dims, types, ts = calls["input_dims"].to_list(), calls["input_type"].to_list(), calls["ts"].to_list()
    for i, index in enumerate(at.tolist()):
        if index < calls.height and ts[index] <= ends[i]:
            found[i] = _index_tokens(dims[index], types[index])
    return found


def _capture_tokens(model: TraceModel) -> tuple[int, int | None] | None:
    """The tokens (and batch) of the first embedding call inside each graph capture of the trace,
    where every capture that embeds gives the same; None otherwise (no capture, no embedding in
    one, or captures of different shapes)."""
    from ..graphs.capture import END_CAPTURE
    from ..trace.runtime_calls import BEGIN_CAPTURE

    host = model.host
    calls = host.filter(pl.col("kind").is_in(["runtime", "driver"]))
    begins = calls.filter(pl.col("name").str.contains(BEGIN_CAPTURE)).select("pid", "tid", "ts").sort("ts")
    if begins.height == 0:
        return None
    ends = calls.filter(pl.col("name").str.contains(END_CAPTURE)).select("pid", "tid", "ts", "end").sort("ts")
    embeddings = host.filter(pl.col("is_op") & (pl.col("name") == EMBEDDING_OP)).sort("ts")
    found: set[tuple[int, int | None]] = set()
    for pid, tid, begin in begins.iter_rows():
        closing = ends.filter((pl.col("pid") == pid) & (pl.col("tid") == tid) & (pl.col("ts") >= begin))
        if closing.height == 0:
            continue
        end = float(closing["end"][0])
        inside = embeddings.filter(
            (pl.col("pid") == pid) & (pl.col("tid") == tid) & (pl.col("ts") >= begin) & (pl.col("ts") <= end)
        )
        if inside.height:
            tokens = _index_tokens(inside["input_dims"][0], inside["input_type"][0])
            if tokens is None:
                return None
            found.add(tokens)
    return found.pop() if len(found) == 1 else None


def _index_tokens(dims: str | None, types: str | None) -> tuple[int, int | None] | None:
    """The element count of an embedding's second input (the indices), if it is an integer tensor,
    and its first dimension where it has two or more (the batch: one row of indices per request)."""
    try:
        shapes, kinds = json.loads(dims or "null"), json.loads(types or "null")
    except ValueError:
        return None
    if not (isinstance(shapes, list) and isinstance(kinds, list) and len(shapes) > 1 and len(kinds) > 1):
        return None
    shape, kind = shapes[1], str(kinds[1]).lower()
    if not isinstance(shape, list) or not shape or len(shape) > MAX_RANK:
        return None
    if "int" not in kind and "long" not in kind:
        return None
    elements = checked_product(shape)  # NumPy's product wrapped silently; None past Int64
    if elements is None:
        return None
    return elements, (count_of(shape[0]) if len(shape) >= 2 else None)


def _with_outliers(table: pl.DataFrame) -> pl.DataFrame:
    """``outlier``: ``wall_us`` beyond the outlier threshold of its phase's iterations."""
    thresholds = {
        phase: outlier_threshold(table.filter(pl.col("phase") == phase)["wall_us"])
        for phase in table["phase"].unique().to_list()
    }
    limit = pl.col("phase").replace_strict(
        {p: t for p, t in thresholds.items() if t is not None}, default=None, return_dtype=pl.Float64
    )
    return table.with_columns((pl.col("wall_us") > limit).fill_null(False).alias("outlier"))
