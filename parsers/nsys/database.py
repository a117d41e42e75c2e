"""An Nsight Systems export opened read-only: its tables and columns, and queries read in batches.

The database is opened with ``mode=ro`` and ``immutable=1``: SQLite then neither writes, creates a
journal nor takes a lock, so the export is left exactly as it was, even on a read-only disk or while
another process holds it.  Every SQLite failure (a truncated file, a page that is not a page)
becomes one :class:`ProfviewError` line naming the file.

A large table is read by the compiled reader (``native/sqlite_columns.c``) where it was built:
SQLite's values go straight into Arrow buffers, without the Python tuple per row that the
``sqlite3`` module builds (which costs more than SQLite's own work), and without the GIL, so the
tables of an export are read at once.  A small one, or an install without the compiled module,
goes through ``sqlite3`` in batches; both give the same frame.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import polars as pl

from ...compiled import compiled_module
from ...errors import ProfviewError
from ...sanitize import clean

_sqlite_columns = compiled_module("_sqlite_columns")  # None: every query goes through sqlite3

#: Rows fetched from SQLite at a time: each batch becomes a Polars frame before the next is read,
#: so the Python objects of a 1 GB export never exist all at once.
BATCH_ROWS = 500_000
#: A table with more rows than this (by its largest rowid) is read by the compiled reader, when
#: built: below it, importing pyarrow costs more than the reader saves.
COLUMNAR_ROWS = 100_000


def reads_at_once() -> int:
    """How many of an export's tables to read at once: one per core (at most 4, the large tables)
    with the compiled reader, which releases the GIL; one through ``sqlite3``, which holds it."""
    return min(4, os.cpu_count() or 1) if _sqlite_columns is not None else 1


class Export:
    """One export, open for reading; ``tables`` maps each table's name to its columns."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.uri = uri = f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1"
        try:
            self.connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self.error(exc) from None
        self.tables: dict[str, tuple[str, ...]] = {}
        #: The tables are read from several threads (:func:`reads_at_once`): one call on the
        #: connection at a time, whatever threading mode this SQLite was built with.
        self.lock = threading.Lock()
        try:
            names = [row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for name in names:
                info = self.connection.execute("SELECT name FROM pragma_table_info(?)", (name,)).fetchall()
                self.tables[name] = tuple(str(column[0]) for column in info)
        except sqlite3.Error as exc:
            self.close()
            raise self.error(exc) from None

    def error(self, exc: BaseException) -> ProfviewError:
        """The one line a failed read becomes."""
        return ProfviewError(self.path, f"could not read this SQLite database ({clean(exc)})")

    def has(self, table: str, *columns: str) -> bool:
        """Whether the export holds ``table`` with every one of ``columns``."""
        held = self.tables.get(table)
        return held is not None and all(column in held for column in columns)

    def rows_at_most(self, table: str) -> int:
        """An upper bound on ``table``'s rows, read from its largest rowid (no scan of the table)."""
        if table not in self.tables:
            return 0
        try:
            with self.lock:
                found = self.connection.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
        except sqlite3.Error:
            return 0
        return int(found[0] or 0)

    def scalar_rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a small query (metadata, names)."""
        try:
            with self.lock:
                return self.connection.execute(sql, parameters).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def frame(self, sql: str, schema: dict[str, pl.DataType], table: str | None = None) -> pl.DataFrame:
        """The rows of ``sql`` as a frame of ``schema`` (Int64 and String columns, in the query's
        order): by the compiled reader when ``table``, the one it reads, is large (module
        docstring), else read in batches of :data:`BATCH_ROWS`."""
        if _sqlite_columns is not None and table is not None and self.rows_at_most(table) > COLUMNAR_ROWS:
            return self._columnar(sql, schema)
        parts = list(self._batches(sql, schema))
        if not parts:
            return pl.DataFrame(schema=schema)
        return pl.concat(parts, rechunk=True) if len(parts) > 1 else parts[0]

    def _columnar(self, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        """:meth:`frame` by the compiled reader: its buffers wrapped as Arrow arrays, then Polars."""
        import pyarrow as pa

        assert _sqlite_columns is not None
        kinds = "".join("s" if dtype == pl.String() else "i" for dtype in schema.values())
        try:
            rows, buffers = _sqlite_columns.read(self.uri, sql, kinds)
        except OSError as exc:
            raise self.error(exc) from None
        except TypeError as exc:  # a value no column of its type holds
            raise ProfviewError(self.path, f"holds a value of the wrong type for its column ({clean(exc)})") from None
        arrays = []
        for kind, parts in zip(kinds, buffers, strict=True):
            if kind == "i":
                values, validity = parts
                arrays.append(pa.Array.from_buffers(pa.int64(), rows, [pa.py_buffer(validity), pa.py_buffer(values)]))
                continue
            offsets, data, validity = parts
            text = pa.Array.from_buffers(
                pa.large_string(), rows, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
            )
            try:
                text.validate(full=True)  # SQLite stores what it is given: UTF-8 is checked here
            except pa.ArrowInvalid as exc:
                raise self.error(exc) from None
            arrays.append(text)
        whole = pl.from_arrow(pa.Table.from_arrays(arrays, names=list(schema)), rechunk=False)
        assert isinstance(whole, pl.DataFrame)
        return whole.cast(schema)  # type: ignore[arg-type]

    def _batches(self, sql: str, schema: dict[str, pl.DataType]) -> Iterator[pl.DataFrame]:
        """:meth:`frame`'s batches."""
        try:
            with self.lock:
                cursor = self.connection.execute(sql)
            while True:
                with self.lock:
                    batch = cursor.fetchmany(BATCH_ROWS)
                if not batch:
                    return
                yield pl.DataFrame(batch, schema=schema, orient="row")
        except sqlite3.Error as exc:
            raise self.error(exc) from None
        except (OverflowError, TypeError, pl.exceptions.PolarsError) as exc:  # a value no column of its type holds
            first = str(exc).split(";")[0].split("\n")[0]
            raise ProfviewError(self.path, f"holds a value of the wrong type for its column ({clean(first)})") from None

    def close(self) -> None:
        """Close the connection (nothing was written, so nothing is flushed)."""
        self.connection.close()

    def __enter__(self) -> Export:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
