"""An Nsight Systems export opened read-only: its tables and columns, and queries read in batches.

The database is opened with ``mode=ro`` and ``immutable=1``: SQLite then neither writes, creates a
journal nor takes a lock, so the export is left exactly as it was, even on a read-only disk or while
another process holds it.  Every SQLite failure (a truncated file, a page that is not a page)
becomes one :class:`ProfviewError` line naming the file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import polars as pl

from ...errors import ProfviewError
from ...sanitize import clean

#: Rows fetched from SQLite at a time: each batch becomes a Polars frame before the next is read,
#: so the Python objects of a 1 GB export never exist all at once.
BATCH_ROWS = 500_000


class Export:
    """One export, open for reading; ``tables`` maps each table's name to its columns."""

    def __init__(self, path: str) -> None:
        self.path = path
        uri = f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1"
        try:
            self.connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self.error(exc) from None
        self.tables: dict[str, tuple[str, ...]] = {}
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
            found = self.connection.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()
        except sqlite3.Error:
            return 0
        return int(found[0] or 0)

    def scalar_rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of a small query (metadata, names)."""
        try:
            return self.connection.execute(sql, parameters).fetchall()
        except sqlite3.Error as exc:
            raise self.error(exc) from None

    def frame(self, sql: str, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        """The rows of ``sql`` as a frame of ``schema`` (its columns in the query's order), read in
        batches of :data:`BATCH_ROWS`."""
        parts = list(self._batches(sql, schema))
        if not parts:
            return pl.DataFrame(schema=schema)
        return pl.concat(parts, rechunk=True) if len(parts) > 1 else parts[0]

    def _batches(self, sql: str, schema: dict[str, pl.DataType]) -> Iterator[pl.DataFrame]:
        """:meth:`frame`'s batches."""
        try:
            cursor = self.connection.execute(sql)
            while True:
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
