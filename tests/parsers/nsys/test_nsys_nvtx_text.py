"""PyTorch's emit_nvtx range text, written as ``torch/csrc/profiler/util.cpp`` ``getNvtxStr`` writes
it (here, from generated names, sequence numbers, op ids and shapes), parses back to those fields."""

from __future__ import annotations

import json

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profview.parsers.nsys.nvtx_text import parse_ranges

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda n: not any(marker in n for marker in (", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "))
)
shapes = st.lists(st.lists(st.integers(0, 2**40), max_size=4), max_size=4)


def get_nvtx_str(name: str, seq: int | None, op_id: int | None, sizes: list[list[int]] | None) -> str:
    """getNvtxStr's format: ``NAME[, seq = N][, op_id = N][, sizes = [[...]]]``."""
    text = name if seq is None else f"{name}, seq = {seq}"
    if op_id is not None:
        text += f", op_id = {op_id}"
    if sizes:
        text += ", sizes = [" + ", ".join("[" + ", ".join(str(d) for d in shape) + "]" for shape in sizes) + "]"
    return text


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(names, st.none() | st.integers(0, 2**62), st.none() | st.integers(1, 2**62), st.none() | shapes)
def test_emit_nvtx_text_parses_back(
    name: str, seq: int | None, op_id: int | None, sizes: list[list[int]] | None
) -> None:
    text = get_nvtx_str(name, seq, op_id, sizes)
    row = parse_ranges(pl.DataFrame({"text": [text]}), "text").row(0, named=True)
    assert row["name"] == name
    assert row["sequence_number"] == seq and row["op_id"] == op_id
    assert (json.loads(row["input_dims"]) if row["input_dims"] is not None else None) == (sizes or None)
    assert row["emit_nvtx"] == (seq is not None or op_id is not None or bool(sizes))
