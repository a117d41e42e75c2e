"""Import hygiene: the commands that print or write never import the viewer's libraries, nor the
MCP SDK (only ``profview mcp`` does).

``profview summary``, ``export`` and ``query`` run in fresh interpreters (the only way to see what a run
imports), on a real sample; each must print its figures and leave Textual out of ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import sample

SCRIPT = """
import sys
from profview.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
viewer = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "textual_fastdatatable")
                or m.startswith("profview.tui"))
print("VIEWER-MODULES:", ",".join(viewer) or "none", file=sys.stderr)
sdk = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "mcp_types") or m.startswith("profview.serve"))
print("MCP-MODULES:", ",".join(sdk) or "none", file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["summary", "ddp_nccl_streams.pt.trace.json.gz"],
        ["export", "ddp_nccl_streams.pt.trace.json.gz", "--view", "ops", "-o", "-"],
        ["summary", "param_dlrm_8rank_v100.tar.gz", "--workers", "1"],
        ["query", "ddp_nccl_streams.pt.trace.json.gz", "-q", "SELECT name, calls FROM kernels", "-o", "-"],
    ],
)
def test_printing_commands_leave_textual_out(args: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    command, name, *rest = args
    env = {"PROFVIEW_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, command, str(sample(name)), *rest],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert "VIEWER-MODULES: none" in run.stderr, run.stderr[-2000:]
    assert "MCP-MODULES: none" in run.stderr, run.stderr[-2000:]  # the SDK only with profview mcp
    # and the command did its work: the figures are there
    if name.endswith(".tar.gz"):  # the straggler, as docs/jobs.md and HTA's figures have it
        assert "straggler: rank 5" in run.stdout, run.stdout[:500]
    elif command == "query":
        assert run.stdout.startswith("name,calls"), run.stdout[:200]
    elif command == "summary":
        assert "Top 10 kernels" in run.stdout, run.stdout[:500]
    else:
        assert run.stdout.startswith("name,"), run.stdout[:200]


def test_import_profview_loads_neither_polars_nor_textual() -> None:
    probe = "import sys, profview; print(sorted(m for m in ('polars', 'textual') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "[]", run.stdout + run.stderr


def test_mcp_without_the_sdk_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``profview mcp`` where the SDK is not installed (hidden from this interpreter): one line, exit 2."""
    hide = "import sys; sys.modules['mcp'] = None\n"
    run = subprocess.run(
        [sys.executable, "-c", hide + SCRIPT, "mcp"], capture_output=True, text=True, timeout=60,
        env={"PROFVIEW_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
    )
    lines = [line for line in run.stderr.splitlines() if "-MODULES:" not in line]
    assert lines == ["profview: error: profview mcp needs the MCP SDK: pip install 'profview[mcp]'"], run.stderr
