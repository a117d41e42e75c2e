"""One recorded operator call as the perf model reads it: its ``Input Dims``, ``Input type`` and
``Concrete Inputs`` (:class:`Call`), and what a model returns for it (:class:`Work`).

A tensor argument is a shape (a list, ``[]`` for a 0-dim tensor, which holds one element) with
an element type PyTorch names (``c10::BFloat16``, ``float`` ...); ``Scalar`` arguments and
``None`` (empty type) are not tensors.  No I/O.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from ...frames import MAX_RANK, count_of
from .device_peaks import DTYPE_BYTES, DTYPE_PRECISION

#: The most arguments a recorded call may have for a model to read it.
MAX_ARGUMENTS = 4096


@dataclass(frozen=True)
class Work:
    """One call's work: FLOPs and bytes moved (None: the call is of a known kind that the trace
    does not size, ``note`` says why), the precision its compute peak is read for, its family,
    and the model's parameters as the row shows them (``M=8944 N=2816 K=1024 …``)."""

    flops: float | None
    bytes: float | None
    precision: str | None
    family: str
    params: str = ""
    note: str | None = None


def refused(family: str, why: str, params: str = "") -> Work:
    """A call the model knows but cannot size from what the trace recorded: no figure, the reason."""
    return Work(None, None, None, family, params, why)


@dataclass(frozen=True)
class Call:
    """A call's recorded arguments, parsed: ``dims``, ``types`` and ``concrete`` (scalar values
    as text) are the trace's lists, position for position."""

    name: str
    dims: list[Any]
    types: list[Any]
    concrete: list[Any]

    def tensor(self, index: int) -> list[int] | None:
        """The shape of argument ``index`` if it is a tensor (``[]``: 0-dim), else None."""
        if index >= len(self.dims) or index >= len(self.types):
            return None
        shape, dtype = self.dims[index], self.types[index]
        return shape if is_tensor(shape, dtype) else None

    def dtype(self, index: int) -> str | None:
        """The element type of argument ``index`` if it is a tensor."""
        return self.types[index] if self.tensor(index) is not None else None

    def tensor_bytes(self, index: int) -> int:
        """Bytes of argument ``index`` (0 when it is no tensor)."""
        shape = self.tensor(index)
        return numel(shape) * elem_size(self.types[index]) if shape is not None else 0

    def flag(self, index: int, default: bool = False) -> bool:
        """A boolean scalar argument (``"True"``, ``"1"``); ``default`` when not recorded."""
        value = str(self.concrete[index]).strip() if 0 <= index < len(self.concrete) else ""
        if value in ("", "None"):
            return default
        return value.lower() in ("true", "1")

    def number(self, index: int) -> float | None:
        """A numeric scalar argument, None when not recorded."""
        value = self.concrete[index] if 0 <= index < len(self.concrete) else ""
        try:
            return float(value) if value not in ("", None, "None") else None
        except (TypeError, ValueError):
            return None

    def ints(self, index: int) -> list[int] | None:
        """An int-list scalar argument (``'[1, 1]'`` or ``'2'``), None when it is neither."""
        return int_list(self.concrete[index]) if 0 <= index < len(self.concrete) else None


def checked_shape(entry: Any) -> Any:
    """One ``Input Dims`` entry as the models may read it: a shape whose every dimension is a count
    (an int from 0 to 2^63 - 1, :func:`~profview.frames.count_of`; never a text, a bool or a float)
    and of at most :data:`~profview.frames.MAX_RANK` dimensions, or a list of such shapes (a tensor
    list); anything else that is a list is no shape (None).  Checked once, here, so no model
    multiplies a text (Python would repeat it) or works through 80,000 huge dimensions."""
    if not isinstance(entry, list):
        return entry
    if len(entry) > MAX_RANK * MAX_RANK:
        return None
    if all(isinstance(d, list) for d in entry) and entry:
        shapes = [checked_shape(d) for d in entry]
        return shapes if all(s is not None for s in shapes) else None
    if len(entry) > MAX_RANK:
        return None
    # A dimension is an int (a text such as "8" is no dimension: a model would repeat the text).
    if any(not isinstance(d, int) or isinstance(d, bool) or count_of(d) is None for d in entry):
        return None
    return entry


def numel(shape: Any) -> int:
    """Elements of a shape (``[]``: one, a 0-dim tensor); 0 for what is no shape."""
    return math.prod(shape) if isinstance(shape, list) and all(isinstance(d, int) for d in shape) else 0


def is_tensor(shape: Any, dtype: Any) -> bool:
    """Whether a recorded argument is a tensor: a shape list with an element type (0-dim included)."""
    return isinstance(shape, list) and isinstance(dtype, str) and dtype in DTYPE_BYTES


def elem_size(dtype: Any) -> int:
    """Bytes per element of a recorded element type (0 when unknown)."""
    return DTYPE_BYTES.get(dtype, 0) if isinstance(dtype, str) else 0


def precision_of(types: list[Any]) -> str | None:
    """The precision of the first floating-point tensor argument."""
    return next((DTYPE_PRECISION[t] for t in types if isinstance(t, str) and t in DTYPE_PRECISION), None)


def int_list(text: Any) -> list[int] | None:
    """``'[1, 1]'`` or ``'2'`` (a Concrete Inputs cell) → a list of ints; None when it is neither."""
    try:
        value = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return value
    return None


def broadcast(shapes: list[list[int]]) -> list[int]:
    """The broadcast shape of tensor shapes (numpy's rule)."""
    rank = max(len(s) for s in shapes)
    padded = [[1] * (rank - len(s)) + s for s in shapes]
    return [max(col) for col in zip(*padded, strict=True)] if rank else []


def shape_text(shape: list[int]) -> str:
    """``[8, 1024]`` → ``8x1024`` (a 0-dim shape is ``scalar``)."""
    return "x".join(str(d) for d in shape) if shape else "scalar"
