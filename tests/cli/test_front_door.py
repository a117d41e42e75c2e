"""The command line a newcomer types first: options before the path, ``--help`` whole, ``--step N``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import SAMPLES, run_cli

from profview.cli.app import COMMANDS, command
from profview.cli.boundary import with_command

TRACE = str(SAMPLES / "resnet50_train_amp.pt.trace.json.gz")


def profview(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": str(columns), "PROFVIEW_CACHE_DIR": "/tmp/profview-front-cache"}
    code = "import sys; from profview.cli import main; main(sys.argv[1:])"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["T"], ["open", "T"]),
        (["--no-cache", "T"], ["open", "--no-cache", "T"]),
        (["--capture", "C", "T", "--step", "3"], ["open", "--capture", "C", "T", "--step", "3"]),
        (["summary", "T"], ["summary", "T"]),
        (["--help"], ["--help"]),
        (["--version"], ["--version"]),
        ([], []),
    ],
)
def test_the_viewer_is_the_command_a_line_names_none(args: list[str], expected: list[str]) -> None:
    assert with_command(args) == expected


def test_an_option_before_the_path_reaches_the_viewer(capsys: pytest.CaptureFixture[str]) -> None:
    """``profview --no-cache T --step x`` is the viewer's own check of --step (said before the viewer
    takes the terminal), not click's "No such option: --no-cache"."""
    assert run_cli(["--no-cache", TRACE, "--step", "x"]) == 2
    err = capsys.readouterr().err
    assert "No such option" not in err
    assert "--step in the viewer: one trace's step number" in err and "'x'" in err


def test_step_and_iteration_together_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli([TRACE, "--step", "3", "--iteration", "0"]) == 2
    assert "not with --iteration" in capsys.readouterr().err


def test_help_lists_each_command_whole_at_80_columns() -> None:
    done = profview("--help")
    assert done.returncode == 0, done.stderr
    listed = " ".join(done.stdout.split("Commands:", 1)[1].split())
    assert "..." not in done.stdout.split("Commands:", 1)[1]
    for name in COMMANDS:
        doc = command(name).__doc__ or ""
        first = " ".join(doc.strip().split("\n\n", 1)[0].split())
        assert f"{name} {first}" in listed, name
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
