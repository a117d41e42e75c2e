"""Every rank's steps, kernels and collective-call frames, held as a few concatenated frames.

A job of N ranks has 3N small frames.  Held one by one they cost far more than their data: a rank's
three frames as a worker returns them take about 75 KB of heap for about 40 KB of data (the DLRM
ranks), and a kernel name that every rank ran is held once per rank.  :class:`RankFrames` takes
each rank's frames as they arrive and, every :data:`BATCH` ranks, concatenates the waiting ones into
one frame per (kind, schema) with an ``_index`` column, its text columns dictionary-encoded
(``Categorical``: a name repeated on every rank is held once).  A rank's frame is then a zero-copy
slice of its group with those columns decoded again: the frame the worker returned, column for
column and dtype for dtype.  Views over every rank (:meth:`RankFrames.stacked`) read the groups
themselves, never one frame per rank.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

#: The frames every rank has, by name.
KINDS = ("steps", "kernels", "calls")
#: The column that says which rank (by its position in the job) a row is of.
INDEX = "_index"
#: Ranks whose frames wait before they are concatenated into groups: the parent holds at most this
#: many ranks' frames one by one (about 75 KB each for the DLRM ranks).
BATCH = 64


@dataclass
class Group:
    """Some ranks' frames of one kind and one schema, concatenated: ``frame`` (with ``_index``, its
    ``text`` columns encoded), and where each rank's rows are in it."""

    frame: pl.DataFrame
    text: tuple[str, ...]
    rows: dict[int, tuple[int, int]] = field(default_factory=dict)  # index -> (first row, row count)

    def rank(self, index: int) -> pl.DataFrame:
        """The rank's frame as it was added (a slice of the group, its text columns decoded)."""
        start, length = self.rows[index]
        part = self.frame.slice(start, length).drop(INDEX)
        return part.with_columns(pl.col(name).cast(pl.String) for name in self.text) if self.text else part

    def decoded(self) -> pl.DataFrame:
        """The whole group with its text columns decoded (what is saved: plain Arrow text)."""
        return self.frame.with_columns(pl.col(name).cast(pl.String) for name in self.text)


class RankFrames:
    """The frames of a job's ranks, by the rank's position in the job (``index``)."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, dict[str, pl.DataFrame]]] = []
        self._groups: dict[str, list[Group]] = {kind: [] for kind in KINDS}
        self._where: dict[str, dict[int, Group]] = {kind: {} for kind in KINDS}

    def add(self, index: int, frames: dict[str, pl.DataFrame]) -> None:
        """Hold the frames of the rank at ``index`` (a frame of each of :data:`KINDS`)."""
        self._pending.append((index, {kind: frames[kind] for kind in KINDS}))
        if len(self._pending) >= BATCH:
            self._flush()

    def add_group(self, kind: str, table: pl.DataFrame, members: Iterable[int]) -> None:
        """Hold a saved group: ``table`` holds the rows of ranks ``members`` with an ``_index``
        column (a rank without rows has none); its text columns are encoded here."""
        members = list(members)
        if not table[INDEX].is_sorted():
            table = table.sort(INDEX, maintain_order=True)
        counts = dict(table.group_by(INDEX, maintain_order=True).len().iter_rows())
        rows: dict[int, tuple[int, int]] = {}
        start = 0
        for index in sorted(members):
            length = int(counts.pop(index, 0))
            rows[index] = (start, length)
            start += length
        if counts:
            raise ValueError("rows of ranks that are not members")
        self._hold(kind, table, rows)

    def frame(self, index: int, kind: str) -> pl.DataFrame:
        """The ``kind`` frame of the rank at ``index``."""
        self._flush()
        return self._where[kind][index].rank(index)

    def rank(self, index: int) -> dict[str, pl.DataFrame]:
        """The frames of the rank at ``index``, by kind."""
        return {kind: self.frame(index, kind) for kind in KINDS}

    def __contains__(self, index: int) -> bool:
        self._flush()
        return all(index in where for where in self._where.values())

    def groups(self, kind: str) -> list[Group]:
        """Every group of ``kind`` (each rank's rows are in exactly one)."""
        self._flush()
        return list(self._groups[kind])

    def stacked(self, kind: str, columns: Iterable[str], decode: bool = False) -> pl.DataFrame:
        """``columns`` of every rank's ``kind`` frame with ``_index``, in one frame, its text
        columns still encoded unless ``decode``: what a view over every rank reads."""
        wanted = [*columns, INDEX]
        parts = []
        for group in self.groups(kind):
            part = group.frame.select(c for c in wanted if c in group.frame.columns)
            text = [c for c in group.text if c in part.columns] if decode else []
            parts.append(part.with_columns(pl.col(c).cast(pl.String) for c in text) if text else part)
        if not parts:
            return pl.DataFrame(schema={INDEX: pl.Int32})
        return pl.concat(parts, how="diagonal_relaxed")

    def _flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        for kind in KINDS:
            by_schema: dict[tuple[tuple[str, pl.DataType], ...], list[tuple[int, pl.DataFrame]]] = {}
            for index, frames in pending:
                by_schema.setdefault(tuple(frames[kind].schema.items()), []).append((index, frames[kind]))
            for members in by_schema.values():
                rows: dict[int, tuple[int, int]] = {}
                start = 0
                for index, frame in members:
                    rows[index] = (start, frame.height)
                    start += frame.height
                table = pl.concat(
                    [frame.with_columns(pl.lit(index, dtype=pl.Int32).alias(INDEX)) for index, frame in members]
                )
                self._hold(kind, table, rows)

    def _hold(self, kind: str, table: pl.DataFrame, rows: dict[int, tuple[int, int]]) -> None:
        text = tuple(name for name, dtype in table.schema.items() if dtype == pl.String)
        encoded = table.with_columns(pl.col(name).cast(pl.Categorical) for name in text) if text else table
        group = Group(encoded.rechunk(), text, rows)
        self._groups[kind].append(group)
        for index in rows:
            self._where[kind][index] = group
