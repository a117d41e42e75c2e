"""The compiled column reader (``native/sqlite_columns.c``) gives the frame ``sqlite3`` gives: every
export's events are the same both ways, its tables equal plain ``sqlite3`` rows, and a value of the
wrong type or text that is not UTF-8 is one line naming the file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest
from nsys_witness import SAMPLE_EXPORTS, SHARED_EXPORTS, export_for_test, export_path

from profview.errors import ProfviewError
from profview.parsers.nsys import database
from profview.parsers.nsys.database import Export
from profview.parsers.nsys.reader import read_nsys

pytestmark = pytest.mark.skipif(database._sqlite_columns is None, reason="the compiled reader was not built")


_path = export_for_test


@pytest.mark.parametrize("name", (*SAMPLE_EXPORTS, *SHARED_EXPORTS))
def test_both_readers_give_the_same_events(
    name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _path(name, request)
    if path.suffix != ".sqlite":
        pytest.skip("not an export")
    monkeypatch.setattr(database, "COLUMNAR_ROWS", 10**12)  # every table through sqlite3
    batched = read_nsys(str(path))
    monkeypatch.setattr(database, "COLUMNAR_ROWS", -1)  # every table through the compiled reader
    columnar = read_nsys(str(path))
    assert columnar.events.height == batched.events.height > 0
    as_text = pl.col(pl.Categorical).cast(pl.String)  # categories are numbered in the order met
    assert columnar.events.with_columns(as_text).equals(batched.events.with_columns(as_text), null_equal=True)
    assert columnar.warnings == batched.warnings


@pytest.mark.parametrize("name", SAMPLE_EXPORTS)
def test_a_table_read_columnar_is_its_sqlite3_rows(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = export_path(name)
    monkeypatch.setattr(database, "COLUMNAR_ROWS", -1)
    sql = 'SELECT "start", "end", correlationId, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL'
    with sqlite3.connect(path) as db:
        rows = db.execute(sql).fetchall()
        names = db.execute("SELECT id, value FROM StringIds").fetchall()
    schema = {column: pl.Int64() for column in ("start", "end", "correlationId", "demangledName")}
    with Export(str(path)) as export:
        frame = export.frame(sql, schema, "CUPTI_ACTIVITY_KIND_KERNEL")
        strings = export.frame("SELECT id, value FROM StringIds", {"id": pl.Int64(), "value": pl.String()}, "StringIds")
    assert frame.rows() == rows and len(rows) > 0
    assert strings.rows() == names


def _database(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    return path


def test_a_value_of_the_wrong_type_and_nulls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "COLUMNAR_ROWS", -1)
    path = _database(
        tmp_path / "typed.sqlite",
        "CREATE TABLE t (a INTEGER, b TEXT)",
        "INSERT INTO t VALUES (NULL, NULL), (-9223372036854775808, ''), (9223372036854775807, 'é'), (3, NULL)",
    )
    with Export(str(path)) as export:
        frame = export.frame("SELECT a, b FROM t", {"a": pl.Int64(), "b": pl.String()}, "t")
        assert frame.rows() == [(None, None), (-(2**63), ""), (2**63 - 1, "é"), (3, None)]
        with pytest.raises(ProfviewError, match="wrong type"):
            export.frame("SELECT b, a FROM t", {"b": pl.Int64(), "a": pl.Int64()}, "t")
    _database(path, "INSERT INTO t VALUES (1.5, 'x')")
    with Export(str(path)) as export, pytest.raises(ProfviewError, match=r"wrong type.*column a"):
        export.frame("SELECT a FROM t", {"a": pl.Int64()}, "t")


def test_text_that_is_not_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(database, "COLUMNAR_ROWS", -1)
    path = _database(
        tmp_path / "bytes.sqlite", "CREATE TABLE t (b TEXT)", "INSERT INTO t VALUES (CAST(X'C328FF' AS TEXT))"
    )
    with Export(str(path)) as export, pytest.raises(ProfviewError, match=r"bytes\.sqlite"):
        export.frame("SELECT b FROM t", {"b": pl.String()}, "t")
