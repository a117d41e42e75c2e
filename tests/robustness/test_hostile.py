"""Hostile content stays inert: escape sequences, control characters, markup, bidi overrides,
spreadsheet formulas.  (The viewer side is in test_tui.py::test_hostile_names_are_shown_inert.)"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample

from profview.sanitize import clean

EVIL = "\x1b[2J\x1b]0;pwned\x07[bold red]boom[/] \u202eevil\x00\x08"


@pytest.fixture
def hostile_trace(tmp_path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": EVIL, "pid": 1, "tid": 1, "ts": 0, "dur": 10, "args": {"External id": 1}},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 1,
            "dur": 2,
            "args": {"External id": 1, "correlation": 9},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": '=HYPERLINK("http://x","y")',
            "pid": 0,
            "tid": 7,
            "ts": 3,
            "dur": 5,
            "args": {"External id": 1, "correlation": 9, "stream": 7, "device": 0},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": 'comma, "quoted"\nnewline ' + EVIL,
            "pid": 0,
            "tid": 7,
            "ts": 9,
            "dur": 1,
            "args": {"correlation": 10, "stream": 7, "device": 0},
        },
    ]
    target = tmp_path / "hostile.json"
    target.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0, "name": EVIL}]}))
    return target


def test_clean_shows_escapes_inert() -> None:
    shown = clean(EVIL)
    assert "\x1b" not in shown and "\x07" not in shown and "\x00" not in shown and "\u202e" not in shown
    assert shown.startswith("␛[2J␛]0;pwned\\x07[bold red]boom[/]")
    assert "\\u202eevil\\x00\\x08" in shown


def test_summary_output_is_inert(hostile_trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(hostile_trace), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "[bold red]boom[/]" in out  # markup printed as text, not interpreted
    assert "␛[2J" in out


def test_csv_neutralises_formulas_and_quotes(hostile_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "k.csv"
    assert run_cli(["export", str(hostile_trace), "-o", str(out), "--no-cache"]) == 0
    names = pl.read_csv(out)["name"].to_list()
    assert '\'=HYPERLINK("http://x","y")' in names
    assert 'comma, "quoted"\nnewline ' + EVIL in names  # quoted correctly: read back unchanged
    raw = tmp_path / "raw.csv"
    assert run_cli(["export", str(hostile_trace), "-o", str(raw), "--raw-formulas", "--no-cache"]) == 0
    assert '=HYPERLINK("http://x","y")' in pl.read_csv(raw)["name"].to_list()


def test_export_never_overwrites_the_input_or_leaves_partial_files(
    hostile_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = hostile_trace.read_bytes()
    assert run_cli(["export", str(hostile_trace), "-o", str(hostile_trace), "--force", "--no-cache"]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err
    assert hostile_trace.read_bytes() == before
    existing = tmp_path / "existing.csv"
    existing.write_text("precious")

    def fail(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pl.DataFrame, "write_csv", fail)
    assert run_cli(["export", str(hostile_trace), "-o", str(existing), "--force", "--no-cache"]) == 130
    assert existing.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.csv", "hostile.json"]


def test_export_keeps_the_mode_of_the_file_it_replaces(hostile_trace: Path, tmp_path: Path) -> None:
    import os
    import stat

    new = tmp_path / "new.csv"
    assert run_cli(["export", str(hostile_trace), "-o", str(new), "--no-cache"]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask  # not mkstemp's 0600
    new.chmod(0o640)
    assert run_cli(["export", str(hostile_trace), "-o", str(new), "--no-cache", "--force"]) == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o640


def test_export_to_a_directory_says_so(hostile_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out.csv"
    folder.mkdir()
    assert run_cli(["export", str(hostile_trace), "-o", str(folder), "--no-cache"]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = "import sys; from profview.cli import main; sys.argv[1:] = sys.argv[2:]; main()"
    command = [sys.executable, "-c", script, "x", "export", str(sample("gpt2_train_bf16.pt.trace.json.gz"))]
    proc = subprocess.Popen(
        [*command, "-v", "ops", "-o", "-", "--no-cache"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.wait(timeout=60)
    assert "Traceback" not in err


def test_csv_onto_a_terminal_is_inert(hostile_trace: Path) -> None:
    """``-o -`` on a terminal shows escapes as text; into a pipe or file the data stays exact."""
    import os
    import pty
    import sys

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execv(sys.executable, [sys.executable, "-m", "profview", "export", str(hostile_trace), "-o", "-"])
    out = b""
    while True:
        try:
            piece = os.read(fd, 65536)
        except OSError:
            break
        if not piece:
            break
        out += piece
    os.waitpid(pid, 0)
    text = out.decode()
    assert "name," in text and "\x1b" not in text and "\u202e" not in text and "\x07" not in text
