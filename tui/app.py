"""The viewer (placeholder until the Textual app lands): prints the summary."""

from __future__ import annotations


def run(path: str, *, no_cache: bool = False) -> int:
    """Open ``path`` in the viewer; return the exit code."""
    from profview.loading import load
    from profview.summary import print_summary

    print_summary(load(path, use_cache=not no_cache), 10)
    return 0
