"""The classes of issue 45's adversary, each a property over generated inputs that would have found
its defects (bounded examples, no deadline: CI runs them in seconds).

* **Work linear in the input** (graph alignment): any replay lane and capture made from one another
  by deletions, insertions and substitutions, named or not, on one stream or several.  The banded,
  indexed alignment must give exactly what the whole table gives (a plain dynamic programme here, the
  witness), attribute only launches that fit, never one launch to two nodes, in order within a lane,
  and fill no more cells than its budget.
* **Integers never wrap** (every op model): any ``Input Dims``/``Input type``/``Concrete Inputs`` of
  ints of any size, texts, bools, floats and nestings, through every model the perf model has, is no
  figure or a finite one, never an exception, within bounded memory; any text is a count only as 1 to
  18 ASCII digits, exactly its value.
"""

from __future__ import annotations

import json
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profview.analysis.efficiency.op_models import MODELS, operator_work
from profview.analysis.graphs import align
from profview.analysis.graphs.align import Lane, Template
from profview.frames import INT64_MAX, checked_product, count_of

SOME = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
FEW = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

NAMES = ["gemm", "norm", "add", "copy", "fillBuffer_x"]
KINDS = ["kernel", "kernel", "kernel", "memcpy"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Template, Lane, frozenset[int]]:
    """A lane and a capture derived from it by edits; names kept, dropped or anchored at random."""
    size = draw(st.integers(0, 24))
    kinds = [draw(st.sampled_from(KINDS)) for _ in range(size)]
    names = [draw(st.sampled_from(NAMES)) for _ in range(size)]
    launches = list(zip(kinds, names, strict=True))
    for _ in range(draw(st.integers(0, 6))):
        edit = draw(st.sampled_from(["delete", "insert", "substitute"]))
        at = draw(st.integers(0, max(len(launches) - 1, 0)))
        if edit == "delete" and launches:
            del launches[at]
        elif edit == "insert":
            launches.insert(at, (draw(st.sampled_from(KINDS)), draw(st.sampled_from(NAMES))))
        elif launches:
            launches[at] = (launches[at][0], draw(st.sampled_from(NAMES)))
    named = draw(st.sampled_from(["all", "none", "some"]))
    t_names = [n if named == "all" or (named == "some" and draw(st.booleans())) else None for _k, n in launches]
    anchors = [n if draw(st.integers(0, 9)) == 0 else None for _k, n in launches]
    keys = [(draw(st.sampled_from(["op_a", "op_b"])),) for _ in launches]
    template = Template([k for k, _n in launches], t_names, anchors, keys)
    taken = frozenset(i for i in range(len(launches)) if draw(st.integers(0, 15)) == 0)
    return template, Lane(kinds, names), taken


def reference(template: Template, lane: Lane, taken: frozenset[int]) -> align.Alignment:
    """The rule of :func:`align.align_lane` over the whole table, written plainly (the witness)."""
    n, m = len(template.kinds), len(lane.kinds)
    kinds = [align.node_kind(k, name) for k, name in zip(lane.kinds, lane.names, strict=True)]
    if n == m and not taken and all(align._fits(template, i, kinds[i], lane.names[i]) for i in range(n)):
        return align.Alignment(list(range(m)), [align.POSITION] * m, m)
    if n == 0 or m == 0:
        return align.Alignment([-1] * m, [align.NOT_CAPTURED] * m, 0)
    anchors = {a for a in template.anchors if a is not None}
    fits = np.zeros((n, m), dtype=bool)
    for i in range(n):
        for j in range(m):
            anchor_ok = (
                template.anchors[i] == lane.names[j]
                if lane.names[j] in anchors
                else template.anchors[i] in (None, lane.names[j])
            )
            fits[i, j] = (
                i not in taken
                and template.kinds[i] == kinds[j]
                and template.names[i] in (None, lane.names[j])
                and anchor_ok
            )
    forward = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n):
        for j in range(m):
            forward[i + 1, j + 1] = max(forward[i, j + 1], forward[i + 1, j], forward[i, j] + fits[i, j])
    backward = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            backward[i, j] = max(backward[i + 1, j], backward[i, j + 1], backward[i + 1, j + 1] + fits[i, j])
    best = int(forward[n, m])
    launch, how = [], []
    for j in range(m):
        on = [i for i in range(n) if fits[i, j] and forward[i, j] + 1 + backward[i + 1, j + 1] == best]
        skippable = any(forward[i, j] + backward[i, j + 1] == best for i in range(n + 1))
        keys = {template.keys[i] for i in on}
        if not on:
            launch.append(-1)
            how.append(align.NOT_CAPTURED if not fits[:, j].any() else align.EXTRA)
        elif skippable:
            launch.append(-1)
            how.append(align.EXTRA if len(keys) == 1 else align.AMBIGUOUS)
        elif len(keys) > 1:
            launch.append(-1)
            how.append(align.AMBIGUOUS)
        else:
            launch.append(on[0])
            how.append(align.ALIGNED if len(on) == 1 else align.EQUIVALENT)
    return align.Alignment(launch, how, best)


@SOME
@given(scenarios())
def test_a_banded_indexed_alignment_is_the_whole_tables(scenario: tuple[Template, Lane, frozenset[int]]) -> None:
    template, lane, taken = scenario
    found = align.align_lane(template, lane, taken)
    expected = reference(template, lane, taken)
    assert (found.launch, found.how, found.matched) == (expected.launch, expected.how, expected.matched)


@FEW
@given(st.lists(scenarios(), min_size=1, max_size=6), st.integers(0, 5))
def test_a_graphs_streams_never_share_a_launch_and_keep_their_order(
    lanes: list[tuple[Template, Lane, frozenset[int]]], which: int
) -> None:
    """Several streams against one capture: each attributed node's launch fits it, no launch runs two
    nodes, a lane's launches rise with its nodes, and the cells filled stay within the budget."""
    template = lanes[which % len(lanes)][0]
    streams = [lane for _t, lane, _taken in lanes]
    found = align.align_graph(template, streams)
    seen: set[int] = set()
    for lane, alignment in zip(streams, found, strict=True):
        # (A node named like an anchor whose launches are all alike takes the first: equal launches.)
        pairs = [(j, i) for j, i in enumerate(alignment.launch) if i >= 0 and alignment.how[j] != align.ANCHOR]
        assert [i for _j, i in pairs] == sorted(i for _j, i in pairs)
        for j, i in pairs:
            kind = align.node_kind(lane.kinds[j], lane.names[j])
            assert align._fits(template, i, kind, lane.names[j])
            assert i not in seen
            seen.add(i)


DIM = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 2**31, 2**62, 2**63 - 1, 2**63, 2**64 + 2**32]),
    st.text(alphabet="0123456789٣", min_size=1, max_size=30),
    st.booleans(),
    st.floats(allow_nan=True),
    st.none(),
)
SHAPE = st.one_of(st.lists(DIM, max_size=6), st.lists(st.lists(DIM, max_size=4), max_size=3), DIM)
TYPES = st.sampled_from(["c10::BFloat16", "float", "c10::Half", "long int", "int", "Scalar", "", "TensorList"])


@SOME
@given(
    st.sampled_from(sorted(MODELS)),
    st.lists(SHAPE, max_size=6),
    st.lists(TYPES, max_size=6),
    st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["1", "True", "[1, 1]", "9" * 40])), max_size=6),
)
def test_every_op_model_gives_a_finite_figure_or_none_for_any_dims(
    op: str, dims: list[object], types: list[str], concrete: list[str]
) -> None:
    tracemalloc.start()
    try:
        work = operator_work(op, json.dumps(dims), json.dumps(types), json.dumps(concrete))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20
    if work is not None and work.flops is not None:
        assert 0 <= work.flops < math.inf
        assert work.bytes is not None and 0 < work.bytes < math.inf


@SOME
@given(st.one_of(st.text(max_size=25), st.integers(-(2**80), 2**80), st.booleans(), st.floats()))
def test_a_count_is_eighteen_ascii_digits_at_most_and_exact(value: object) -> None:
    found = count_of(value)
    if found is None:
        return
    assert 0 <= found <= INT64_MAX
    if isinstance(value, str):
        assert value.isascii() and value.isdigit() and len(value) <= 18 and int(value) == found
    else:
        assert found == value and not isinstance(value, bool)


@SOME
@given(st.lists(st.integers(0, 2**64), max_size=8))
def test_a_checked_product_is_exact_or_none(parts: list[int]) -> None:
    found = checked_product(parts)
    exact = math.prod(parts)
    if all(p <= INT64_MAX for p in parts) and exact <= INT64_MAX:
        assert found == exact
    else:
        assert found is None


@FEW
@given(
    st.lists(st.sampled_from(NAMES[:4]), min_size=20, max_size=120),
    st.lists(st.tuples(st.sampled_from(["delete", "insert"]), st.integers(0, 10**6)), max_size=3),
    st.booleans(),
)
def test_alignment_work_grows_with_the_replay_not_its_square(
    names: list[str], edits: list[tuple[str, int]], named: bool
) -> None:
    """A replay whose capture differs in a few places, made 8 times longer (the same edits, the rest
    repeated): the alignment fills at most 2.5 x 8 times the cells (the whole table filled 64 times)."""

    def cells_for(copies: int) -> int:
        lane_names = names * copies
        captured = list(lane_names)
        for edit, where in edits:
            at = where % max(len(captured), 1)
            if edit == "delete" and captured:
                del captured[at]
            else:
                captured.insert(at, "extra")
        template = Template(
            ["kernel"] * len(captured),
            list(captured) if named else [None] * len(captured),
            [None] * len(captured),
            [(f"op{i % 3}",) for i in range(len(captured))],
        )
        filled = 0
        real = align._band_table

        def counted(fits: np.ndarray, *args: int) -> np.ndarray:
            nonlocal filled
            filled += fits.size
            return real(fits, *args)

        align._band_table = counted  # type: ignore[assignment]
        try:
            align.align_lane(template, Lane(["kernel"] * len(lane_names), lane_names))
        finally:
            align._band_table = real  # type: ignore[assignment]
        return filled

    assert cells_for(8) <= 2.5 * 8 * cells_for(1) + 4096


@st.composite
def replay_traces(draw: st.DrawFn) -> tuple[list[dict], list[dict]]:
    """A trace of graph replays (some launched, some not: cut or GPU-only), on one or two streams,
    inside serving annotations with any batch size text, and optionally a capture of the graph;
    and the replayed GPU events (the witness: their durations summed from the JSON)."""
    host = {"ph": "X", "pid": 1, "tid": 1}
    graph = [draw(st.sampled_from(NAMES[:4])) for _ in range(draw(st.integers(2, 8)))]
    streams = [draw(st.sampled_from([7, 7, 9])) for _ in graph]
    events: list[dict] = []
    replayed: list[dict] = []
    if draw(st.booleans()):  # its capture, in the same trace, ROCm-style (names) or CUDA-style (none)
        named = draw(st.booleans())
        events.append({**host, "name": "capture_8_FULL", "cat": "user_annotation", "ts": 0, "dur": 900})
        events.append({**host, "name": "hipStreamBeginCapture", "cat": "cuda_runtime", "ts": 1, "dur": 1})
        for i, name in enumerate(graph):
            args = {"correlation": 10_000 + i, **({"kernel": name} if named else {})}
            events.append(
                {**host, "name": "hipLaunchKernel", "cat": "cuda_runtime", "ts": 10 + 10 * i, "dur": 2, "args": args}
            )
        events.append({**host, "name": "hipStreamEndCapture", "cat": "cuda_runtime", "ts": 800, "dur": 1})
    size = draw(st.sampled_from(["8", "9" * 19, "9" * 4400, "٣", "0"]))
    for r in range(draw(st.integers(1, 6))):
        t = 1000 * (r + 1)
        launched = draw(st.integers(0, 3)) > 0
        events.append({**host, "name": f"step[DECODE bs={size}]", "cat": "user_annotation", "ts": t, "dur": 900})
        if launched:
            call = {"name": "hipGraphLaunch", "cat": "cuda_runtime", "ts": t + 5, "dur": 3}
            events.append({**host, **call, "args": {"correlation": r + 1}})
        kept = graph if draw(st.integers(0, 4)) else graph[draw(st.integers(0, len(graph) - 1)) :]
        offset = len(graph) - len(kept)
        for k, name in enumerate(kept):
            gpu = {"name": name, "ph": "X", "cat": "kernel", "ts": t + 50 + 10 * k, "dur": draw(st.integers(1, 9))}
            gpu |= {"pid": 0, "tid": streams[offset + k], "args": {"stream": streams[offset + k], "correlation": r + 1}}
            events.append(gpu)
            if len(kept) >= 2 or launched:
                replayed.append(gpu)
    return events, replayed


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario=replay_traces())
def test_any_replay_scenario_goes_through_every_graph_and_iteration_view(
    scenario: tuple[list[dict], list[dict]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every graph and iteration view answers (a table or one clear line, never an exception
    escaping as an internal error), no figure is negative, and the graphs' GPU time is at most the
    replayed events' (summed from the JSON: what is attributed is part of what ran)."""
    import profview
    from profview.errors import ProfviewError

    events, replayed = scenario
    path = tmp_path_factory.mktemp("replay") / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    profile = profview.load(path, use_cache=False)
    for view in ("graphs", "graph_nodes", "graph_ops", "iterations", "phases"):
        try:
            frame = getattr(profile, view)()
        except ProfviewError:
            continue
        for column, dtype in frame.schema.items():
            if dtype.is_numeric():
                assert (frame[column].drop_nulls() >= 0).all(), (view, column)
        if view == "graphs":
            assert frame["device_us"].sum() <= sum(e["dur"] for e in replayed) + 1e-6
    profile.graph_lines()
