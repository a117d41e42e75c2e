"""A profile's serving and decode loops: one row per iteration, the phases, the
Overview's per-phase lines, and one iteration's GPU work (what Enter on an iteration narrows to).
A mixin of :class:`~profview.profiles.trace_profile.Profile`; the rules are
:mod:`profview.analysis.serving.iterations`' and :mod:`~profview.analysis.serving.phases`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import ProfviewError
from ..frames import fmt_fixed
from .iteration_scope import IterationScope

if TYPE_CHECKING:
    from .host import ProfileHost
else:
    ProfileHost = object  # the Protocol is the type checker's base only

#: Why a trace has no iterations.
NO_ITERATIONS = (
    "no iterations: no serving annotation (vLLM execute_…, SGLang step[…], ATOM prefill[…]/decode[…], "
    "prefill/decode ranges), no annotation repeated inside a ProfilerStep and no ProfilerStep "
    "(name the iterations' ranges with --iteration REGEX)"
)
#: The fact kept with a trace: whether its iterations were found by serving annotations.
SERVING_FACT = "serving_iterations"
#: Half the resolution the iterations view keeps its times to (3 decimals of a µs).
ROUNDING_US = 0.0005
#: The phases a per-phase line is printed for (an unknown phase is a training step or a loop
#: profview cannot read: no line).
LINE_PHASES = ("prefill", "decode", "mixed")


class IterationViews(ProfileHost):
    """Serving and decode loops: iterations, phases, one iteration's GPU work."""

    def iterations(self, pattern: str | None = None) -> pl.DataFrame:
        """One row per iteration (:func:`profview.analysis.serving.iterations.iteration_table`); ``pattern``:
        the iterations are the host ranges whose name matches this regex (``--iteration``)."""
        if pattern is None:
            return self._trace_only("iterations", NO_ITERATIONS, lambda: self._iteration_table(None))
        key = f"iterations:{pattern}"
        if key not in self._facts:
            self._require("iterations")  # a text format has none: said as for the default view
            if not self.is_trace:
                raise ProfviewError(self.path, f"a {self.format} has no iterations view")
            self._facts[key] = self._iteration_table(check_iteration_pattern(pattern))
            if self._facts[key].height == 0:
                raise ProfviewError(self.path, f"no host range matches --iteration {pattern!r}")
        frame: pl.DataFrame = self._facts[key]
        return frame

    def _iteration_table(self, pattern: str | None) -> pl.DataFrame:
        from ..analysis.serving.iterations import ITERATION_COLUMNS, find_iterations, iteration_table

        found = find_iterations(self.model, pattern)
        if found is None:
            return pl.DataFrame(schema=dict.fromkeys(ITERATION_COLUMNS, pl.String))
        return iteration_table(self.model, found)

    def phases(self, pattern: str | None = None) -> pl.DataFrame:
        """The iterations summed per phase (:func:`profview.analysis.serving.phases.phase_table`)."""
        from ..analysis.serving.phases import phase_table

        if pattern is not None:
            return phase_table(self.iterations(pattern))
        return self._trace_only("phases", NO_ITERATIONS, lambda: phase_table(self.iterations()))

    def phase_lines(self) -> list[str]:
        """The Overview's and ``summary``'s line per serving phase (none for a trace without
        prefill/decode/mixed iterations): ``decode: 12 iterations × 4 tokens, 39.849 us GPU per
        token, GPU busy 2.9% of each iteration (median) → host-bound``."""
        if not self.is_trace or not self.has_serving_iterations():
            return []
        try:
            phases = self.phases()
        except ProfviewError:
            return []
        return [phase_line(row) for row in phases.iter_rows(named=True) if row["phase"] in LINE_PHASES]

    def serving_known(self) -> bool:
        """Whether :meth:`has_serving_iterations` answers without searching (kept or computed already):
        the viewer's Overview asks it, and searches off the UI thread when not."""
        saved = self.saved.facts().get(SERVING_FACT) if self.saved else None
        return isinstance(saved, bool) or SERVING_FACT in self._facts

    def has_serving_iterations(self) -> bool:
        """Whether the trace's iterations are a serving framework's or a decode loop's (found by
        their annotations): only then has it per-phase lines.  Kept with the trace (a re-opened
        trace's summary reads it, and no model): a training trace pays the search once."""
        saved = self.saved.facts().get(SERVING_FACT) if self.saved else None
        if isinstance(saved, bool):
            return saved
        if SERVING_FACT not in self._facts:
            from ..analysis.serving.iterations import find_iterations

            found = find_iterations(self.model)
            self._facts[SERVING_FACT] = self.fresh_facts[SERVING_FACT] = (
                found is not None and found.found_by == "annotation"
            )
        return bool(self._facts[SERVING_FACT])

    def iteration_scope(self, iteration: int, pattern: str | None = None) -> IterationScope:
        """Iteration ``iteration`` (a row of :meth:`iterations`) as a scope the views narrow to."""
        table = self.iterations(pattern)
        rows = table.filter(pl.col("iteration") == iteration)
        if rows.height == 0:
            raise ProfviewError(self.path, f"no iteration {iteration} (iterations: 0 to {table.height - 1})")
        row = rows.row(0, named=True)
        start = self.span_start + float(row["start_us"])
        scope = IterationScope(iteration, str(row["name"]), start, start + float(row["host_us"]), 0.0, pattern)
        gpu_end = self.model.gpu.filter(self.iteration_gpu_mask(scope))["end"].max()
        window_end = max(scope.end, float(gpu_end)) if isinstance(gpu_end, (int, float)) else scope.end
        return IterationScope(iteration, scope.name, scope.start, scope.end, window_end, pattern)

    def iteration_gpu_mask(self, scope: IterationScope) -> pl.Series:
        """Per ``model.gpu`` row, whether the iteration launched it (its launching runtime call started
        inside the iteration's host range: :mod:`profview.analysis.serving.iterations`' rule)."""
        launch = self.model.gpu["launch_row"]
        launch_ts = self.model.host["ts"].gather(launch.fill_null(0))
        # start_us and host_us are kept to the nanosecond: the range is widened by half of one
        lo, hi = scope.start - ROUNDING_US, scope.end + ROUNDING_US
        inside = launch.is_not_null() & (launch_ts >= lo) & (launch_ts <= hi)
        return inside.fill_null(False).alias("in_iteration")


def check_iteration_pattern(pattern: str) -> str:
    """``pattern`` if it is a regex Polars' (linear-time) engine runs; else a one-line :class:`ProfviewError`.

    The one validator every user pattern goes through (``pattern_problem``, as ``--filter``): Python's
    ``re``, asked first before, failed on deep nesting (500 groups: an internal error) and accepted
    patterns the engine refuses."""
    from ..analysis.trace.name_rules import pattern_problem

    problem = pattern_problem(pattern)
    if problem is not None:
        raise ProfviewError(None, f"bad --iteration regex {pattern[:60]!r}: {problem}")
    return pattern


def phase_line(row: dict[str, object]) -> str:
    """One phase's line (a row of the phases view), short enough for 80 columns:
    ``decode: 12 iterations × 4 tokens, 39.8 us GPU/token, busy 2.9% → host-bound`` (busy: the median
    iteration's GPU busy share of its time).  Where the iterations' tokens vary, their range and
    median: ``× 4–512 tokens, median 4`` (a median alone would hide the prompt an iteration held)."""
    iterations = int(row["iterations"])  # type: ignore[call-overload]
    tokens, per_token = row["tokens_per_iteration"], row["gpu_us_per_token"]
    head = f"{row['phase']}: {iterations} iteration{'s' if iterations != 1 else ''}"
    unknown = tokens is None or per_token is None
    if unknown:
        figures = [head, f"{short_us(row['median_gpu_us'])} GPU each"]
    else:
        low, high = row.get("tokens_min"), row.get("tokens_max")
        spread = f"{low}–{high} tokens, median {float(tokens):g}" if low != high else f"{float(tokens):g} tokens"  # type: ignore[arg-type]
        figures = [f"{head} × {spread}", f"{short_us(per_token)} GPU/token"]  # type: ignore[arg-type]
    busy = row["median_gpu_busy_pct"]
    if isinstance(busy, (int, float)):
        verdict = f" → {row['bound']}" if row["bound"] else ""
        figures.append(f"busy {busy:.0f}%{verdict}" if busy >= 10 else f"busy {busy:.1f}%{verdict}")
    return ", ".join(figures) + (" (tokens unknown)" if unknown else "")


def short_us(value: object) -> str:
    """A duration in one decimal of its unit (``39.8 us``, ``1.25 ms``): a line's figure, not a table's."""
    if not isinstance(value, (int, float)):
        return "-"
    if value >= 1e6:
        return f"{fmt_fixed(value / 1e6, 2)} s"  # scientific past 10^12 s (a damaged time: 1e300)
    return f"{value / 1e3:.2f} ms" if value >= 1e3 else f"{value:.1f} us"
