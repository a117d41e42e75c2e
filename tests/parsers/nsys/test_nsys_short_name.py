"""A kernel's short name (nsys's ``shortName``, through ``StringIds``) is a column of the events
and of the kernel table, equal per demangled name to what plain ``sqlite3`` reads; an export
without the column has none (null, and said), and a Kineto trace's kernel table is unchanged."""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from nsys_witness import SAMPLE_EXPORTS, SHARED_EXPORTS, connect, export_for_test, short_names
from support import SAMPLES

import profview
from profview.frames import KERNEL_COLUMNS

ALL = (*SAMPLE_EXPORTS, *SHARED_EXPORTS)


@pytest.mark.parametrize("name", ALL)
def test_the_kernel_table_keeps_each_kernels_short_name(name: str, request: pytest.FixtureRequest) -> None:
    path = export_for_test(name, request)
    witness = short_names(path)
    table = profview.load(path, use_cache=False).kernels()
    assert table.columns == [*KERNEL_COLUMNS, "short_name"]
    assert dict(zip(table["name"], table["short_name"], strict=True)) == witness
    assert any(short is not None for short in witness.values())


@pytest.mark.parametrize("name", ALL)
def test_every_kernel_event_has_its_own_short_name(name: str, request: pytest.FixtureRequest) -> None:
    path = export_for_test(name, request)
    with connect(path) as db:
        expected = Counter(
            row
            for row in db.execute(
                "SELECT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                "JOIN StringIds AS d ON d.id = k.demangledName LEFT JOIN StringIds AS s ON s.id = k.shortName"
            )
        )
    events = profview.load(path, use_cache=False).events
    assert events is not None
    kernels = events.filter(pl.col("kind") == "kernel").select("name", pl.col("short_name").cast(pl.String))
    assert Counter(kernels.iter_rows()) == expected
    others = events.filter(pl.col("kind") != "kernel")
    assert others["short_name"].null_count() == others.height


def test_an_export_without_short_names_has_none(tmp_path: Path) -> None:
    copy = tmp_path / "no_short_name.sqlite"
    shutil.copyfile(SAMPLES / "nsys_saxpy_mpi_a100_2022.sqlite", copy)
    with sqlite3.connect(copy) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName")
    profile = profview.load(copy, use_cache=False)
    assert profile.events is not None
    assert profile.events.filter(pl.col("kind") == "kernel")["short_name"].null_count() > 0
    assert profile.events["short_name"].null_count() == profile.events.height
    assert profile.kernels().columns == list(KERNEL_COLUMNS)  # unknown: no column of nulls beside the name
    assert any("CUPTI_ACTIVITY_KIND_KERNEL: shortName" in warning for warning in profile.warnings)


def test_a_kineto_trace_has_no_short_name_column() -> None:
    trace = next(path for path in sorted(SAMPLES.glob("*.json*")) if "gpt2" in path.name)
    profile = profview.load(trace, use_cache=False)
    assert profile.events is not None
    assert profile.events["short_name"].null_count() == profile.events.height
    assert profile.kernels().columns == list(KERNEL_COLUMNS)
