"""Parsers: one module per input format, each producing the documented frames of
:mod:`profview.parsers.schema` (trace events) or :mod:`profview.frames` (view tables)."""
