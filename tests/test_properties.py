"""Property-based: any input either loads or fails with ProfviewError, never anything else."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import profview
from profview.errors import ProfviewError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
EVENT = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "i", "s", "f", "M", "B", "E", "C", "?"]),
        "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "python_function", "Kernel", "x"]),
        "name": st.text(max_size=30) | st.integers(),
        "pid": st.integers() | st.text(max_size=5),
        "tid": st.integers() | st.text(max_size=5),
        "ts": st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text(max_size=5),
        "dur": st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.none(),
        "args": st.dictionaries(
            st.sampled_from(["External id", "correlation", "stream", "grid", "Input Dims", "device", "x"]),
            JSON_VALUES,
            max_size=4,
        ),
    },
)


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
