"""The cache's cap is the one the guide states: ``at most N traces`` in docs/guide.md, and caching
one trace more than that removes the entry written longest ago.  Witness: the cache folder's
entries counted on disk after caching N + 1 small traces."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support import KERNEL, ROOT

import profview
from profview.parsers.schema import EVENT_SCHEMA
from profview.store import trace_cache


def documented_cap() -> int:
    text = " ".join((ROOT / "docs" / "guide.md").read_text().split())
    found = re.search(r"The cache holds \*\*at most (\d+) traces\*\*", text)
    assert found, "docs/guide.md states the cache's cap"
    return int(found.group(1))


def test_the_documented_cap_is_the_cache_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = documented_cap()
    assert cap == trace_cache.MAX_ENTRIES
    root = tmp_path / "cache"
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(root))
    traces = []
    for index in range(cap + 1):
        path = tmp_path / f"t{index}.json"
        path.write_text(json.dumps({"traceEvents": [{**KERNEL, "name": f"k{index}"}]}))
        profview.load(path)
        traces.append(path)
        for entry in root.iterdir():  # the new entry dated by its order, whatever the clock's resolution
            if entry.is_dir() and entry.stat().st_mtime > cap + 1:
                os.utime(entry, (index + 1, index + 1))
    entries = [e for e in root.iterdir() if e.is_dir() and len(e.name) == 32]
    assert len(entries) == cap
    assert trace_cache.lookup(str(traces[0]), EVENT_SCHEMA) is None  # the oldest went
    assert trace_cache.lookup(str(traces[-1]), EVENT_SCHEMA) is not None
