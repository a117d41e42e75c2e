"""PyTorch's ``emit_nvtx`` range text parsed into the operator's name, sequence number and shapes.

``torch.autograd.profiler.emit_nvtx`` names each range ``NAME[, seq = N][, op_id = N][, sizes =
[[...], ...]][, input_op_ids = [...]]`` (``torch/csrc/profiler/util.cpp``, ``getNvtxStr``): the
sequence number ties a forward operator to its backward, the sizes are the inputs' shapes, written
as Kineto writes ``Input Dims``.  Text that does not end in those fields is a name as it stands.
"""

from __future__ import annotations

import polars as pl

#: The fields ``getNvtxStr`` appends, in its order, each optional, anchored at the end of the text.
EMIT_NVTX = (
    r"^(?P<name>.*?)"
    r"(?:, seq = (?P<seq>[0-9]{1,18}))?"
    r"(?:, op_id = (?P<op_id>[0-9]{1,18}))?"
    r"(?:, sizes = (?P<sizes>\[.*?\]))?"
    r"(?:, input_op_ids = (?P<input_op_ids>\[.*\]))?$"
)


def parse_ranges(text: pl.Expr) -> list[pl.Expr]:
    """Expressions over range ``text``: ``name`` (the text without the emit_nvtx fields),
    ``sequence_number``, ``op_id``, ``input_dims`` (the sizes as JSON text) and ``emit_nvtx``
    (whether the text carried an ``op_id`` or ``seq``, PyTorch's mark)."""
    fields = text.str.extract_groups(EMIT_NVTX)
    name = fields.struct.field("name")
    seq = fields.struct.field("seq").cast(pl.Int64, strict=False)
    op_id = fields.struct.field("op_id").cast(pl.Int64, strict=False)
    return [
        pl.coalesce(name, text).alias("name"),
        seq.alias("sequence_number"),
        op_id.alias("op_id"),
        fields.struct.field("sizes").alias("input_dims"),
        (seq.is_not_null() | op_id.is_not_null()).fill_null(False).alias("emit_nvtx"),
    ]
