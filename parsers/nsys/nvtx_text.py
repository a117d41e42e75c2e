"""PyTorch's ``emit_nvtx`` range text parsed into the operator's name, sequence number and shapes.

``torch.autograd.profiler.emit_nvtx`` names each range ``NAME[, seq = N][, op_id = N][, sizes =
[[...], ...]][, input_op_ids = [...]]`` (``torch/csrc/profiler/util.cpp``, ``getNvtxStr``): the
sequence number ties a forward operator to its backward, the sizes are the inputs' shapes, written
as Kineto writes ``Input Dims``.  Text that does not end in those fields is a name as it stands.
"""

from __future__ import annotations

import polars as pl

#: Where the fields ``getNvtxStr`` appends begin: the name is the text before this.
FIELDS_START = r", (?:seq = [0-9]|op_id = [0-9]|sizes = \[|input_op_ids = \[).*$"


def parse_ranges(text: pl.Expr) -> list[pl.Expr]:
    """Expressions over range ``text``: ``name`` (the text without the emit_nvtx fields),
    ``sequence_number``, ``op_id``, ``input_dims`` (the sizes as JSON text) and ``emit_nvtx``
    (whether the text carried any of those fields, PyTorch's mark).  Each field is one
    literal-led pattern (no capture of the whole text), linear in the text's length."""
    seq = text.str.extract(r", seq = ([0-9]{1,19})(?:,|$)", 1).cast(pl.Int64, strict=False)
    op_id = text.str.extract(r", op_id = ([0-9]{1,19})(?:,|$)", 1).cast(pl.Int64, strict=False)
    sizes = text.str.extract(r", sizes = (\[.*?\])(?:, input_op_ids = \[|$)", 1)
    return [
        text.str.replace(FIELDS_START, "").alias("name"),
        seq.alias("sequence_number"),
        op_id.alias("op_id"),
        sizes.alias("input_dims"),
        (seq.is_not_null() | op_id.is_not_null() | sizes.is_not_null()).alias("emit_nvtx"),
    ]
