"""profview for agents: the read-only tools of ``profview mcp`` (summary, tables, query, view,
drill, diff, gate), each answering one JSON object from the frames the CLI writes, confined to
the folders the server was started with and bounded in rows, bytes and time (``tools.py``,
``roots.py``, ``limits.py``); ``server.py`` serves them over MCP's stdio transport with the
official SDK, the one module that imports it.
"""
