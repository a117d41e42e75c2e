"""Repairs that make odd-but-meaningful JSON text readable by the general reader.

The compiled scanner reads values it does not use without decoding them and reads an
out-of-range number as missing; the general reader (msgspec + Polars' NDJSON reader) refuses a
whole document or chunk for either.  These rewrites, applied only after a first read failed, make
the general reader answer as the scanner does:

* a lone UTF-16 surrogate escape (``"\\ud800"``) becomes U+FFFD (``"\\ufffd"``);
* an integer literal outside int64 becomes the nearest double (``1e+300``), or ``null`` when it
  does not fit a double either; a fractional or exponent literal outside the double range
  (``1e400``) becomes ``null``.

Strings are tokenised, so text that looks like a number inside a string is never touched.
"""

from __future__ import annotations

import math
import re

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?', re.DOTALL)
_ESCAPE = re.compile(
    rb"\\(?:u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|(u[dD][c-fC-F][0-9a-fA-F]{2})|.)"
)
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_INT64_MAX = 2**63 - 1


def needs_repair(text: bytes | bytearray) -> bool:
    """Whether ``text`` may hold a surrogate escape or an overflowing number."""
    return has_surrogate_escape(text) or _LONG_DIGITS.search(text) is not None or _BIG_EXPONENT.search(text) is not None


def has_surrogate_escape(text: bytes | bytearray) -> bool:
    """Whether ``text`` holds a surrogate escape (paired or not): fast, the pattern starts with a literal."""
    return _SURROGATE.search(text) is not None


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_BIG_EXPONENT = re.compile(rb"[eE][+-]?[0-9]{3}")


def repair(text: bytes | bytearray) -> tuple[bytes, int]:
    """``text`` with lone surrogates and out-of-range numbers rewritten; also how many numbers."""
    unreadable = 0

    def token(match: re.Match[bytes]) -> bytes:
        nonlocal unreadable
        value = match.group()
        if value.startswith(b'"'):
            return _ESCAPE.sub(_escape, value) if b"\\u" in value else value
        fixed = _number(value)
        if fixed is not value:
            unreadable += fixed == b"null"
        return fixed

    return _TOKEN.sub(token, bytes(text)), unreadable


def _escape(match: re.Match[bytes]) -> bytes:
    high, low = match.group(1), match.group(2)
    whole = match.group()
    if high is not None:
        return whole if low is not None else b"\\ufffd"
    if match.group(3) is not None:  # a low surrogate without its high half
        return b"\\ufffd"
    return whole  # any other escape (``\\u00e9``, ``\\n``) is kept as written


def _number(literal: bytes) -> bytes:
    """A number literal Polars can read: the same one, its nearest double, or ``null``."""
    if literal.lstrip(b"-").isdigit():
        if len(literal) < 19 or abs(int(literal)) <= _INT64_MAX:
            return literal
        value = float(literal)  # correctly rounded, as strtod
        return repr(value).encode() if math.isfinite(value) else b"null"
    if len(literal) < 20 and not re.search(rb"[eE][+-]?\d{3}", literal):
        return literal
    value = float(literal)
    return literal if math.isfinite(value) else b"null"
