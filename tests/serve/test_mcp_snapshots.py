"""profview mcp on PyTorch memory snapshots: each tool answers a snapshot as the CLI does.

A snapshot is a profile of its own kind (not a trace), so every tool routes it by content as the
CLI does: ``summary`` is ``summary SNAP --format json``, ``view`` is ``export SNAP --view V``,
``query``/``tables`` see the snapshot's tables, ``diff`` and ``gate`` compare two snapshots.
Witnesses: the CLI's own JSON for the same file, and the raw pickle read by the test's own
no-globals loader for the count of segments.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from support import SAMPLES, SHARED, run_cli, sample

pytest.importorskip("mcp", reason="profview mcp's tests need the MCP SDK: pip install -e '.[dev]'")

from mcp_calls import call, cli_stdout

from profview.serve.roots import Roots
from profview.serve.server import build_server

SNAP = "magma27_memory_snapshot.pickle"
SNAPS = SHARED / "formats" / "memory-snapshots"
PAIR = (
    "wedsonlin__medium_512_inference_memory_snapshot.pickle",
    "wedsonlin__medium_1024_inference_memory_snapshot.pickle",
)
needs_shared = pytest.mark.skipif(not SNAPS.is_dir(), reason="../shared/formats/memory-snapshots is absent")


class NoGlobals(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def raw_segments(path: Path) -> int:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        return len(NoGlobals(fh).load()["segments"])


@pytest.fixture(scope="module")
def samples_server():  # type: ignore[no-untyped-def]
    return build_server(Roots.of([str(SAMPLES)]), timeout_s=600)


def test_summary_of_a_snapshot_is_the_cli_document(samples_server: Any) -> None:
    path = str(sample(SNAP))
    error, answer = call(samples_server, "summary", {"path": path, "top": 5})
    code, printed = cli_stdout(["summary", path, "--format", "json", "--top", "5"])
    assert not error, answer
    assert code == 0 and answer == json.loads(printed)
    assert answer["schema"] == "profview.memory-snapshot/1"
    assert answer["segments"] == raw_segments(sample(SNAP))


def test_view_of_a_snapshot_is_the_cli_export(samples_server: Any, tmp_path: Path) -> None:
    path = str(sample(SNAP))
    error, answer = call(samples_server, "view", {"path": path, "view": "sites", "top": 1000})
    out = tmp_path / "sites.json"
    assert run_cli(["export", path, "--view", "sites", "-o", str(out)]) == 0
    assert not error, answer
    rows = [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]
    assert rows == json.loads(out.read_text()) and rows


def test_query_sees_a_snapshots_tables(samples_server: Any) -> None:
    path = str(sample(SNAP))
    error, answer = call(samples_server, "query", {"paths": [path], "sql": "SELECT COUNT(*) AS n FROM segments"})
    assert not error, answer
    assert answer["rows"] == [[raw_segments(sample(SNAP))]]
    error, listed = call(samples_server, "tables", {"paths": [path]})
    assert not error and {"segments", "blocks", "sites", "peak"} <= {t["name"] for t in listed["tables"]}


def test_drill_on_a_snapshot_is_one_line(samples_server: Any) -> None:
    error, text = call(samples_server, "drill", {"path": str(sample(SNAP)), "kernel": "x"})
    assert error and "memory snapshot has no kernels" in text and "\n" not in text.strip()


@needs_shared
def test_diff_and_gate_of_two_snapshots_are_the_clis() -> None:
    server = build_server(Roots.of([str(SNAPS)]), timeout_s=600)
    # the server answers for the resolved file (its roots are resolved: ../shared may be a link)
    a, b = (os.path.realpath(SNAPS / name) for name in PAIR)
    error, answer = call(server, "diff", {"before": a, "after": b, "view": "sites", "top": 1000})
    assert not error, answer
    rows = [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]
    assert rows
    rules = ["totals.allocated_bytes > +10%", 'sites["nothing-matches-this"].bytes > +5%']
    error, document = call(server, "gate", {"before": a, "after": b, "rules": rules})
    code, printed = cli_stdout(["diff", a, b, *(x for r in rules for x in ("--fail-if", r)), "--format", "json"])
    assert not error, document
    assert document == json.loads(printed) and code == (1 if document["verdict"] == "regression" else 0)
    assert document["schema"] == "profview.snapshot-gate/1" and document["tested"] == 2
    empty = document["findings"][1]
    assert empty["note"] and "matches no site" in empty["note"] and empty["change_pct"] is None


@needs_shared
def test_a_snapshot_selector_runs_in_the_engine() -> None:
    """A look-around (which Python's re runs and Polars' linear engine does not) is one line."""
    a, b = (str(SNAPS / name) for name in PAIR)
    code, _ = cli_stdout(["diff", a, b, "--fail-if", 'sites["(?=x)y"].bytes > +5%'])
    assert code == 2
