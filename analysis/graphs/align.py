"""Which captured launch ran each node of a replayed graph, where that is certain.

A graph's nodes on one stream ran in the order their launches were captured, so each lane (the
nodes of one stream, in order) is aligned to the capture's launches (CPU order) as a longest
common subsequence.  A node and a launch can pair when their kind agrees (kernel, memcpy,
memset; a ROCm ``fillBuffer``/``copyBuffer`` kernel is a memset/memcpy node) and, where the launch
names a kernel (ROCm) or has an anchor (a Triton host op, named after its kernel), that name is the
node's.  Where the capture names nothing, only the counts pin the pairs down.

A node is **attributed** only where the capture decides it: every longest alignment pairs it
(with a launch under the same operator, module and stack, so which of equal launches it was does
not matter).  Otherwise it is **refused**, with the reason: no launch of its kind and name was
captured; more replayed nodes than captured launches fit here (a conditional or ``while`` node
repeating its body, or launches missing from the capture); or several launches fit, under different
operators (two streams and a capture that names no kernel, typically).  When the counts agree and
every name agrees in order, the pairing is positional and certain by construction.

Work is linear in the input where the capture and the replay differ in few places: only the
launches that can run one of a lane's nodes are aligned with it (an index by kind and name), over a
band of diagonals as wide as the differences (O(n·d) time and memory, exact: see
:func:`_banded_best`); the lanes are aligned again a fixed number of times at most; a graph whose
alignment would cost more than a bounded number of cells is refused, saying why.

No I/O: NumPy over arrays of one row per captured launch, a band of nodes wide.
Witness: tests/analysis/graphs/test_graph_robustness.py makes real pairs harder and checks each
attributed event against its own launch in the untouched pair (tests/graph_witness.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl

#: How a node was attributed (``how``), or why not (``refused``).
POSITION = "position"
ALIGNED = "aligned"
EQUIVALENT = "aligned (one of equal launches)"
NOT_CAPTURED = "no captured launch of this kernel fits here"
EXTRA = (
    "more replayed nodes than captured launches fit here "
    "(a while/conditional node repeating, or launches missing from the capture)"
)
AMBIGUOUS = "several captured launches fit, under different operators"
CONFLICT = "two streams' nodes claim the same captured launch"
ACROSS_STREAMS = (
    "the replay runs on several streams and the capture names no kernels: the order across streams "
    "is not the capture's, so which launch ran this node is not certain"
)
TOO_MUCH = (
    "too many captured launches fit this stream's nodes to align them within the work allowed for one "
    "graph (the capture and the replay differ in many places, or many streams run the same kernels)"
)
UNSETTLED = "streams' nodes take this captured launch from each other in turn: which ran it is not certain"
ANCHOR = "anchor (a Triton kernel named after its host op)"
#: A ROCm memset or memcpy node may run as a kernel of these names.
MEMSET_KERNEL = "fillBuffer"
MEMCPY_KERNEL = "copyBuffer"


@dataclass(frozen=True)
class Lane:
    """The nodes of one stream of a graph, in order: ``kinds`` and ``names``."""

    kinds: list[str]
    names: list[str]


@dataclass(frozen=True)
class Template:
    """A capture's launches in CPU order: ``kinds``, ``names`` (None: not named), ``anchors``
    (None: none) and ``keys`` (the attribution a node would get: equal keys are equal launches)."""

    kinds: list[str]
    names: list[str | None]
    anchors: list[str | None]
    keys: list[tuple[str, ...]]


@dataclass(frozen=True)
class Alignment:
    """Per node of a lane: ``launch`` (the captured launch's index, -1: refused), ``how`` (the rule
    that attributed it, or the reason it was refused) and ``matched`` (the length of a longest
    alignment, for choosing among captures)."""

    launch: list[int]
    how: list[str]
    matched: int


def node_kind(kind: str, name: str) -> str:
    """The kind a replayed node counts as (a ROCm fill or copy kernel is the memset or memcpy node)."""
    if kind == "kernel" and MEMSET_KERNEL in name:
        return "memset"
    if kind == "kernel" and MEMCPY_KERNEL in name:
        return "memcpy"
    return kind


def align_lane(template: Template, lane: Lane, taken: Collection[int] = frozenset()) -> Alignment:
    """Pair a lane's nodes with the template's launches where the capture decides it (``taken``:
    launches other lanes certainly ran, which this one cannot have)."""
    return _align(_Coded.of(template), lane, taken)


def align_graph(template: Template, lanes: list[Lane]) -> list[Alignment]:
    """Each lane aligned on its own (a stream runs its launches in capture order; the other streams'
    launches are gaps in it).  A launch one lane holds is no other's: the lanes are aligned again
    without the launches the others hold, until nothing changes, at most :data:`REALIGN_ROUNDS`
    times whatever the streams (lanes that swap a launch back and forth would otherwise go on for
    rounds in proportion to the streams; what still changes then is refused); a launch two lanes
    still claim is refused to both.  The work a graph may cost is bounded
    (:data:`GRAPH_CELL_BUDGET`): lanes beyond it are refused, with the reason."""
    if len(lanes) > 1 and not any(name is not None for name in template.names):
        anchors: dict[str, set[tuple[str, ...]]] = {}
        first: dict[str, int] = {}
        for i, anchor in enumerate(template.anchors):
            if anchor is not None:
                anchors.setdefault(anchor, set()).add(template.keys[i])
                first.setdefault(anchor, i)
        return [_by_anchor_only(anchors, first, lane) for lane in lanes]
    coded = _Coded.of(template)
    budget = _Budget(graph_budget(len(template.kinds), sum(len(lane.kinds) for lane in lanes)))
    alignments = [_align(coded, lane, frozenset(), budget) for lane in lanes]
    if len(alignments) < 2:
        return alignments
    candidates = [_candidates(coded, lane) for lane in lanes]
    # What each lane was last aligned without: whether anything was taken, and which of its candidates.
    last: list[tuple[bool, frozenset[int]]] = [(False, frozenset())] * len(lanes)
    for _round in range(REALIGN_ROUNDS):
        holders: dict[int, int] = {}
        held = [frozenset(i for i in a.launch if i >= 0) for a in alignments]
        for mine in held:
            for i in mine:
                holders[i] = holders.get(i, 0) + 1
        again = []
        for k, lane in enumerate(lanes):
            taken = _HeldByOthers(holders, held[k])
            # (Whether anything is taken matters only to the positional pairing, of equal counts.)
            now = (
                len(lane.kinds) == len(template.kinds) and bool(taken),
                frozenset(i for i in candidates[k] if i in taken),
            )
            # A lane none of whose candidates changed hands is aligned as before (many streams of
            # their own kernels cost one alignment each, not one per round).
            again.append(alignments[k] if now == last[k] else _align(coded, lane, taken, budget))
            last[k] = now
        if [a.launch for a in again] == [a.launch for a in alignments]:
            break
        if _round == REALIGN_ROUNDS - 1:  # still changing: what changes is not decided
            again = [_unsettled(before, after) for before, after in zip(alignments, again, strict=True)]
        alignments = again
    claims: dict[int, int] = {}
    for alignment in alignments:
        for launch in alignment.launch:
            if launch >= 0:
                claims[launch] = claims.get(launch, 0) + 1
    out = []
    for alignment in alignments:
        kept = [-1 if i >= 0 and claims[i] > 1 else i for i in alignment.launch]
        how = [
            CONFLICT if i >= 0 and claims[i] > 1 else h for i, h in zip(alignment.launch, alignment.how, strict=True)
        ]
        out.append(Alignment(kept, how, alignment.matched))
    return out


def _unsettled(before: Alignment, after: Alignment) -> Alignment:
    """``after`` with the nodes whose launch changed since ``before`` refused as :data:`UNSETTLED`."""
    launch = [i if i == j else -1 for i, j in zip(after.launch, before.launch, strict=True)]
    how = [h if i == j else UNSETTLED for i, j, h in zip(after.launch, before.launch, after.how, strict=True)]
    return Alignment(launch, how, after.matched)


class _HeldByOthers(Collection[int]):
    """The launches some other lane than this one holds (a view of ``holders``, each launch's number
    of holding lanes, and ``mine``: building one set per lane would cost lanes × launches)."""

    def __init__(self, holders: dict[int, int], mine: frozenset[int]) -> None:
        self._holders = holders
        self._mine = mine

    def __contains__(self, launch: object) -> bool:
        if not isinstance(launch, int):
            return False
        return self._holders.get(launch, 0) - (launch in self._mine) > 0

    def __iter__(self) -> Iterator[int]:
        return (i for i in self._holders if i in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        """Whether another lane holds any launch (without counting them: one look per launch of mine)."""
        return len(self._holders) > len(self._mine) or any(self._holders.get(i, 0) > 1 for i in self._mine)


def _candidates(coded: _Coded, lane: Lane) -> list[int]:
    """The launches that can run one of the lane's nodes (by the index of kinds and names), in order."""
    codes = coded.codes
    rows: set[int] = set()
    signatures = {
        (codes.get(node_kind(k, name), -2), codes.get(name, -2)) for k, name in zip(lane.kinds, lane.names, strict=True)
    }
    for k, nm in signatures:
        rows.update(coded.by_name.get((k, nm), ()))
        if nm not in coded.anchor_names:
            rows.update(coded.by_kind.get(k, ()))
    return sorted(rows)


class _Budget:
    """Cells of alignment tables a graph may still fill (:data:`GRAPH_CELL_BUDGET`)."""

    def __init__(self, cells: int) -> None:
        self.cells = cells


def _by_anchor_only(anchors: dict[str, set[tuple[str, ...]]], first: dict[str, int], lane: Lane) -> Alignment:
    """A lane of a graph on several streams whose capture names no kernels: only a node whose name is
    an anchor whose launches are all alike is attributed; the order, which is all else there is to
    go by, does not hold across streams.  (``anchors``: each anchor's launch keys, found once per
    graph, so many streams cost no more than one.)"""
    launch, how = [], []
    for name in lane.names:
        keys = anchors.get(name)
        if keys is not None and len(keys) == 1:
            launch.append(first[name])
            how.append(ANCHOR)
        else:
            launch.append(-1)
            how.append(ACROSS_STREAMS)
    return Alignment(launch, how, sum(1 for i in launch if i >= 0))


@dataclass(frozen=True)
class _Coded:
    """A template as integer codes, with an index from (kind, name) to the launches that can run a
    node of that kind and name: built once per graph, so a lane costs only its candidates."""

    template: Template
    codes: dict[str | None, int]
    kind: np.ndarray
    name: np.ndarray
    anchor: np.ndarray
    key: np.ndarray
    #: Launches naming a kernel (or anchored) by (kind code, name code); unnamed unanchored by kind code.
    by_name: dict[tuple[int, int], list[int]]
    by_kind: dict[int, list[int]]
    anchor_names: frozenset[int]

    @staticmethod
    def of(template: Template) -> _Coded:
        codes: dict[str | None, int] = {None: -1}
        for text in [*template.kinds, *template.names, *template.anchors]:
            codes.setdefault(text, len(codes))
        kind = np.array([codes[k] for k in template.kinds], dtype=np.int64)
        name = np.array([codes[k] for k in template.names], dtype=np.int64)
        anchor = np.array([codes[k] for k in template.anchors], dtype=np.int64)
        key_codes: dict[tuple[str, ...], int] = {}
        key = np.array([key_codes.setdefault(k, len(key_codes)) for k in template.keys], dtype=np.int64)
        by_name: dict[tuple[int, int], list[int]] = {}
        by_kind: dict[int, list[int]] = {}
        for i in range(len(template.kinds)):
            k, nm, an = int(kind[i]), int(name[i]), int(anchor[i])
            if an >= 0:
                if nm < 0 or nm == an:
                    by_name.setdefault((k, an), []).append(i)
            elif nm >= 0:
                by_name.setdefault((k, nm), []).append(i)
            else:
                by_kind.setdefault(k, []).append(i)
        anchor_names = frozenset(int(a) for a in anchor if a >= 0)
        return _Coded(template, codes, kind, name, anchor, key, by_name, by_kind, anchor_names)


def _align(coded: _Coded, lane: Lane, taken: Collection[int], budget: _Budget | None = None) -> Alignment:
    """:func:`align_lane` over a coded template: the launches that can run none of the lane's nodes
    (and the nodes no launch can run) are left out first (they pair with nothing, so every longest
    alignment is the same without them), then a banded alignment (:func:`_banded_best`)."""
    template = coded.template
    n, m = len(template.kinds), len(lane.kinds)
    kinds = [node_kind(k, name) for k, name in zip(lane.kinds, lane.names, strict=True)]
    if n == m and not taken and all(_fits(template, i, kinds[i], lane.names[i]) for i in range(n)):
        return Alignment(list(range(m)), [POSITION] * m, m)
    if n == 0 or m == 0:
        return Alignment([-1] * m, [NOT_CAPTURED] * m, 0)
    codes = coded.codes
    n_kind = np.array([codes.get(k, -2) for k in kinds], dtype=np.int64)
    n_name = np.array([codes.get(k, -2) for k in lane.names], dtype=np.int64)
    rows = np.array([i for i in _candidates(coded, lane) if i not in taken], dtype=np.int64)
    launch = [-1] * m
    how = [NOT_CAPTURED] * m
    if len(rows) == 0:
        return Alignment(launch, how, 0)
    t_kind, t_name, t_anchor = coded.kind[rows], coded.name[rows], coded.anchor[rows]
    is_anchor = np.isin(n_name, np.array(sorted(coded.anchor_names) or [-3], dtype=np.int64))

    def fit(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Whether candidate launch ``i`` can have run node ``j`` (elementwise)."""
        nn = n_name[j]
        named = (t_name[i] < 0) | (t_name[i] == nn)
        anchored = np.where(is_anchor[j], t_anchor[i] == nn, (t_anchor[i] < 0) | (t_anchor[i] == nn))
        result: np.ndarray = (t_kind[i] == n_kind[j]) & named & anchored
        return result

    # Nodes no candidate can run: refused as not captured, and left out of the alignment.
    runnable = np.zeros(m, dtype=bool)
    signatures: dict[tuple[int, int], list[int]] = {}
    for j, sig in enumerate(zip(n_kind.tolist(), n_name.tolist(), strict=True)):
        signatures.setdefault(sig, []).append(j)
    for _sig, js in signatures.items():
        j0 = np.full(len(rows), js[0], dtype=np.int64)
        if fit(np.arange(len(rows)), j0).any():
            runnable[js] = True
    cols = np.flatnonzero(runnable)
    if len(cols) == 0:
        return Alignment(launch, how, 0)
    found = _banded_best(len(rows), cols, fit, coded.key[rows], budget)
    if found is None:
        for j in cols.tolist():
            how[j] = TOO_MUCH
        return Alignment(launch, how, 0)
    best, first, keys_differ, count, skippable = found
    for c, j in enumerate(cols.tolist()):
        if count[c] == 0:  # it fits some launch (``cols``), but no longest alignment pairs it
            how[j] = EXTRA
        elif skippable[c]:
            how[j] = AMBIGUOUS if keys_differ[c] else EXTRA
        elif keys_differ[c]:
            how[j] = AMBIGUOUS
        else:
            launch[j] = int(rows[first[c]])
            how[j] = ALIGNED if count[c] == 1 else EQUIVALENT
    return Alignment(launch, how, best)


#: Times the lanes of a graph are aligned again without the launches the others hold.
REALIGN_ROUNDS = 3
#: Cells (launch × node pairs) one lane's alignment tables may hold, and a whole graph's lanes
#: together: beyond them the capture and the replay differ too much to align within bounded work.
LANE_CELL_BUDGET = 4_000_000
GRAPH_CELL_BUDGET = 32_000_000
#: Cells per launch and node a graph may fill beyond :data:`GRAPH_CELL_BUDGET`.
CELLS_PER_ITEM = 64


def graph_budget(launches: int, nodes: int) -> int:
    """The cells a graph's alignment may fill: a constant and a multiple of its input (linear work)."""
    return GRAPH_CELL_BUDGET + CELLS_PER_ITEM * (launches + nodes)


_NONE = -(1 << 29)


def _banded_best(
    n: int,
    cols: np.ndarray,
    fit: Callable[[np.ndarray, np.ndarray], np.ndarray],
    keys: np.ndarray,
    budget: _Budget | None,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The longest alignments of ``n`` launches with the nodes ``cols`` (``fit(i, j)``: launch i can
    run node j), per node (in ``cols`` order): the first launch on a longest alignment, whether such
    launches differ in key, how many there are and whether a longest alignment leaves the node out;
    and the longest length.  None: past the budget.

    Every pair on a longest alignment of length L lies on a diagonal ``j - i`` between ``-(n - L)``
    and ``m - L`` (each side skips at most its length less L), so tables over a band of diagonals are
    exact once the band holds those bounds for the length found in it (a band only shortens
    alignments): the band is doubled until it does.  Memory and time are n × the band's width:
    linear where the capture and the replay differ in a few places (O(n·d))."""
    m = len(cols)
    low_base, high_base = min(0, m - n), max(0, m - n)
    slack = 8
    while True:
        lo, hi = low_base - slack, high_base + slack
        lo, hi = max(lo, -n), min(hi, m)
        width = hi - lo + 1
        cells = (n + 1) * width
        if cells > LANE_CELL_BUDGET or (budget is not None and cells * 2 > budget.cells):
            return None
        if budget is not None:
            budget.cells -= cells * 2
        i_idx = np.arange(n, dtype=np.int64)[:, None]
        j_idx = i_idx + lo + np.arange(width, dtype=np.int64)[None, :]
        inside = (j_idx >= 0) & (j_idx < m)
        jc = np.clip(j_idx, 0, m - 1)
        ii = np.broadcast_to(i_idx, jc.shape)
        fits = inside & fit(ii, cols[jc])
        forward = _band_table(fits, n, m, lo, width)
        best = int(forward[n, m - n - lo]) if 0 <= m - n - lo < width else 0
        if (n - best <= -lo or lo == -n) and (m - best <= hi or hi == m):
            break
        slack *= 2
    # The backward table: the same recurrence over both sequences reversed (the band maps onto itself).
    # Pair (i, j) reversed is (n-1-i, m-1-j): on the diagonal (m - n) - (j - i), so with the band's
    # low end at (m - n) - hi its column is width-1-c; state (i, j) reversed is (n-i, m-j), likewise.
    backward = _band_table(fits[::-1, ::-1], n, m, (m - n) - hi, width)[::-1, ::-1]
    # A pair (i, j) on a longest alignment: forward[i, j] + 1 + backward[i + 1, j + 1] == best.
    # backward[i + 1, j + 1] is row i + 1 at the same column.
    on_best = fits & (forward[:-1] + 1 + backward[1:] == best)
    pair_i, pair_c = np.nonzero(on_best)
    pair_j = pair_i + lo + pair_c
    order = np.lexsort((pair_i, pair_j))
    pair_i, pair_j = pair_i[order], pair_j[order]
    first = np.zeros(m, dtype=np.int64)
    count = np.zeros(m, dtype=np.int64)
    keys_differ = np.zeros(m, dtype=bool)
    if len(pair_j):
        uniq, start, counts = np.unique(pair_j, return_index=True, return_counts=True)
        first[uniq] = pair_i[start]
        count[uniq] = counts
        pk = keys[pair_i]
        keys_differ[uniq] = np.minimum.reduceat(pk, start) != np.maximum.reduceat(pk, start)
    # Node j is left out by some longest alignment: forward[i, j] + backward[i, j + 1] == best.
    # backward[i, j + 1] is row i, next column.
    skip_sum = forward[:, :-1] + backward[:, 1:]
    skip_i, skip_c = np.nonzero(skip_sum == best)
    skip_j = skip_i + lo + skip_c
    skippable = np.zeros(m, dtype=bool)
    skippable[skip_j[(skip_j >= 0) & (skip_j < m)]] = True
    return best, first, keys_differ, count, skippable


def _band_table(fits: np.ndarray, n: int, m: int, lo: int, width: int) -> np.ndarray:
    """``table[i, c]``: the longest alignment of the first ``i`` launches with the first
    ``j = i + lo + c`` nodes, within the band (:data:`_NONE` outside the table).

    ``table[i+1, j+1] = max(table[i, j+1], table[i+1, j], table[i, j] + fits[i, j])``: in band
    columns, ``table[i, j+1]`` is the row above one column right, ``table[i, j]`` the same column, and
    ``table[i+1, j]`` a running maximum along the row."""
    table = np.full((n + 1, width), _NONE, dtype=np.int32)
    c = np.arange(width, dtype=np.int64)
    j0 = lo + c
    table[0, (j0 >= 0) & (j0 <= m)] = 0
    for i in range(n):
        above = table[i]
        j_next = i + 1 + lo + c  # the state's node count in row i + 1
        right = np.empty(width, dtype=np.int32)
        right[:-1] = above[1:]
        right[-1] = _NONE
        step = np.maximum(right, above + np.where(fits[i], 1, _NONE))
        step = np.where(j_next == 0, 0, step)
        step = np.maximum.accumulate(step)
        table[i + 1] = np.where((j_next >= 0) & (j_next <= m), step, _NONE)
    return table


def _fits(template: Template, i: int, kind: str, name: str) -> bool:
    """Whether launch ``i`` can have run node (``kind``, ``name``)."""
    named = template.names[i]
    anchor = template.anchors[i]
    return template.kinds[i] == kind and (named is None or named == name) and (anchor is None or anchor == name)


def template_of(launches: pl.DataFrame) -> Template:
    """A :class:`Template` from a capture's launches (:data:`.capture.LAUNCH_SCHEMA`)."""
    keys = list(launches.select("op_chain", "module", "python_stack").iter_rows())
    return Template(
        launches["kind"].to_list(), launches["name"].to_list(), launches["anchor"].to_list(), [tuple(k) for k in keys]
    )
