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


#: Each field's pattern, led by the literal that a text must hold for the pattern to match.
FIELDS = {
    "sequence_number": (", seq = ", r", seq = ([0-9]{1,19})(?:,|$)"),
    "op_id": (", op_id = ", r", op_id = ([0-9]{1,19})(?:,|$)"),
    "input_dims": (", sizes = [", r", sizes = (\[.*?\])(?:, input_op_ids = \[|$)"),
}


def parse_ranges(frame: pl.DataFrame, text: str) -> pl.DataFrame:
    """``frame`` with, from its range ``text`` column (no nulls): ``name`` (the text without the
    emit_nvtx fields), ``sequence_number``, ``op_id``, ``input_dims`` (the sizes as JSON text) and
    ``emit_nvtx`` (whether the text carried any of those fields, PyTorch's mark).  Each field is
    one literal-led pattern (no capture of the whole text), linear in the text's length, and is
    looked for only where some text holds its literal (one scan for it, much cheaper than the
    pattern's): ranges that are not PyTorch's cost one pass each."""
    column = pl.col(text)
    present = frame.select(
        *(column.str.contains(literal, literal=True).any().alias(field) for field, (literal, _) in FIELDS.items()),
        column.str.contains(", input_op_ids = [", literal=True).any().alias("input_op_ids"),
    ).row(0, named=True)
    fields = [
        (column.str.extract(pattern, 1) if present[field] else pl.lit(None, pl.String())).alias(field)
        for field, (_, pattern) in FIELDS.items()
    ]
    parsed = frame.with_columns(
        column.str.replace(FIELDS_START, "").alias("name") if any(present.values()) else column.alias("name"),
        *fields,
    )
    numbers = [pl.col(field).cast(pl.Int64, strict=False) for field in ("sequence_number", "op_id")]
    return parsed.with_columns(*(number.name.keep() for number in numbers)).with_columns(
        pl.any_horizontal(pl.col(field).is_not_null() for field in FIELDS).alias("emit_nvtx")
    )
