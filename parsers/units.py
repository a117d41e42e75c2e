"""Numbers as profiler tables print them: durations, sizes, percentages, counts."""

from __future__ import annotations

import re

_TIME = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)$")
_SIZE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(b|B|Kb|KB|kB|Mb|MB|Gb|GB|Tb|TB)$")
_TIME_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}
_SIZE_BYTES = {
    "b": 1,
    "B": 1,
    "Kb": 2**10,
    "KB": 2**10,
    "kB": 2**10,
    "Mb": 2**20,
    "MB": 2**20,
    "Gb": 2**30,
    "GB": 2**30,
    "Tb": 2**40,
    "TB": 2**40,
}


def time_us(text: str) -> float | None:
    """'1.5ms' → 1500.0 (µs); None when the text is not a duration."""
    match = _TIME.match(text.strip())
    return float(match.group(1)) * _TIME_US[match.group(2)] if match else None


def size_bytes(text: str) -> float | None:
    """'99.18 MB' → bytes (powers of 1024, as torch prints them); None when not a size."""
    match = _SIZE.match(text.strip())
    return float(match.group(1)) * _SIZE_BYTES[match.group(2)] if match else None


def percent(text: str) -> float | None:
    """'42.35%' → 42.35."""
    value = text.strip()
    if not value.endswith("%"):
        return None
    try:
        return float(value[:-1])
    except ValueError:
        return None


def number(text: str) -> float | None:
    """A plain number, or None ('-' and '' mean none)."""
    value = text.strip().replace(",", "")
    try:
        return float(value)
    except ValueError:
        return None
