"""Helpers of the ``profview mcp`` tests: a tool called through the MCP SDK's in-process client,
and the CLI's stdout for the same question (the witness each answer is compared with)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import anyio
from mcp import Client
from support import run_cli


def call(server: Any, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(is an error, the structured answer or the error's text), through an in-process client."""

    async def go() -> tuple[bool, Any]:
        async with Client(server) as client:
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                return True, result.content[0].text
            return False, result.structured_content

    return anyio.run(go)


def cli_stdout(args: list[str]) -> tuple[int, str]:
    """``profview ARGS``'s exit code and what it printed on stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(args)
    return code, out.getvalue()
