"""Before any verdict: are the two sides the same kind of run?  Device and count, CUDA/ROCm and
driver versions, the profiler's flags, world size (trace metadata), step counts, and the share of
GPU kernel time in names that only one side ran.  A difference in device, device count, world
size or profiler flags, or too much time in names on one side only, makes the sides
``incomparable``; other differences (versions, step counts) are listed as notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ..profiles.trace_profile import Profile

PROFILER_FLAGS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
VERSIONS = ("cuda_runtime_version", "cuda_driver_version", "hip_runtime_version", "rocm_version", "cupti_version")
#: Above this share (%) of either side's kernel time in names the other side never ran, the two are
#: different workloads, not two runs of one.
MAX_ONE_SIDE_PCT = 50.0


@dataclass
class Check:
    """One row of the block: what, each side's value, and whether it blocks a verdict."""

    what: str
    before: str
    after: str
    same: bool
    blocking: bool


@dataclass
class Comparability:
    """The block: its checks, and why the sides are incomparable (empty: comparable)."""

    checks: list[Check] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return not self.reasons


def _values(profiles: list[Profile], read: Any) -> str:
    found = sorted({str(read(p)) for p in profiles})
    return found[0] if len(found) == 1 else "mixed: " + ", ".join(found)


def _devices(p: Profile) -> str:
    props = p.metadata.get("deviceProperties") or []
    names = [str(d.get("name")) for d in props if isinstance(d, dict)]
    return f"{len(names)} x {names[0]}" if names and len(set(names)) == 1 else (", ".join(names) or "not recorded")


def _world(p: Profile) -> str:
    info = p.metadata.get("distributedInfo") or {}
    return str(info.get("world_size", "not recorded")) if isinstance(info, dict) else "not recorded"


def _flags(p: Profile) -> str:
    return ", ".join(f"{f}={p.metadata[f]}" for f in PROFILER_FLAGS if f in p.metadata) or "not recorded"


def one_side_shares(before: pl.DataFrame, after: pl.DataFrame) -> tuple[float, float]:
    """% of before's kernel µs in names after never ran, and of after's in names before never ran
    (``before``/``after``: per-step kernel samples, every capture's)."""

    def share(side: pl.DataFrame, other: pl.DataFrame) -> float:
        total = float(side["total_us"].sum() or 0.0)
        if total <= 0:
            return 0.0
        alone = side.filter(~pl.col("name").is_in(other["name"].unique().to_list()))
        return float(alone["total_us"].sum() or 0.0) / total * 100

    return share(before, after), share(after, before)


def compare_sides(
    before: list[Profile], after: list[Profile], kernels_before: pl.DataFrame, kernels_after: pl.DataFrame,
    *, max_one_side_pct: float = MAX_ONE_SIDE_PCT,
) -> Comparability:
    """The comparability block of two sides (see the module doc)."""
    block = Comparability()

    def check(what: str, read: Any, blocking: bool) -> None:
        b, a = _values(before, read), _values(after, read)
        same = b == a
        block.checks.append(Check(what, b, a, same, blocking and not same))
        if blocking and not same:
            block.reasons.append(f"{what} differs ({b} before, {a} after)")

    check("devices", _devices, True)
    check("world size", _world, True)
    check("profiler flags", _flags, True)
    for version in VERSIONS:
        if any(version in p.metadata for p in [*before, *after]):
            check(version, lambda p, v=version: p.metadata.get(v, "not recorded"), False)
    check("steps", lambda p: len(p.step_numbers()), False)
    check("captures", lambda _p: "", False)
    block.checks[-1] = Check("captures", str(len(before)), str(len(after)), len(before) == len(after), False)
    only_before, only_after = one_side_shares(kernels_before, kernels_after)
    worst = max(only_before, only_after)
    block.checks.append(
        Check("kernel time in names on one side only", f"{only_before:.1f}%", f"{only_after:.1f}%",
              worst == 0, worst > max_one_side_pct)
    )
    if worst > max_one_side_pct:
        block.reasons.append(
            f"{worst:.1f}% of one side's kernel time is in names the other never ran (limit {max_one_side_pct:g}%)"
        )
    return block
