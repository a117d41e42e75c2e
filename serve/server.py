"""``profview mcp``: the tools of :mod:`.tools` served over MCP's stdio transport with the official
SDK (``pip install 'profview[mcp]'``), the one module of profview that imports it.

Each tool is read-only (annotated so), runs on a worker thread under the server's time limit
(``--timeout``; two at a time) and answers one JSON object; a problem is a tool error of one
line (profview's own message, sanitised), never a traceback.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from .. import __version__
from ..errors import ProfviewError
from ..sanitize import clean
from .limits import DEFAULT_TIMEOUT_S
from .roots import Roots
from .tools import Tools

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = (
    "profview reads GPU profiles (PyTorch/Kineto Chrome traces, profiler tables, jobs of rank traces) "
    "under the server's root folders. Start with summary(path); tables(paths) lists the SQL tables and "
    "their columns (units in the names: _us microseconds, _pct percent, _bytes bytes); query(paths, sql) "
    "answers Polars SQL; view/drill give one view's rows; diff and gate compare two profiles. Times in "
    "every table are microseconds from meta.trace_origin_us. Unknown figures are null, never 0."
)


def one_line(exc: BaseException) -> str:
    """An error as the CLI prints it: one sanitised line."""
    text = clean(str(exc)).replace("\n", " ")
    return text if len(text) <= 500 else text[:499] + "…"


def build_server(roots: Roots, timeout_s: float = DEFAULT_TIMEOUT_S, use_cache: bool = True) -> MCPServer:
    """The MCP server of the tools over ``roots`` (not yet running)."""
    tools = Tools(roots, use_cache=use_cache)
    limiter = anyio.CapacityLimiter(2)
    server = MCPServer(name="profview", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    async def call(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        method = getattr(tools, name)
        try:
            with anyio.fail_after(timeout_s):
                answer: dict[str, Any] = await anyio.to_thread.run_sync(
                    lambda: method(*args, **kwargs), limiter=limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            raise ToolError(f"no answer within {timeout_s:g} s (the server's --timeout)") from None
        except ProfviewError as exc:
            raise ToolError(one_line(exc)) from None
        except (OSError, MemoryError, ValueError, KeyError, TypeError) as exc:
            raise ToolError(f"{type(exc).__name__}: {one_line(exc)}") from None
        return answer

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def summary(path: str, capture: list[str] | None = None, top: int = 10) -> dict[str, Any]:
        """The summary of a trace, table file or job: the `profview summary PATH --format json` document
        (schema profview.summary/2 or profview.job-summary/1; docs/summary_json.md). capture: CUDA-graph
        capture traces, to attribute graph replays to operators. top: rows of each table."""
        return await call("summary", path, capture, top)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def tables(paths: list[str]) -> dict[str, Any]:
        """The SQL tables of traces or jobs: each table's name, what a row is, its columns with type and unit
        (as `profview query PATHS --tables`)."""
        return await call("tables", paths)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def query(paths: list[str], sql: str, limit: int = 100) -> dict[str, Any]:
        """One SQL SELECT (Polars SQL) over the tables of traces or jobs (as `profview query PATHS -q SQL`):
        {columns, rows, total_matched, truncated}, at most `limit` rows (up to 10,000)."""
        return await call("query", paths, sql, limit)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def view(
        path: str, view: str, filter: str | None = None, sort: str | None = None, top: int = 100,
        step: int | None = None, iteration: int | None = None,
    ) -> dict[str, Any]:
        """One view's rows (as `profview export PATH --view VIEW -o .json`): kernels, ops, steps, categories,
        efficiency, critical_path, gaps, memory, iterations, phases, graphs ...; a job: ranks, collectives,
        steps, kernels. filter: a regex on the name; sort: a column (descending); step/iteration: only that
        step's or iteration's work. Answers {columns, rows, total_matched, truncated}."""
        return await call("view", path, view, filter, sort, top, step, iteration)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def drill(
        path: str, kernel: str | None = None, op: str | None = None, step: int | None = None, top: int = 100
    ) -> dict[str, Any]:
        """Drill down (as `profview export PATH --view launches --op NAME | --kernel NAME`): op: the GPU work an
        operator launched (nested calls included); kernel: the operators that launched a kernel."""
        return await call("drill", path, kernel, op, step, top)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def diff(before: str, after: str, view: str | None = None, top: int = 100) -> dict[str, Any]:
        """Two profiles side by side (as `profview diff BEFORE AFTER --view VIEW -o .json`): kernels (default),
        ops, steps, efficiency, phases ... with the notes on what could not be paired."""
        return await call("diff", before, after, view, top)

    @server.tool(annotations=READ_ONLY, structured_output=True)
    async def gate(before: str, after: str, rules: list[str]) -> dict[str, Any]:
        """The CI gate (as `profview diff BEFORE AFTER --fail-if RULE ... --format json`): rules such as
        'kernels.total_us > +5%' (docs/gate.md); each side a capture, folder or comma list of captures."""
        return await call("gate", before, after, rules)

    return server


def serve_stdio(roots: Roots, timeout_s: float = DEFAULT_TIMEOUT_S, use_cache: bool = True) -> None:
    """Serve over stdin/stdout until the client closes them."""
    build_server(roots, timeout_s, use_cache).run("stdio")
