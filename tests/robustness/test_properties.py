"""Property-based: any input either loads or fails with ProfviewError, never anything else."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from strategies import EVENT, JSON_VALUES, SETTINGS

import profview
from profview.errors import ProfviewError


def load_or_error(data: bytes, suffix: str = ".json") -> None:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / f"input{suffix}"
        target.write_bytes(data)
        try:
            profile = profview.load(target, use_cache=False)
        except ProfviewError as exc:
            assert str(exc).startswith(str(target))
            assert "\n" not in str(exc)
            return
        # whatever loaded must produce every table it says it has
        for view in ("kernels", "ops", "steps"):
            if profile.available(view):
                getattr(profile, view)()


@SETTINGS
@given(st.binary(max_size=400))
def test_any_bytes(data: bytes) -> None:
    load_or_error(data)


@SETTINGS
@given(st.binary(max_size=200))
def test_any_bytes_behind_a_gzip_header(data: bytes) -> None:
    load_or_error(b"\x1f\x8b" + data, ".json.gz")


@SETTINGS
@given(JSON_VALUES)
def test_any_json_document(value: object) -> None:
    load_or_error(json.dumps(value).encode())


@SETTINGS
@given(st.lists(EVENT | JSON_VALUES, max_size=12), st.integers(min_value=0, max_value=2000), st.booleans())
def test_any_event_list_whole_or_cut(events: list, cut: int, compress: bool) -> None:
    text = json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0}]}).encode()
    if cut:
        text = text[: max(1, len(text) - cut)]
    if compress:
        load_or_error(gzip.compress(text), ".json.gz")
    else:
        load_or_error(text)
