"""Bad Nsight Systems input: each case one line naming the file and the problem, exit 2, never a
traceback; a raw ``.nsys-rep`` gets the exact conversion; the export is never written or locked."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from nsys_witness import export_path
from support import run_cli

import profview
from profview.parsers.nsys.magic import NSYS_REPORT_MAGIC

MOCK = export_path("nsys_mock_rtx3080.sqlite")


def _database(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    return path


def _one_line(capsys: pytest.CaptureFixture[str], path: Path, *words: str) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("profview: error:") and path.name in lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_a_raw_report_gets_the_exact_conversion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "myrun.nsys-rep"
    shared = export_path("halfemptydrum__myrun.nsys-rep")
    report.write_bytes(shared.read_bytes() if shared.is_file() else NSYS_REPORT_MAGIC + b" 2026@1@2\n" + bytes(200))
    assert report.read_bytes().startswith(NSYS_REPORT_MAGIC)
    assert run_cli(["summary", str(report)]) == 2
    _one_line(capsys, report, "`nsys export --type sqlite -o myrun.sqlite myrun.nsys-rep`")


def test_a_truncated_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(MOCK.read_bytes()[:100_000])
    assert run_cli(["summary", str(cut)]) == 2
    _one_line(capsys, cut, "SQLite")


def test_a_header_and_nothing_else(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = tmp_path / "head.sqlite"
    head.write_bytes(b"SQLite format 3\x00" + b"\xff" * 84)
    assert run_cli(["summary", str(head)]) == 2
    _one_line(capsys, head, "SQLite")


def test_a_database_that_is_not_an_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = _database(tmp_path / "other.db", "CREATE TABLE accounts (id INTEGER, owner TEXT)")
    assert run_cli(["summary", str(other)]) == 2
    _one_line(capsys, other, "not an Nsight Systems export")


def test_an_export_without_stringids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = _database(tmp_path / "bare.sqlite", "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, demangledName)")
    assert run_cli(["summary", str(bare)]) == 2
    _one_line(capsys, bare, "StringIds")


def test_a_kernel_table_without_its_times(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = _database(
        tmp_path / "broken.sqlite",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (deviceId, demangledName)",
        "CREATE TABLE StringIds (id, value)",
    )
    assert run_cli(["summary", str(broken)]) == 2
    _one_line(capsys, broken, "CUPTI_ACTIVITY_KIND_KERNEL", "start, end")


def test_a_text_where_a_time_belongs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    typed = _database(
        tmp_path / "typed.sqlite",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, demangledName)",
        "CREATE TABLE StringIds (id, value)",
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('soon', 5, 1)",
    )
    assert run_cli(["summary", str(typed)]) == 2
    _one_line(capsys, typed, "wrong type")


def test_missing_columns_and_untimed_rows_are_said_not_dropped(tmp_path: Path) -> None:
    thin = _database(
        tmp_path / "thin.sqlite",
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, demangledName)",
        "CREATE TABLE StringIds (id, value)",
        "INSERT INTO StringIds VALUES (1, 'k')",
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 2010, 1), (NULL, 5, 1)",
    )
    profile = profview.load(thin, use_cache=False)
    text = " ".join(profile.warnings)
    assert "registersPerThread" in text and "1 rows of CUPTI_ACTIVITY_KIND_KERNEL have no start or end" in text
    assert profile.kernels()["calls"].to_list() == [1] and profile.kernels()["total_us"].to_list() == [2.0]


def test_a_read_only_export_is_left_unchanged_and_unlocked(tmp_path: Path) -> None:
    """Read while another connection holds an exclusive lock on it (immutable: no lock is asked
    for), from a read-only folder: the bytes and times are as before, no journal appears, and a
    writer can lock it at once afterwards."""
    folder = tmp_path / "ro"
    folder.mkdir()
    copy = folder / "run.sqlite"
    shutil.copyfile(MOCK, copy)
    before = (hashlib.sha256(copy.read_bytes()).hexdigest(), copy.stat().st_mtime_ns)
    writer = sqlite3.connect(copy, timeout=0)
    writer.execute("BEGIN EXCLUSIVE")
    copy.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        profile = profview.load(copy, use_cache=False)
        assert profile.kernels().height == 2
    finally:
        writer.rollback()
        writer.close()
        folder.chmod(stat.S_IRWXU)
        copy.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert (hashlib.sha256(copy.read_bytes()).hexdigest(), copy.stat().st_mtime_ns) == before
    assert sorted(os.listdir(folder)) == ["run.sqlite"]
    again = sqlite3.connect(copy, timeout=0)
    again.execute("BEGIN EXCLUSIVE")
    again.rollback()
    again.close()
