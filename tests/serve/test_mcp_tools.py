"""``profview mcp``: each tool through the SDK's own client, in process, answers what the CLI's JSON
says for the same input (``summary --format json``, ``query -q -o .json``, ``query --tables``,
``export --view -o .json``, ``diff --view -o .json``, the gate's ``--format json``); paths outside
the roots are refused, answers are bounded, errors are one line; one test runs the server as a
subprocess over stdio, as an MCP client does.

Witnesses: the CLI run in this process on the same files (its JSON parsed back), and the raw
JSON counted with the standard library for the kernel count."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import SAMPLES, run_cli, sample
from witness import raw_kernels

pytest.importorskip("mcp", reason="profview mcp's tests need the MCP SDK: pip install -e '.[dev]'")

from mcp import Client, StdioServerParameters
from mcp_calls import call, cli_stdout

from profview.serve.roots import Roots
from profview.serve.server import build_server

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
DDP = "ddp_nccl_streams.pt.trace.json.gz"
BEFORE, AFTER = "hta_diff_control_a100.json.gz", "hta_diff_test_v100.json.gz"


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    return build_server(Roots.of([str(SAMPLES)]), timeout_s=600)


def cli_json_rows(tmp_path: Path, args: list[str]) -> list[dict[str, Any]]:
    out = tmp_path / f"cli{len(list(tmp_path.iterdir()))}.json"
    assert run_cli([*args, "-o", str(out)]) == 0
    rows: list[dict[str, Any]] = json.loads(out.read_text())
    return rows


def as_dicts(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]


def test_the_tools_are_listed_read_only(server: Any) -> None:
    async def go() -> Any:
        async with Client(server) as client:
            return await client.list_tools()

    tools = {t.name: t for t in anyio.run(go).tools}
    assert set(tools) == {"summary", "tables", "query", "view", "drill", "diff", "gate"}
    assert all(t.annotations.read_only_hint for t in tools.values())


def test_summary_is_the_cli_document(server: Any) -> None:
    path = str(sample(GPT2))
    error, answer = call(server, "summary", {"path": path})
    code, printed = cli_stdout(["summary", path, "--format", "json"])
    assert not error and code == 0
    assert answer == json.loads(printed)
    assert answer["schema"] == "profview.summary/2" and answer["efficiency"]["mfu_pct"] > 0


def test_summary_of_a_job_is_the_cli_document(server: Any) -> None:
    path = str(sample("gloo_2rank"))
    error, answer = call(server, "summary", {"path": path, "top": 3})
    code, printed = cli_stdout(["summary", path, "--format", "json", "--top", "3"])
    assert not error and code == 0 and answer == json.loads(printed)


def test_query_is_the_cli_answer(server: Any, tmp_path: Path) -> None:
    sql = "SELECT name, calls, total_us FROM kernels ORDER BY total_us DESC, name"
    error, answer = call(server, "query", {"paths": [DDP], "sql": sql, "limit": 5})
    expected = cli_json_rows(tmp_path, ["query", str(sample(DDP)), "-q", sql])
    assert not error and answer["columns"] == ["name", "calls", "total_us"]
    assert as_dicts(answer) == expected[:5]
    assert answer["total_matched"] == len(expected) == len(raw_kernels(sample(DDP))) and answer["truncated"]


def test_tables_are_the_cli_listing(server: Any) -> None:
    error, answer = call(server, "tables", {"paths": [DDP]})
    code, printed = cli_stdout(["query", str(sample(DDP)), "--tables"])
    assert not error and code == 0
    listed: dict[str, list[str]] = {}
    current = ""
    for line in printed.splitlines():
        if not line.startswith(" "):
            current = line.split(":")[0]
            listed[current] = []
        elif not line.strip().startswith("(not in these inputs"):
            listed[current].append(line.split()[0])
    mine = {t["name"]: [c["name"] for c in t.get("columns", [])] for t in answer["tables"]}
    assert mine == listed and "meta" in mine and "step" in mine["events"]
    units = {c["name"]: c["unit"] for t in answer["tables"] if t["name"] == "kernels" for c in t["columns"]}
    assert units["total_us"] == "µs" and units["calls"] is None


def test_view_is_the_cli_export(server: Any, tmp_path: Path) -> None:
    path = str(sample(GPT2))
    error, answer = call(server, "view", {"path": path, "view": "kernels", "filter": "elementwise", "sort": "calls",
                                          "top": 4, "step": 3})
    expected = cli_json_rows(
        tmp_path, ["export", path, "--view", "kernels", "--filter", "elementwise", "--sort", "calls", "--step", "3"]
    )
    assert not error and as_dicts(answer) == expected[:4] and answer["total_matched"] == len(expected) > 4
    error, steps = call(server, "view", {"path": path, "view": "steps"})
    assert not error and as_dicts(steps) == cli_json_rows(tmp_path, ["export", path, "--view", "steps"])


def test_drill_is_the_cli_launches(server: Any, tmp_path: Path) -> None:
    path = str(sample(GPT2))
    error, answer = call(server, "drill", {"path": path, "op": "aten::mm"})
    expected = cli_json_rows(tmp_path, ["export", path, "--view", "launches", "--op", "aten::mm"])
    assert not error and as_dicts(answer) == expected and not answer["truncated"]
    error, back = call(server, "drill", {"path": path, "kernel": expected[0]["name"]})
    kernel = cli_json_rows(tmp_path, ["export", path, "--view", "launches", "--kernel", expected[0]["name"]])
    assert not error and as_dicts(back) == kernel
    error, text = call(server, "drill", {"path": path})
    assert error and "give one of kernel or op" in text


def test_diff_is_the_cli_export(server: Any, tmp_path: Path) -> None:
    error, answer = call(server, "diff", {"before": BEFORE, "after": AFTER, "view": "kernels", "top": 10})
    expected = cli_json_rows(tmp_path, ["diff", str(sample(BEFORE)), str(sample(AFTER)), "--view", "kernels"])
    assert not error and as_dicts(answer) == expected[:10] and answer["total_matched"] == len(expected)


def test_gate_is_the_cli_json(server: Any) -> None:
    rules = ["kernels.total_us > +5%"]
    error, answer = call(server, "gate", {"before": GPT2, "after": GPT2, "rules": rules})
    code, printed = cli_stdout(["diff", str(sample(GPT2)), str(sample(GPT2)), "--fail-if", rules[0],
                                "--format", "json"])
    expected = json.loads(printed)
    assert not error and code in (0, 1, 3)
    # the inputs are named as each was given (resolved by the server, as typed on the command line),
    # and each run took its own time
    for document in (answer, expected):
        document.pop("before", None), document.pop("after", None), document.pop("seconds", None)
    assert answer == expected and answer["verdict"] != "regression"


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("summary", {"path": "/etc/passwd"}, "outside the folders this server reads"),
        ("summary", {"path": "../README.md"}, "outside the folders this server reads"),
        ("summary", {"path": "*.json.gz"}, "a glob is not taken here"),
        ("summary", {"path": "no_such_trace.json.gz"}, "no such file"),
        ("query", {"paths": [DDP], "sql": "DROP TABLE kernels"}, "only SELECT"),
        ("query", {"paths": [DDP], "sql": "SELECT * FROM nowhere"}, "unknown table 'nowhere'"),
        ("query", {"paths": [DDP], "sql": "SELECT 1", "limit": -1}, "limit must be a whole number"),
        ("view", {"path": DDP, "view": "launches"}, "use the drill tool"),
        ("gate", {"before": DDP, "after": "/tmp", "rules": ["kernels.total_us > +5%"]}, "outside the folders"),
    ],
)
def test_errors_are_one_line(server: Any, tool: str, arguments: dict[str, Any], message: str) -> None:
    error, text = call(server, tool, arguments)
    assert error and message in text and "\n" not in text and "Traceback" not in text


def test_a_symbolic_link_out_of_the_root_is_refused(tmp_path: Path) -> None:
    """A link inside the root to a trace outside it: resolved, and refused."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    (outside / "t.json.gz").write_bytes(sample(DDP).read_bytes())
    os.symlink(outside / "t.json.gz", root / "link.json.gz")
    (root / "inside.json.gz").write_bytes(sample(DDP).read_bytes())
    server = build_server(Roots.of([str(root)]))
    error, text = call(server, "summary", {"path": "link.json.gz"})
    assert error and "outside the folders this server reads" in text
    error, answer = call(server, "summary", {"path": "inside.json.gz", "top": 1})
    assert not error and len(answer["kernels"]) == 1


def test_answers_are_bounded_in_rows_and_bytes(server: Any) -> None:
    """``limit`` past the ceiling is cut to it (10,000 rows), and rows past a megabyte of JSON are
    cut before that, said (``truncated``, ``total_matched``)."""
    error, answer = call(server, "query", {"paths": [GPT2], "sql": "SELECT ts FROM events", "limit": 1_000_000})
    assert not error and answer["truncated"] and answer["total_matched"] > 40_000
    assert len(answer["rows"]) == 10_000
    error, answer = call(server, "query", {"paths": [GPT2], "sql": "SELECT * FROM events", "limit": 1_000_000})
    assert not error and answer["truncated"] and answer["total_matched"] > 40_000
    assert 0 < len(answer["rows"]) < 10_000  # cut by bytes
    assert len(json.dumps(answer["rows"])) <= 1_000_000


def test_a_call_past_the_time_limit_is_an_error() -> None:
    server = build_server(Roots.of([str(SAMPLES)]), timeout_s=0.01, use_cache=False)
    error, text = call(server, "summary", {"path": "hta_diff_test_v100.json.gz"})
    assert error and "no answer within 0.01 s" in text


def test_stdio_subprocess(tmp_path: Path) -> None:
    """``profview mcp --root samples`` as a client starts it: over stdin/stdout, the summary tool's
    answer is the CLI's document."""
    env = {**os.environ, "PROFVIEW_CACHE_DIR": str(tmp_path / "cache")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "profview", "mcp", "--root", str(SAMPLES)], env=env, cwd=str(tmp_path)
    )

    async def go() -> Any:
        async with Client(params) as client:
            listed = await client.list_tools()
            result = await client.call_tool("summary", {"path": DDP, "top": 3})
            return [t.name for t in listed.tools], result

    names, result = anyio.run(go)
    assert "query" in names and not result.is_error
    code, printed = cli_stdout(["summary", str(SAMPLES / DDP), "--format", "json", "--top", "3"])
    expected = json.loads(printed)
    answer = result.structured_content
    assert answer["path"] == str(SAMPLES / DDP) and code == 0
    assert answer == expected
