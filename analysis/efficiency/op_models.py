"""Which operators the perf model sizes, and the model of each: one table from an operator's name
to the function that reads its recorded arguments (:mod:`.work.gemm`, :mod:`.work.attention`,
:mod:`.work.conv`, :mod:`.work.norm`, :mod:`.work.pointwise`, :mod:`.work.fused`,
:mod:`.work.triton`).  No I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

from .op_args import MAX_ARGUMENTS, Call, Work, checked_shape
from .work.attention import ATTENTION_OPS, attention_work
from .work.conv import CONV_OPS, conv_work
from .work.fused import FUSED_OPS, fused_work
from .work.gemm import GEMM_OPS, gemm_work
from .work.norm import NORM_OPS, norm_work
from .work.pointwise import POINTWISE, base_name, pointwise_work
from .work.triton import is_triton, triton_work

Model = Callable[[Call], Work | None]

MODELS: dict[str, Model] = {
    **dict.fromkeys(GEMM_OPS, gemm_work),
    **dict.fromkeys(ATTENTION_OPS, attention_work),
    **dict.fromkeys(CONV_OPS, conv_work),
    **dict.fromkeys(NORM_OPS, norm_work),
    **dict.fromkeys(FUSED_OPS, fused_work),
}


def model_of(name: str) -> Model | None:
    """The model of operator ``name``, or None when the perf model has none."""
    found = MODELS.get(name)
    if found is not None:
        return found
    if base_name(name) in POINTWISE:
        return pointwise_work
    if is_triton(name):
        return triton_work
    return None


def modeled(name: str) -> bool:
    """Whether the perf model sizes (or knows, and says why it cannot size) operator ``name``."""
    return model_of(name) is not None


def operator_work(
    name: str,
    input_dims: str | None,
    input_types: str | None,
    concrete: str | None,
    counted: tuple[float | None, float | None] | None = None,
) -> Work | None:
    """The work of one call of ``name`` from its recorded ``Input Dims``, ``Input type`` and
    ``Concrete Inputs`` (JSON text as the events frame holds them; ``counted``: a Triton host op's
    ``kernel_flop`` and ``kernel_num_gb``); None when unknown."""
    model = model_of(name)
    if model is None or not input_dims or not input_types:
        return None
    try:
        dims = json.loads(input_dims)
        types = json.loads(input_types)
        scalars = json.loads(concrete) if concrete else []
    except ValueError:
        return None
    if not isinstance(dims, list) or not isinstance(types, list) or not isinstance(scalars, list):
        return None
    if len(dims) > MAX_ARGUMENTS:
        return None
    call = Call(name, [checked_shape(d) for d in dims], types, scalars)
    try:
        work = triton_work(call, counted) if model is triton_work else model(call)
    except (IndexError, TypeError, ValueError, ZeroDivisionError, OverflowError, KeyError):
        return None  # a shape the trace recorded in some other way: no figure rather than a wrong one
    if work is None or work.flops is None:
        return work
    if not (0 <= work.flops < math.inf and work.bytes is not None and 0 < work.bytes < math.inf):
        return None  # negative or absurd dimensions (a damaged trace): no figure
    return work
