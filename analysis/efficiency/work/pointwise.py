"""Pointwise work: elementwise operators, reductions, softmax and their backward (docs/efficiency.md).

FLOPs are a count per element (:data:`POINTWISE`): of the output for elementwise operators, of
the input for reductions and softmax.  Bytes are the tensor arguments read and the output
written, each in its own element type:

* a 0-dim tensor holds one element (``add_([], [])``, a step counter);
* an ``out=`` tensor (the recorded arguments beyond the operator's own, :data:`POINTWISE`'s
  arity) is written, not read, and gives the output its shape and type;
* otherwise the output of an in-place operator (``add_``), ``copy_``, ``fill_``, ``clamp`` … is its
  first argument's; an elementwise operator's is the broadcast of its inputs in PyTorch's promoted
  type (:mod:`~profview.analysis.efficiency.dtype_promotion`: ``mul(bf16, float)`` writes float); a
  reduction's has the input's
  shape without the reduced dims (``dim``/``keepdim`` read from Concrete Inputs), ``max.dim`` and
  ``argmax`` write int64 indices.

No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtype_promotion import category, result_type
from ..op_args import Call, Work, broadcast, elem_size, numel, precision_of, shape_text


@dataclass(frozen=True)
class Pointwise:
    """How one operator's work is counted: ``family``, FLOPs per element, ``arity`` (its own
    arguments: a tensor recorded after them is ``out=``) and ``output``: ``promote`` (broadcast
    of the inputs, promoted type), ``first`` (the first argument's shape and type), ``reduce``
    (the input's shape less the reduced dims), ``loss`` (``nll_loss``: :func:`nll_loss_work`)."""

    family: str
    per_element: float
    arity: int
    output: str


def _ops(names: str, spec: Pointwise) -> dict[str, Pointwise]:
    return {f"aten::{name}": spec for name in names.split()}


#: The pointwise operators (the trailing ``_`` of in-place ones dropped: they move the same data).
POINTWISE: dict[str, Pointwise] = {
    **_ops("add sub rsub", Pointwise("elementwise", 1.0, 3, "promote")),
    **_ops("mul div pow", Pointwise("elementwise", 1.0, 2, "promote")),
    **_ops("neg relu sigmoid tanh exp sqrt rsqrt reciprocal abs silu", Pointwise("elementwise", 1.0, 1, "promote")),
    **_ops("gelu", Pointwise("elementwise", 1.0, 2, "promote")),
    **_ops("clamp masked_fill", Pointwise("elementwise", 1.0, 3, "first")),
    **_ops("where", Pointwise("elementwise", 1.0, 3, "promote")),
    **_ops("copy", Pointwise("elementwise", 0.0, 3, "first")),
    **_ops("fill", Pointwise("elementwise", 0.0, 2, "first")),
    # backward of activations: one FLOP per element, as the binary operators (issue 33)
    **_ops("threshold_backward gelu_backward", Pointwise("elementwise", 1.0, 3, "promote")),
    **_ops("silu_backward sigmoid_backward tanh_backward", Pointwise("elementwise", 1.0, 2, "promote")),
    **_ops("sum mean", Pointwise("reduction", 1.0, 4, "reduce")),
    **_ops("amax amin max min argmax argmin", Pointwise("reduction", 1.0, 3, "reduce")),
    **_ops("_softmax _log_softmax", Pointwise("reduction", 5.0, 3, "first")),
    **_ops("_softmax_backward_data _log_softmax_backward_data", Pointwise("reduction", 4.0, 4, "first")),
    **_ops("nll_loss_forward", Pointwise("reduction", 1.0, 5, "loss")),
    **_ops("nll_loss_backward", Pointwise("reduction", 1.0, 7, "loss")),
}
#: ``nll_loss``'s ``reduction`` argument: 0 keeps one loss a row.
_NO_REDUCTION = 0
#: Operators whose result is an index (int64), beside the values for ``max``/``min`` over a dim.
INDEX_OUTPUT = frozenset({"aten::argmax", "aten::argmin"})
#: Elementwise operators whose result is floating even on integer inputs.
FLOAT_RESULT = frozenset(
    {"aten::div", "aten::sigmoid", "aten::tanh", "aten::exp", "aten::sqrt", "aten::rsqrt", "aten::reciprocal"}
)
_SHORT = {
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "long int": "int64",
    "long": "int64",
    "int": "int32",
    "bool": "bool",
}


def base_name(name: str) -> str:
    """``aten::add_`` → ``aten::add``: an in-place op moves the same data as its out-of-place form."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def dtype_text(dtype: str | None) -> str:
    """A short element type for the params column (``bf16``, ``fp32``, ``int64`` …)."""
    return _SHORT.get(dtype or "", (dtype or "?").replace("c10::", ""))


def _reduced(shape: list[int], call: Call) -> tuple[list[int], bool]:
    """A reduction's output shape, and whether it reduced over given dims (``max.dim``)."""
    axes = call.ints(1)
    if not axes or not shape:
        return [], False
    keep = call.flag(2)
    gone = {a % len(shape) for a in axes}
    return [1 if i in gone else d for i, d in enumerate(shape) if keep or i not in gone], True


def pointwise_work(call: Call) -> Work | None:
    """FLOPs and bytes of one pointwise call (module doc); None when it has no tensor argument."""
    base = base_name(call.name)
    spec = POINTWISE[base]
    if spec.output == "loss":
        return nll_loss_work(call, backward=base == "aten::nll_loss_backward")
    inputs = [(s, call.types[i]) for i in range(min(spec.arity, len(call.dims))) if (s := call.tensor(i)) is not None]
    extra = [i for i in range(spec.arity, len(call.dims)) if call.tensor(i) is not None]
    if not inputs:
        return None
    first, first_type = inputs[0]
    shapes = [s for s, _t in inputs]
    read = sum(numel(s) * elem_size(t) for s, t in inputs)
    indices = 0
    if base in ("aten::max", "aten::min") and len(inputs) > 1:  # max(a, b): the elementwise maximum
        out_shape, out_type = broadcast(shapes), result_type(inputs) or first_type
    elif spec.output == "reduce":
        out_shape, by_dim = _reduced(first, call)
        out_type = "long int" if base in INDEX_OUTPUT else first_type
        if base in ("aten::max", "aten::min") and by_dim:
            indices = numel(out_shape) * elem_size("long int")  # values and their indices
    elif spec.output == "first" or call.name != base:  # in place: the first argument is the output
        out_shape, out_type = first, first_type
        if base in ("aten::_softmax", "aten::_log_softmax") and call.flag(2):
            out_type = "float"  # half_to_float
    else:
        promoted = inputs[1:] if base == "aten::where" else inputs  # where's condition is no operand
        out_shape, out_type = broadcast(shapes), result_type(promoted) or first_type
        if base in FLOAT_RESULT and category(out_type) < 2:
            out_type = "float"
    if extra:  # out=: written, not read, and the output's shape and type
        out_shape, out_type = call.tensor(extra[-1]) or out_shape, call.types[extra[-1]]
    if base == "aten::copy":  # copy_(dst, src): reads src
        read = numel(shapes[1]) * elem_size(inputs[1][1]) if len(inputs) > 1 else 0
    elif base == "aten::fill":  # fill_(self, value): reads the value alone
        read = sum(numel(s) * elem_size(t) for s, t in inputs[1:])
    written = numel(out_shape) * elem_size(out_type) + indices
    counted = numel(first) if spec.output in ("reduce", "first") else numel(out_shape)
    params = f"in={shape_text(first)} out={shape_text(out_shape)} {dtype_text(out_type)}"
    return Work(spec.per_element * counted, float(read + written), precision_of(call.types), spec.family, params)


def nll_loss_work(call: Call, backward: bool) -> Work | None:
    """``nll_loss_forward(self, target, weight, reduction, ignore_index)``: one FLOP and one element
    of ``self`` read per row (the target class's), the target and weight read, the loss written
    (one a row without reduction).  ``nll_loss_backward(grad_output, self, target, weight,
    reduction, ignore_index, total_weight)``: one FLOP a row, the gradient of ``self`` written
    whole (zeros but the target classes), the rest read."""
    index = 1 if backward else 0
    logits, dtype = call.tensor(index), call.types[index] if index < len(call.types) else None
    if logits is None or dtype is None:
        return None
    rows = logits[0] if len(logits) > 1 else 1
    others = sum(call.tensor_bytes(i) for i in range(len(call.dims)) if i != index)
    if backward:
        nbytes = others + numel(logits) * elem_size(dtype)
    else:
        reduction = call.number(3)
        losses = rows if reduction is not None and int(reduction) == _NO_REDUCTION else 1
        nbytes = rows * elem_size(dtype) + others + losses * elem_size(dtype)
    params = f"rows={rows} classes={logits[-1] if logits else 1}"
    return Work(float(rows), float(nbytes), precision_of(call.types), "reduction", params)
