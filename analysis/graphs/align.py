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

No I/O: NumPy over small arrays (one row per captured launch, one column per node of a lane).
Witness: tests/analysis/graphs/test_graph_robustness.py makes real pairs harder and checks each
attributed event against its own launch in the untouched pair (tests/graph_witness.py).
"""

from __future__ import annotations

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


def align_lane(template: Template, lane: Lane, taken: frozenset[int] = frozenset()) -> Alignment:
    """Pair a lane's nodes with the template's launches where the capture decides it (``taken``:
    launches other lanes certainly ran, which this one cannot have)."""
    n, m = len(template.kinds), len(lane.kinds)
    kinds = [node_kind(k, name) for k, name in zip(lane.kinds, lane.names, strict=True)]
    if n == m and not taken and all(_fits(template, i, kinds[i], lane.names[i]) for i in range(n)):
        return Alignment(list(range(m)), [POSITION] * m, m)
    if n == 0 or m == 0:
        return Alignment([-1] * m, [NOT_CAPTURED] * m, 0)
    fits = _fit_matrix(template, kinds, lane.names)
    if taken:
        fits[sorted(taken), :] = False
    forward = _lcs_table(fits)
    backward = _lcs_table(fits[::-1, ::-1])[::-1, ::-1]
    best = int(forward[n, m])
    # (i, j) is on some longest alignment: it fits, and the best before it plus the best after it is best.
    on_best = fits & (forward[:-1, :-1] + 1 + backward[1:, 1:] == best)
    # Node j is left out by some longest alignment when one as long exists without it.
    skippable = (forward[:, :-1] + backward[:, 1:]).max(axis=0) == best
    launch, how = [], []
    for j in range(m):
        candidates = np.flatnonzero(on_best[:, j])
        if len(candidates) == 0:
            launch.append(-1)
            how.append(NOT_CAPTURED if not fits[:, j].any() else EXTRA)
        elif skippable[j]:
            launch.append(-1)
            how.append(EXTRA if len({template.keys[i] for i in candidates}) == 1 else AMBIGUOUS)
        elif len({template.keys[i] for i in candidates}) > 1:
            launch.append(-1)
            how.append(AMBIGUOUS)
        else:
            launch.append(int(candidates[0]))
            how.append(ALIGNED if len(candidates) == 1 else EQUIVALENT)
    return Alignment(launch, how, best)


def align_graph(template: Template, lanes: list[Lane]) -> list[Alignment]:
    """Each lane aligned on its own (a stream runs its launches in capture order; the other streams'
    launches are gaps in it).  A launch one lane certainly ran is no other's: the lanes are aligned
    again without the launches the others hold, until nothing changes; a launch two lanes still
    claim is refused to both."""
    if len(lanes) > 1 and not any(name is not None for name in template.names):
        return [_by_anchor_only(template, lane) for lane in lanes]
    alignments = [align_lane(template, lane) for lane in lanes]
    if len(alignments) < 2:
        return alignments
    for _round in range(len(lanes) * 4):
        held = [frozenset(i for i in a.launch if i >= 0) for a in alignments]
        again = [
            align_lane(template, lane, frozenset().union(*(h for k, h in enumerate(held) if k != number)))
            for number, lane in enumerate(lanes)
        ]
        if [a.launch for a in again] == [a.launch for a in alignments]:
            break
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


def _by_anchor_only(template: Template, lane: Lane) -> Alignment:
    """A lane of a graph on several streams whose capture names no kernels: only a node whose name is
    an anchor whose launches are all alike is attributed; the order, which is all else there is to
    go by, does not hold across streams."""
    launch, how = [], []
    for name in lane.names:
        found = [i for i, anchor in enumerate(template.anchors) if anchor == name]
        if found and len({template.keys[i] for i in found}) == 1:
            launch.append(found[0])
            how.append(ANCHOR)
        else:
            launch.append(-1)
            how.append(ACROSS_STREAMS)
    return Alignment(launch, how, sum(1 for i in launch if i >= 0))


def _fits(template: Template, i: int, kind: str, name: str) -> bool:
    """Whether launch ``i`` can have run node (``kind``, ``name``)."""
    named = template.names[i]
    anchor = template.anchors[i]
    return template.kinds[i] == kind and (named is None or named == name) and (anchor is None or anchor == name)


def _fit_matrix(template: Template, kinds: list[str], names: list[str]) -> np.ndarray:
    """``fits[i, j]``: launch ``i`` can have run node ``j`` (vectorised over codes of the texts)."""
    codes: dict[str | None, int] = {None: -1}
    for text in [*template.kinds, *kinds, *template.names, *template.anchors, *names]:
        codes.setdefault(text, len(codes))
    t_kind = np.array([codes[k] for k in template.kinds])[:, None]
    t_name = np.array([codes[k] for k in template.names])[:, None]
    t_anchor = np.array([codes[k] for k in template.anchors])[:, None]
    n_kind = np.array([codes[k] for k in kinds])[None, :]
    n_name = np.array([codes[k] for k in names])[None, :]
    named = (t_name < 0) | (t_name == n_name)
    # A kernel named like a Triton host op of the capture ran from such an op: from no other launch.
    anchor_names = np.array(sorted({codes[a] for a in template.anchors if a is not None}) or [-2])
    is_anchor_name = np.isin(n_name, anchor_names)
    anchored = np.where(is_anchor_name, t_anchor == n_name, (t_anchor < 0) | (t_anchor == n_name))
    fits: np.ndarray = (t_kind == n_kind) & named & anchored
    return fits


def _lcs_table(fits: np.ndarray) -> np.ndarray:
    """``table[i, j]``: the longest alignment of the first ``i`` launches with the first ``j`` nodes.

    One row at a time: ``table[i+1, j+1] = max(table[i, j+1], table[i+1, j], table[i, j] + fits[i, j])``
    is a running maximum along the row of ``max(table[i, j+1], table[i, j] + fits[i, j])``."""
    n, m = fits.shape
    table = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(n):
        above = table[i]
        step = np.maximum(above[1:], above[:-1] + fits[i])
        table[i + 1, 1:] = np.maximum.accumulate(step)
    return table


def template_of(launches: pl.DataFrame) -> Template:
    """A :class:`Template` from a capture's launches (:data:`.capture.LAUNCH_SCHEMA`)."""
    keys = list(launches.select("op_chain", "module", "python_stack").iter_rows())
    return Template(
        launches["kind"].to_list(), launches["name"].to_list(), launches["anchor"].to_list(), [tuple(k) for k in keys]
    )
