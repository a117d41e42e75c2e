"""Two profiles compared: BEFORE and AFTER loaded, their diff views and the facts of each side.

The CLI (``profview diff``), the viewer's compare mode and notebooks use :func:`load_comparison`;
the figures come from :mod:`profview.analysis.diff.compare` over each profile's own views.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import polars as pl

from ..analysis.diff.compare import (
    DEFAULT_TOLERANCE_PCT,
    MATCH_MODES,
    architectures,
    diff_kernels,
    diff_launch_paths,
    diff_ops,
    diff_steps,
    step_means,
)
from ..errors import ProfviewError
from ..frames import fmt_us
from ..profiles.trace_profile import Profile

DIFF_VIEWS = ("kernels", "ops", "steps")
_LAUNCH_SCHEMA: dict[str, Any] = {"op": pl.String, "op_chain": pl.String, "calls": pl.Int64, "total_us": pl.Float64}
_KERNEL_SCHEMA: dict[str, Any] = {"name": pl.String, "calls": pl.Int64, "total_us": pl.Float64}
#: Views of one representative step aligned operator by operator (traces only).
EXTRA_VIEWS: tuple[str, ...] = ("align", "moved")
EXTRA_VIEWS += ("efficiency",)  # issue 24: tflops_s per operator and shapes, before and after
EXTRA_VIEWS += ("phases",)  # issue 31: serving runs per phase, GPU µs per token before and after
SIDES = ("before", "after")


@dataclass
class Comparison:
    """BEFORE and AFTER, and how to compare them.

    ``per_step``: kernels and operators are divided by each side's own step count;
    ``match``: ``exact`` or ``normalized`` (see :func:`profview.analysis.diff.compare.pair_names`);
    ``tolerance_pct``: a change within this share of the before figure is ``unchanged``;
    ``step``: the step :meth:`align` aligns on both sides (None: each side's median step).
    """

    before: Profile
    after: Profile
    per_step: bool = False
    match: str = "exact"
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT
    step: int | None = None

    def side(self, which: str) -> Profile:
        """``before`` or ``after``."""
        return self.before if which == "before" else self.after

    def step_count(self, which: str) -> int | None:
        """Rows of the side's steps view (a trace without steps: 1, the whole trace); None without steps."""
        profile = self.side(which)
        return profile.steps().height if profile.available("steps") else None

    def span_us(self, which: str) -> float | None:
        """The side's span (first to last event), for traces."""
        profile = self.side(which)
        return profile.overview().span_us if profile.is_trace else None

    def _steps(self) -> tuple[int, int] | None:
        if not self.per_step:
            return None
        counts = []
        for which in SIDES:
            count = self.step_count(which)
            if not count:
                raise ProfviewError(self.side(which).path, "--per-step needs steps, and this profile has none")
            counts.append(count)
        return counts[0], counts[1]

    def kernels(self) -> pl.DataFrame:
        """Kernel tables compared (:func:`profview.analysis.diff.compare.diff_kernels`)."""
        return diff_kernels(
            self.before.kernels(),
            self.after.kernels(),
            tolerance_pct=self.tolerance_pct,
            match=self.match,
            steps=self._steps(),
        )

    def ops(self) -> pl.DataFrame:
        """Operator tables compared (:func:`profview.analysis.diff.compare.diff_ops`)."""
        return diff_ops(
            self.before.ops(), self.after.ops(), tolerance_pct=self.tolerance_pct, match=self.match, steps=self._steps()
        )

    def efficiency(self) -> pl.DataFrame:
        """The perf model compared (:func:`profview.analysis.efficiency.perf_model.diff_efficiency`)."""
        from ..analysis.efficiency.perf_model import diff_efficiency

        return diff_efficiency(self.before.efficiency(), self.after.efficiency(), self.tolerance_pct)

    def phases(self) -> pl.DataFrame:
        """Two serving runs per phase (:func:`profview.analysis.diff.phases.diff_phases`)."""
        from ..analysis.diff.phases import diff_phases

        return diff_phases(self.before.phases(), self.after.phases(), tolerance_pct=self.tolerance_pct)

    def serving(self) -> bool:
        """Whether both sides are serving or decode-loop traces (their iterations found by annotations)."""
        return all(self.side(w).is_trace and self.side(w).has_serving_iterations() for w in SIDES)

    def steps(self) -> pl.DataFrame:
        """The mean step compared (:func:`profview.analysis.diff.compare.diff_steps`)."""
        return diff_steps(self.before.steps(), self.after.steps(), tolerance_pct=self.tolerance_pct)

    def view(self, name: str) -> pl.DataFrame:
        """One of :data:`DIFF_VIEWS` or :data:`EXTRA_VIEWS`."""
        if name not in DIFF_VIEWS + EXTRA_VIEWS:
            raise ProfviewError(
                None, f"unknown diff view {name!r}: choose one of {', '.join(DIFF_VIEWS + EXTRA_VIEWS)}"
            )
        return getattr(self, name)()

    # -- drill-downs of both sides (the viewer's compare mode) --------------------------------
    def kernel_launches(self, before: str | None, after: str | None) -> pl.DataFrame:
        """A kernel's launch paths on both sides (``before``/``after``: its name on each side, None
        where it is missing), one row per operator chain (:func:`~profview.analysis.diff.compare.diff_launch_paths`)."""
        return diff_launch_paths(
            self._side_frame("before", lambda p: p.kernel_launches(before) if before else None, _LAUNCH_SCHEMA),
            self._side_frame("after", lambda p: p.kernel_launches(after) if after else None, _LAUNCH_SCHEMA),
            tolerance_pct=self.tolerance_pct,
        )

    def op_launches(self, before: str | None, after: str | None) -> pl.DataFrame:
        """The GPU work an operator launched on both sides, one row per kernel name, matched as the
        kernel tables are (``match``): calls and totals before and after, the delta."""
        return diff_kernels(
            self._side_frame("before", lambda p: p.launches(before) if before else None, _KERNEL_SCHEMA),
            self._side_frame("after", lambda p: p.launches(after) if after else None, _KERNEL_SCHEMA),
            tolerance_pct=self.tolerance_pct,
            match=self.match,
        )

    def _side_frame(self, which: str, frame: Any, schema: dict[str, Any]) -> pl.DataFrame:
        found = frame(self.side(which))
        return found if found is not None else pl.DataFrame(schema=schema)

    def explanations(self, view: str) -> list[str]:
        """What explains surprising figures in ``view`` (kernels, ops, steps), in words: the two sides
        ran on different GPUs (suggest ``--match normalized``), GPU work before the profiling
        window, communication overlapped by compute counted as Kernel."""
        lines = []
        if view in ("kernels", "ops") and self.match == "exact":
            kernels = {w: self.side(w).kernels()["name"].to_list() for w in SIDES if self.side(w).available("kernels")}
            if len(kernels) == 2:
                arch = {w: architectures(names) for w, names in kernels.items()}
                if arch["before"] and arch["after"] and arch["before"] != arch["after"]:
                    lines.append(
                        "different GPUs ({} BEFORE, {} AFTER): library kernels differ by name; "
                        "--match normalized pairs them".format(
                            "/".join(f"{a}_*" for a in arch["before"]), "/".join(f"{a}_*" for a in arch["after"])
                        )
                    )
        if view in ("kernels", "ops"):
            lines += self.unpaired_cut_lines(view)
        if view == "steps":
            means = {w: step_means(self.side(w).steps()) for w in SIDES if self.side(w).available("steps")}
            for which, mean in means.items():
                if mean.get("prewindow", 0.0) > 0:
                    lines.append(
                        f"{which.upper()}: {fmt_us(mean['prewindow'])} of GPU work per step was launched before the "
                        "profiling window (Before window; in no other category)"
                    )
            if any(mean.get("communication", 0.0) > 0 for mean in means.values()):
                lines.append(
                    "Communication counts only time with no compute beside it: overlapped communication "
                    "counts as Kernel (the step rule)"
                )
        return lines

    def unpaired_cut_lines(self, view: str) -> list[str]:
        """The names a side's table cut short that nothing paired, and why (each starts
        several whole names of the other side, and no figures single one out)."""
        from ..analysis.diff.compare import unpaired_cut_names

        if not all(self.side(w).available(view) for w in SIDES):
            return []
        frame = self.view(view)
        lines = []
        for which, other in (("before", "after"), ("after", "before")):
            names = getattr(self.side(other), view)()["name"].to_list()
            lonely = [(name, count) for name, count in unpaired_cut_names(frame, names, which) if count > 1]
            if lonely:
                name, count = max(lonely, key=lambda item: item[1])
                lines.append(
                    f"{which.upper()}: {len(lonely)} name(s) its table cut short stay unpaired: each starts several "
                    f"{other.upper()} names and no figures single one out ({name} starts {count}); a table "
                    "printed with a wider name column pairs them"
                )
        return lines

    # -- one step aligned operator by operator (analysis/diff/align.py) ---------------------------
    def representative_step(self, which: str) -> int:
        """``step`` if given and present, else the side's step of median duration (the lower middle one)."""
        profile = self.side(which)
        if not profile.is_trace:
            raise ProfviewError(profile.path, f"a {profile.format} has no operator sequence to align")
        steps = profile.steps()
        if self.step is not None:
            if self.step not in steps["step"].to_list():
                raise ProfviewError(profile.path, f"no step {self.step} (steps: {profile.step_numbers()})")
            return self.step
        ordered = steps.sort(["duration_us", "step"])
        return int(ordered["step"][(ordered.height - 1) // 2])

    def step_phrase(self, which: str) -> str:
        """The compared step of a side as a label says it: ``step 3``, or ``whole trace`` where the
        trace has no ProfilerStep (its one row, step -1, is the whole trace)."""
        step = self.representative_step(which)
        return "whole trace" if step < 0 else f"step {step}"

    def steps_phrase(self) -> str:
        """``step 3 vs 5``, ``step 3 vs whole trace``, ``whole trace vs whole trace``."""
        before, after = self.step_phrase("before"), self.step_phrase("after")
        if before.startswith("step ") and after.startswith("step "):
            return f"{before} vs {after.removeprefix('step ')}"
        return f"{before} vs {after}"

    def launch_sequence(self, which: str) -> pl.DataFrame:
        """The launching operator calls of the side's representative step, in order."""
        from ..analysis.diff.align import launch_sequence

        profile = self.side(which)
        step = self.representative_step(which)
        row = profile.steps().filter(pl.col("step") == step).row(0, named=True)
        start = float(row["start_us"]) + profile.span_start
        return launch_sequence(profile.model, start, start + float(row["duration_us"]))

    def align(self) -> pl.DataFrame:
        """One step of each side aligned by operator (:func:`profview.analysis.diff.align.align_steps`)."""
        from ..analysis.diff.align import align_steps

        return align_steps(self.launch_sequence("before"), self.launch_sequence("after"))

    def moved(self) -> pl.DataFrame:
        """Kernels that changed under the same operator in the aligned step (:func:`moved_kernels`)."""
        from ..analysis.diff.align import moved_kernels

        return moved_kernels(self.align())

    def moved_calls(self, op: str, kernels_before: str, kernels_after: str) -> pl.DataFrame:
        """The aligned calls one row of :meth:`moved` sums (:func:`profview.analysis.diff.align.moved_calls`)."""
        from ..analysis.diff.align import moved_calls

        return moved_calls(self.align(), op, kernels_before, kernels_after)

    def notes(self, view: str) -> list[str]:
        """``PATH: N names ... summed`` for each side whose ``view`` repeats names (text tables)."""

        if view not in ("kernels", "ops"):
            return []
        lines = []
        for which in SIDES:
            profile = self.side(which)
            if not profile.available(view):
                continue
            count = self.repeated_count(which, view)
            if count:
                lines.append(
                    f"{profile.path}: {count} {'kernel' if view == 'kernels' else 'operator'} name(s) appear in "
                    "more than one row (names cut short by the table, or one name under several kinds); "
                    "each is one row of the diff, its figures summed"
                )
        return lines

    def repeated_count(self, which: str, view: str) -> int:
        """How many names side ``which`` repeats in ``view`` once its rows cut short are given the
        whole names they stand for (:func:`~profview.analysis.diff.compare.resolve_cut_rows`): the rows the
        diff sums into one."""
        from ..analysis.diff.compare import repeated_names, resolve_cut_rows

        frame = getattr(self.side(which), view)()
        if not repeated_names(frame):
            return 0
        other = self.side("after" if which == "before" else "before")
        if other.available(view):
            values = ("calls", "total_us") if view == "kernels" else ("calls", "host_self_us", "device_self_us",
                                                                       "device_total_us")
            frame = resolve_cut_rows(frame, getattr(other, view)(), values)[0]
        return repeated_names(frame)

    def repeated(self) -> str:
        """``BEFORE 7 operator, AFTER 3 kernel names`` repeated in a table (empty: none), for a short note."""
        parts = []
        for which in SIDES:
            profile = self.side(which)
            counts = [
                f"{self.repeated_count(which, view)} {label}"
                for view, label in (("kernels", "kernel"), ("ops", "operator"))
                if profile.available(view) and self.repeated_count(which, view)
            ]
            if counts:
                parts.append(f"{which.upper()} {', '.join(counts)} names")
        return "; ".join(parts)

    def header(self, which: str, *, file_name: bool = False) -> str:
        """``BEFORE  path · N steps · span x ms`` (the facts a compare screen names each side by);
        ``file_name``: the file's name instead of its path (the viewer, where a line is short)."""
        profile = self.side(which)
        parts = [os.path.basename(profile.path) if file_name else profile.path]
        count = self.step_count(which)
        if count is not None and not (profile.is_trace and profile.available("steps") and not profile.step_numbers()):
            parts.append(f"{count} step{'s' if count != 1 else ''}")
        elif count is not None:  # one row, the whole trace: no ProfilerStep to count
            parts.append("no steps (whole trace)")
        span = self.span_us(which)
        if span is not None:
            parts.append(f"span {fmt_us(span)}")
        else:
            parts.append(profile.format)
        return f"{which.upper():<6}  " + " · ".join(parts)

    def settings_line(self) -> str:
        """How the two were compared: totals or per step, the matching, the tolerance."""
        scale = "per step (each side ÷ its own step count)" if self.per_step else "totals"
        return f"{scale} · match {self.match} · unchanged within {self.tolerance_pct:g}%"


def check_inputs(before: str, after: str) -> None:
    """Raise :class:`ProfviewError` for an input that cannot be compared yet (a job directory)."""
    for path in (before, after):
        if os.path.isdir(path):
            raise ProfviewError(path, "is a directory: diff compares two traces or tables (jobs are not supported yet)")


def load_comparison(
    before: str,
    after: str,
    *,
    use_cache: bool = True,
    comm_pattern: str | None = None,
    per_step: bool = False,
    match: str = "exact",
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
    capture: list[str] | None = None,
    step_range: str | None = None,
) -> Comparison:
    """Load BEFORE and AFTER (in two threads: parsing releases the GIL) as a :class:`Comparison`.

    ``capture``: graph captures (``--capture``) given to both sides; each side's replays are
    attributed through the captures that fit its graphs (a capture of the other side's graph fits
    none of this side's and is not used here), every capture read before anything is printed;
    ``step_range`` (``--step-range``): the NVTX ranges of an Nsight Systems export that are each
    side's steps."""
    from concurrent.futures import ThreadPoolExecutor

    from ..profiles.loading import load

    check_inputs(before, after)
    if match not in MATCH_MODES:
        raise ProfviewError(None, f"--match must be one of {', '.join(MATCH_MODES)}, not {match!r}")
    if not 0 <= tolerance_pct < math.inf:  # 1e400 is read as inf: no change would ever count
        raise ProfviewError(None, f"--tolerance must be a finite number, 0 or more, not {tolerance_pct}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(load, p, use_cache=use_cache, comm_pattern=comm_pattern, step_range=step_range)
            for p in (before, after)
        ]
        profiles = [f.result() for f in futures]
    if capture:
        for profile in profiles:
            profile.use_capture(capture, use_cache=use_cache)
            profile.check_captures()
    return Comparison(profiles[0], profiles[1], per_step=per_step, match=match, tolerance_pct=tolerance_pct)


def remember(comparison: Comparison) -> None:
    """Save the views each side computed in this process (see :func:`profview.profiles.loading.remember_views`)."""
    from ..profiles.loading import remember_views

    for which in SIDES:
        remember_views(comparison.side(which))
