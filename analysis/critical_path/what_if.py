"""What-if: scale the durations of some kernels or operators and read the critical path again.

A model, not a measurement: the graph keeps its shape (the same dependencies, launch delays and
gaps between kernels), only the chosen events' own time changes — a kernel's run, an operator's
self time (its children keep theirs) — and the longest path is found again.  Work that the
change would move or remove (a shorter kernel letting the next launch earlier, fewer
synchronisations) is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..trace.name_rules import pattern_problem
from .frames import StepPaths
from .path import BOUNDS, OPERATOR, longest_paths

#: Columns of the what-if frame: per step and bound kind, the µs before and after and the change;
#: then a ``total`` row (the path) and a ``step_time`` row (the step's time as the steps view
#: has it, changed by as much as its path: the model's predicted step time).
WHAT_IF_COLUMNS = ("step", "bound_by", "before_us", "after_us", "change_us", "change_pct")


@dataclass(frozen=True)
class Scaling:
    """Scale the events whose name matches ``pattern`` (a regex, searched) by ``factor``."""

    pattern: str
    factor: float


#: The largest scaling: a kernel a million times slower is already no model of a real change,
#: and ``1e308`` overflowed the path's total to ``inf`` (issue 35).
MAX_FACTOR = 1e6


def parse_scaling(text: str) -> Scaling:
    """``'REGEX=FACTOR'`` (the last ``=`` splits) → a :class:`Scaling`; ValueError names the problem."""
    pattern, sep, factor_text = text.rpartition("=")
    if not sep or not pattern:
        raise ValueError(f"what-if {text!r}: expected REGEX=FACTOR, e.g. 'gemm=0.5'")
    try:
        factor = float(factor_text)
    except ValueError:
        raise ValueError(f"what-if {text!r}: factor {factor_text!r} is not a number") from None
    if not (np.isfinite(factor) and 0 <= factor <= MAX_FACTOR):
        raise ValueError(f"what-if {text!r}: the factor must be a number from 0 to {MAX_FACTOR:,.0f}")
    problem = pattern_problem(pattern)  # the engine that runs it (no look-around)
    if problem is not None:
        raise ValueError(f"what-if {text!r}: bad regex ({problem})")
    return Scaling(pattern, factor)


def scaled_weights(paths: StepPaths, scalings: list[Scaling]) -> np.ndarray:
    """The graph's edge weights with each matching event's own time scaled (later scalings of the
    same event multiply)."""
    graph = paths.result.graph
    names = pl.concat(
        [paths.model.host["name"].gather(graph.host_rows), paths.model.gpu["name"].gather(graph.gpu_rows)]
    )
    factor = np.ones(len(names))
    for scaling in scalings:
        matches = names.str.contains(scaling.pattern).fill_null(False).to_numpy()
        factor[matches] *= scaling.factor
    weight: np.ndarray = graph.reported.copy()
    own = (graph.kind == OPERATOR) & (graph.event >= 0)
    weight[own] *= factor[graph.event[own]]
    return weight


def what_if(
    paths: StepPaths, scalings: list[Scaling], durations: dict[int, float] | None = None
) -> tuple[pl.DataFrame, StepPaths]:
    """The what-if frame (per step: each bound kind, the path's ``total`` and the ``step_time``,
    before and after) and the paths after the change.  ``durations``: each step's time as the
    steps view has it (default: its host range)."""
    from .path import breakdown

    weight = scaled_weights(paths, scalings)
    after = StepPaths(paths.steps, longest_paths(paths.result.graph, np.maximum(weight, 0.0)), paths.model, paths.rules)
    before_table = breakdown(paths.result)
    after_table = breakdown(after.result, weight)
    spans = (paths.steps["end"] - paths.steps["start"]).to_list()
    rows = []
    for i, step in enumerate(paths.steps["step"].to_list()):
        change = after_table[i].sum() - before_table[i].sum()
        values = [*zip(before_table[i], after_table[i], strict=True), (before_table[i].sum(), after_table[i].sum())]
        span = (durations or {}).get(step, spans[i])
        values.append((span, span + change))
        for bound, (b, a) in zip((*BOUNDS, "total", "step_time"), values, strict=True):
            rows.append((step, bound, float(b), float(a), float(a - b), float((a - b) / b * 100) if b else 0.0))
    schema = dict(zip(WHAT_IF_COLUMNS, (pl.Int64, pl.String, *[pl.Float64] * 4), strict=True))
    frame = pl.DataFrame(rows, schema=schema, orient="row").with_columns(pl.col(pl.Float64).round(3))
    return frame, after
