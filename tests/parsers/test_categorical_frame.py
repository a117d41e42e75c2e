"""The events frame's repeated text columns are Categorical (issue 25: a smaller frame), and they
read, count, export and display as the text of the trace (witness: the JSON read by the stdlib)."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from support import loaded, raw_events

from profview.compiled import compiled_module
from profview.parsers.schema import CATEGORICAL_COLUMNS, EVENT_SCHEMA
from profview.report.export import write_table
from profview.tui.widgets.table_view import display_frame

SAMPLE = "resnet50_train_amp.pt.trace.json.gz"


def test_events_frame_has_the_documented_categorical_columns() -> None:
    events = loaded(SAMPLE).events
    assert dict(events.schema) == EVENT_SCHEMA
    assert {c for c, dtype in events.schema.items() if dtype == pl.Categorical} == CATEGORICAL_COLUMNS
    assert events.schema["name"] == pl.String  # analyses use .str on it: kept as text


def test_categorical_columns_count_as_the_json_text() -> None:
    """Per-value counts of cat, ph, tid and grid equal the stdlib's count of the raw events."""
    events = loaded(SAMPLE).events
    raw = [e for e in raw_events(SAMPLE) if e.get("ph") is not None or e.get("cat") is not None]
    assert events.height == len(raw) == 46_510
    for column, value_of in {
        "cat": lambda e: e.get("cat"),
        "ph": lambda e: e.get("ph"),
        "tid": lambda e: None if e.get("tid") is None else str(e["tid"]),
        "grid": lambda e: None if "grid" not in e.get("args", {}) else str(e["args"]["grid"]),
    }.items():
        ours = dict(events.group_by(column).len().iter_rows())
        assert ours == Counter(value_of(e) for e in raw), column
    kernels = events.filter(pl.col("cat") == "kernel")
    assert kernels.height == sum(1 for e in raw if e.get("cat") == "kernel") == 1_899


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json"])
def test_exports_write_categorical_columns_as_text(tmp_path: Path, suffix: str) -> None:
    """The operator table by input shapes carries input_dims from the events (Categorical): every
    format writes it as text, the same text as the frame holds."""
    table = loaded(SAMPLE).ops(by_shapes=True)
    assert table.schema["input_dims"] == pl.Categorical
    target = tmp_path / f"ops{suffix}"
    write_table(table, str(target))
    if suffix == ".csv":
        back = pl.read_csv(target, infer_schema=False)
    elif suffix == ".parquet":
        back = pl.read_parquet(target)
    else:
        back = pl.read_json(io.BytesIO(target.read_bytes()))
    assert back.schema["input_dims"] == pl.String
    assert back["input_dims"].to_list() == table["input_dims"].cast(pl.String).to_list()
    assert back["input_dims"].drop_nulls().n_unique() == table["input_dims"].drop_nulls().n_unique() > 100


def test_categorical_text_is_made_inert_for_display() -> None:
    """An escape sequence in a Categorical column (a hostile trace's input_dims) is shown as ␛."""
    frame = pl.DataFrame({"input_dims": pl.Series(["[[1]]\x1b[2J", None], dtype=pl.Categorical)})
    assert display_frame(frame)["input_dims"].to_list() == ["[[1]]␛[2J", None]


@pytest.mark.skipif(compiled_module("_fastscan") is None, reason="the compiled scanner is not built")
def test_arrow_column_moves_the_buffer_once() -> None:
    """A scanned column handed to Polars as an Arrow array: its values, then an empty column."""
    scanner = compiled_module("_fastscan")
    assert scanner is not None
    data = bytearray(b'[{"ph":"X","ts":1.5,"dur":2},{"ph":"X","ts":4,"dur":3}]')
    rows, _after, _ended, _cut, floats, _ints, _texts = scanner.scan_events(data, 1, len(data))
    assert rows == 2

    class Arrow:
        def __init__(self, capsules: object) -> None:
            self.capsules = capsules

        def __arrow_c_array__(self, requested_schema: object = None) -> object:
            return self.capsules

    ts = floats["ts"]
    assert pl.Series(Arrow(scanner.arrow_column(ts, "g", rows))).to_list() == [1.5, 4.0]
    with pytest.raises(ValueError, match="no 2 values"):
        scanner.arrow_column(ts, "g", rows)  # moved: the column is empty now
    with pytest.raises(ValueError, match="no 3 values"):
        scanner.arrow_column(floats["dur"], "g", 3)
    with pytest.raises(ValueError, match="unknown Arrow format"):
        scanner.arrow_column(floats["dur"], "x", 1)
    # not taken by Polars: the capsules free the buffer themselves (ASan checks this)
    del ts
    scanner.arrow_column(floats["dur"], "g", rows)
