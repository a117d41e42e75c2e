"""A loaded profile: the one object the CLI, the viewer, exports and notebooks read.

A trace profile computes its views from the events frame (lazily, once each); a profile read
from a text table carries the views its format provides.  Either way every figure comes from
:mod:`profview.analysis`, so the CLI, the viewer and exports agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import polars as pl

from .analysis.events import gpu_work
from .analysis.kernels import kernel_table
from .errors import ProfviewError

if TYPE_CHECKING:
    from .analysis.model import TraceModel
    from .analysis.overview import Overview

# The model-based analysis modules (NumPy, the call tree) are imported where they are first
# needed, so that a kernel table from a cached trace starts with Polars alone.

VIEWS = ("kernels", "ops", "steps", "launches")


@dataclass
class Profile:
    """One profile.  ``events`` is set for traces; ``tables`` holds views given by text formats.

    ``missing`` maps a view that this profile cannot provide to the reason, shown to the user.
    ``comm_pattern`` (``--comm-pattern``) is a regex naming more kernels as communication (see
    :mod:`profview.analysis.communication`); every view that counts communication reads it, and
    the views computed from it are cached per pattern, so changing it never shows stale figures.
    """

    path: str
    format: str
    events: pl.DataFrame | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    truncated: bool = False
    runs: list[str] = field(default_factory=list)
    run: str | None = None
    comm_pattern: str | None = None
    _by_pattern: dict[tuple[str, str | None], Any] = field(default_factory=dict, init=False, repr=False)

    # -- derived ---------------------------------------------------------------------------
    @cached_property
    def model(self) -> TraceModel:
        """The linked trace model (traces only)."""
        if self.events is None:
            raise ProfviewError(self.path, f"{self.format} has no trace events")
        from .analysis.model import build_model

        return build_model(self.events, self.gpu)

    @cached_property
    def gpu(self) -> pl.DataFrame:
        """GPU work of a trace, without the links to operators (enough for kernel tables)."""
        if self.events is None:
            raise ProfviewError(self.path, f"{self.format} has no trace events")
        return gpu_work(self.events)

    @cached_property
    def _operator_rows(self) -> pl.DataFrame:
        from .analysis.operators import operator_rows

        return operator_rows(self.model)

    @property
    def _steps(self) -> pl.DataFrame:
        key = ("steps", self.comm_pattern)
        if key not in self._by_pattern:
            from .analysis.steps import step_table

            self._by_pattern[key] = step_table(self.model, self.comm_pattern)
        return self._by_pattern[key]

    def communication(self) -> pl.DataFrame:
        """GPU work with ``backend`` and ``collective_name`` (null: not communication), per event."""
        key = ("communication", self.comm_pattern)
        if key not in self._by_pattern:
            from .analysis.communication import classify_communication

            backend = (self.metadata.get("distributedInfo") or {}).get("backend")
            self._by_pattern[key] = classify_communication(
                self.gpu, self.comm_pattern, backend if isinstance(backend, str) else None
            )
        return self._by_pattern[key]

    def available(self, view: str) -> bool:
        """Whether this profile can show ``view``."""
        return view not in self.missing and (self.events is not None or view in self.tables)

    def _require(self, view: str) -> pl.DataFrame | None:
        if view in self.missing:
            raise ProfviewError(self.path, self.missing[view])
        if self.events is None:
            if view not in self.tables:
                raise ProfviewError(self.path, f"a {self.format} has no {view} view")
            return self.tables[view]
        return None

    def _window(self, step: int | None) -> tuple[float, float] | None:
        if step is None:
            return None
        rows = self._steps.filter(pl.col("step") == step)
        if rows.height == 0:
            raise ProfviewError(self.path, f"no step {step} (steps: {self.step_numbers()})")
        start = float(rows["start_us"][0]) + self.model.span_start
        return start, start + float(rows["duration_us"][0])

    def step_numbers(self) -> list[int]:
        """The ProfilerStep numbers of a trace."""
        return [s for s in self.steps()["step"].to_list() if s is not None and s >= 0]

    # -- views -----------------------------------------------------------------------------
    def kernels(self, by_shape: bool = False, step: int | None = None) -> pl.DataFrame:
        """The kernel table (see :func:`profview.analysis.kernels.kernel_table`)."""
        given = self._require("kernels")
        if given is not None:
            return given
        gpu = self.gpu
        window = self._window(step)
        if window:
            gpu = gpu.filter(pl.col("ts").is_between(window[0], window[1], closed="left"))
        return kernel_table(gpu, by_shape)

    def ops(self, by_shapes: bool = False, step: int | None = None) -> pl.DataFrame:
        """The operator table (see :func:`profview.analysis.operators.operator_table`)."""
        given = self._require("ops")
        if given is not None:
            return self.tables.get("ops_by_shapes", given) if by_shapes else given
        rows = self._operator_rows
        unattributed = self.model.gpu.filter(pl.col("op_row").is_null())
        window = self._window(step)
        if window:
            rows = rows.filter(pl.col("ts").is_between(window[0], window[1], closed="left"))
            unattributed = unattributed.filter(pl.col("ts").is_between(window[0], window[1], closed="left"))
        from .analysis.operators import operator_table

        return operator_table(rows, unattributed, by_shapes)

    def steps(self) -> pl.DataFrame:
        """The step breakdown (see :func:`profview.analysis.steps.step_table`)."""
        given = self._require("steps")
        return given if given is not None else self._steps

    def launches(self, op: str) -> pl.DataFrame:
        """GPU work launched by operator ``op``, directly or through its children."""
        given = self._require("launches")
        if given is not None:
            return given.filter(pl.col("op") == op).drop("op") if "op" in given.columns else given
        from .analysis.launches import op_launches

        return op_launches(self.model, op)

    def kernel_launches(self, kernel: str) -> pl.DataFrame:
        """The operator chains and Python stacks that launched kernel ``kernel``."""
        given = self._require("launches")
        if given is None:
            from .analysis.launches import kernel_launches

            return kernel_launches(self.model, kernel)
        rows = given.filter(pl.col("name") == kernel)  # a format's operator → kernel tree, read backwards
        total = float(rows["total_us"].sum() or 0.0)
        return rows.select(
            "op",
            pl.col("op").alias("op_chain"),
            pl.lit("").alias("python_stack"),
            "calls",
            "total_us",
            "mean_us",
            "min_us",
            "max_us",
            (pl.col("total_us") / total * 100.0 if total else pl.lit(None, dtype=pl.Float64)).alias("pct"),
        )

    def overview(self) -> Overview:
        """Devices, span, GPU busy time and the average step (traces only)."""
        from .analysis.overview import build_overview

        return build_overview(self.model, self.steps(), self.kernels(), self.metadata, self.communication())
