"""Convolution work (docs/efficiency.md).

Forward (``aten::convolution``: input, weight, bias, stride, padding, dilation, transposed,
output_padding, groups): FLOPs = 2·N·Cout·Hout·Wout·(Cin/groups)·kh·kw, + N·Cout·Hout·Wout for a
bias; bytes = input, weight, output (and bias).  Backward (``convolution_backward``: grad_output
first, then the forward's arguments, then output_mask) = 2 × the forward FLOPs without the bias;
bytes = grad_output, input, weight read, grad_input and grad_weight written.  Transposed
convolutions are refused.  No I/O.
"""

from __future__ import annotations

import math

from ..op_args import Call, Work, elem_size, numel, precision_of, refused

CONV_FORWARD = "aten::convolution"
CONV_BACKWARD = "aten::convolution_backward"
CONV_OPS = frozenset({CONV_FORWARD, CONV_BACKWARD})


def conv_work(call: Call) -> Work | None:
    """FLOPs and bytes of one convolution call, forward or backward (module doc)."""
    backward = call.name == CONV_BACKWARD
    offset = 1 if backward else 0
    if len(call.dims) < 3 + offset or len(call.concrete) < 9 + offset:
        return None
    x, w = call.tensor(offset), call.tensor(offset + 1)
    if x is None or w is None or len(x) < 3 or len(x) != len(w):
        return None
    stride = call.ints(3 + offset) or [1]
    padding = call.ints(4 + offset) or [0]
    dilation = call.ints(5 + offset) or [1]
    groups = (call.ints(8 + offset) or [1])[0]
    if call.flag(6 + offset):
        return refused("convolution", "a transposed convolution: not modelled")

    def at(values: list[int], i: int) -> int:
        return values[i] if i < len(values) else values[-1]

    spatial = len(x) - 2
    out_spatial = [
        (x[2 + i] + 2 * at(padding, i) - at(dilation, i) * (w[2 + i] - 1) - 1) // at(stride, i) + 1
        for i in range(spatial)
    ]
    if any(s <= 0 for s in out_spatial) or groups <= 0:
        return None
    out = x[0] * w[0] * math.prod(out_spatial)
    flops = 2.0 * out * (x[1] // groups) * math.prod(w[2:])
    size = elem_size(call.types[offset])
    params = (
        f"in={'x'.join(map(str, x))} w={'x'.join(map(str, w))} stride={','.join(map(str, stride))} "
        f"pad={','.join(map(str, padding))} groups={groups}"
    )
    if backward:
        nbytes = (out + 2 * numel(x) + 2 * numel(w)) * size
        return Work(2 * flops, float(nbytes), precision_of(call.types), "convolution", params)
    nbytes = (numel(x) + numel(w) + out) * size
    bias = call.tensor(2)
    if bias is not None:
        flops += out
        nbytes += call.tensor_bytes(2)
    params += f" bias={'yes' if bias is not None else 'no'}"
    return Work(flops, float(nbytes), precision_of(call.types), "convolution", params)
