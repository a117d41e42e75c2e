"""The viewer with its output piped (``profview T | less``, ``profview diff A B > out``) is one line
and exit 2, nothing on stdout: it wrote the app's escape sequences into the pipe, and ended in an
internal error when the pipe's reader stopped it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import ROOT, SAMPLES


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (["resnet50_train_amp.pt.trace.json.gz"], "summary"),
        (["diff", "hta_diff_control_a100.json.gz", "hta_diff_test_v100.json.gz"], "--summary"),
        (["nccl_p2p_2rank"], "summary"),
        (["magma27_memory_snapshot.pickle"], "summary"),
    ],
)
def test_the_viewer_without_a_terminal_is_one_line(args: list[str], instead: str, tmp_path: object) -> None:
    command = [sys.executable, "-m", "profview", *(a if a == "diff" else str(SAMPLES / a) for a in args)]
    env = dict(os.environ, PROFVIEW_CACHE_DIR=str(tmp_path))
    done = subprocess.run(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "the viewer needs a terminal" in lines[0] and instead in lines[0]
