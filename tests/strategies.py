"""Hypothesis strategies and settings shared by the property and scanner tests."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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
