"""``profview mcp [--root DIR ...]``: an MCP server over stdio for agents (docs/agents.md).

The SDK is an optional extra (``pip install 'profview[mcp]'``), imported here only when the
command runs; without it the command says how to install it, in one line.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..errors import ProfviewError


def mcp(
    root: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--root", help="A folder the tools may read (repeatable; default: the current folder). "
                     "Paths are resolved, symbolic links followed, and must lie inside one."),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=1.0, help="Seconds a tool call may run before it is answered with an error."),
    ] = 300.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the trace cache.")] = False,
) -> None:
    """Serve profview's read-only tools (summary, tables, query, view, drill, diff, gate) over MCP's stdio."""
    from importlib.util import find_spec

    if find_spec("mcp") is None:  # looked up, not imported: only serve/server.py imports the SDK
        raise ProfviewError(None, "profview mcp needs the MCP SDK: pip install 'profview[mcp]'")
    from ..serve.roots import Roots
    from ..serve.server import serve_stdio

    serve_stdio(Roots.of(root), timeout_s=timeout, use_cache=not no_cache)
