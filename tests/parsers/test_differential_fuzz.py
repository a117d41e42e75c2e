"""The compiled scanner and the pure-Python reader give the same answer on the same bytes.

Mutants are made from the raw text of a real trace (a slice of samples/ddp_nccl_streams: kernels
with collective arguments, runtime calls, flows, CPU ops) by byte-level edits that a strategy built
on ``json.dumps`` cannot produce: numbers out of every range, lone surrogates and other escapes,
invalid UTF-8, deleted and inserted structure, cuts, a byte-order mark, trailing documents.
Each mutant is read by both paths in the same process: both must refuse it with the same message,
or both must read the same events (every column, nulls included), metadata and warnings.

``PROFVIEW_FUZZ_MUTANTS`` sets how many mutants (default 400; seed ``PROFVIEW_FUZZ_SEED``).
"""

from __future__ import annotations

import gzip
import os
import random
import re
from pathlib import Path

import msgspec
import pytest

from profview.errors import ProfviewError
from profview.parsers import chrome_trace, fast_chrome

pytestmark = pytest.mark.skipif(not fast_chrome.available(), reason="the compiled scanner is not built")

SAMPLE = Path(__file__).parent.parent.parent / "samples" / "ddp_nccl_streams.pt.trace.json.gz"
MUTANTS = int(os.environ.get("PROFVIEW_FUZZ_MUTANTS", "400"))
SEED = int(os.environ.get("PROFVIEW_FUZZ_SEED", "20261123"))

NUMBERS = [
    b"1e400", b"-1e400", b"7e4649", b"9" * 400, b"1" + b"0" * 300, b"-0", b"-0.0", b"1e-400",
    b"18446744073709551616", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809",
    b"0.1e1", b"1E5", b"123456789012345678901234567890.5", b"2.5e-3", b"00", b"1.", b"-", b"1e",
]
ESCAPES = [
    b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\\ud800\\ud800", b"\\u0000", b'\\"', b"\\\\", b"\\u001b[31m",
    b"\\/", b"\\x41", b"\\u12", b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x00", b"\x1b]8;;x\x07",
]
STRUCTURE = [b"{", b"}", b"[", b"]", b",", b":", b'"', b" ", b"\n", b"null", b"NaN", b"Infinity", b"true"]


def real_text(events: int = 160) -> bytes:
    """The sample's header, metadata and a slice of its events, each event's bytes as written."""
    data = gzip.decompress(SAMPLE.read_bytes())
    start = re.search(rb'"traceEvents"\s*:\s*\[', data)
    assert start is not None
    raw = msgspec.json.decode(_array(data, start.end() - 1), type=list[msgspec.Raw])
    picked = [raw[i] for i in range(0, len(raw), max(1, len(raw) // events))][:events]
    body = b",\n  ".join(bytes(event) for event in picked)
    return data[: start.end()] + body + b"],\n" + data[_array_end(data, start.end() - 1) + 1 :].lstrip(b" \n,")


def _array(data: bytes, begin: int) -> bytes:
    return data[begin : _array_end(data, begin) + 1]


def _array_end(data: bytes, begin: int) -> int:
    """The index of the ']' that closes the array opening at ``begin``."""
    try:
        msgspec.json.decode(data[begin:])
    except msgspec.DecodeError as exc:
        match = re.search(r"trailing characters \(byte (\d+)\)", str(exc))
        assert match is not None
        return begin + data[begin : begin + int(match.group(1)) - 1].rindex(b"]")
    return len(data) - 1


def mutate(text: bytes, rng: random.Random) -> bytes:
    """One or two byte-level edits of ``text``."""
    for _ in range(rng.choice((1, 1, 2))):
        text = rng.choice(EDITS)(text, rng)
    return text


def _number(text: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in re.finditer(rb"(?<=[:\[, ])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", text)]
    lo, hi = rng.choice(spans)
    return text[:lo] + rng.choice(NUMBERS) + text[hi:]


def _escape(text: bytes, rng: random.Random) -> bytes:
    spans = [m.span() for m in re.finditer(rb'"[^"\\]{1,40}"', text)]
    lo, hi = rng.choice(spans)
    at = rng.randrange(lo + 1, hi)
    return text[:at] + rng.choice(ESCAPES) + text[at:]


def _delete(text: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(text))
    return text[:at] + text[at + rng.choice((1, 1, 2, 7)) :]


def _insert(text: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(text))
    return text[:at] + rng.choice(STRUCTURE) + text[at:]


def _cut(text: bytes, rng: random.Random) -> bytes:
    return text[: rng.randrange(len(text))]


def _duplicate(text: bytes, rng: random.Random) -> bytes:
    lo = rng.randrange(len(text))
    hi = min(len(text), lo + rng.randrange(1, 400))
    return text[:hi] + text[lo:hi] + text[hi:]


def _swap(text: bytes, rng: random.Random) -> bytes:
    a, b = sorted(rng.randrange(len(text)) for _ in range(2))
    return text[:a] + text[b : b + 1] + text[a + 1 : b] + text[a : a + 1] + text[b + 1 :]


def _ends(text: bytes, rng: random.Random) -> bytes:
    return rng.choice((b"\xef\xbb\xbf" + text, text + b"garbage", text + text, text + b"\n\n", b"  \n" + text))


def _repeat_key(text: bytes, rng: random.Random) -> bytes:
    return text.replace(b'"traceEvents"', b'"traceEvents": [], "traceEvents"', 1)


EDITS = [_number] * 4 + [_escape] * 3 + [_delete, _insert, _insert, _cut, _duplicate, _swap, _ends, _repeat_key]


def read(text: bytes, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """What one reader answers: the error, or (events as rows, metadata, warnings, truncated)."""
    monkeypatch.setattr(fast_chrome, "_fastscan", COMPILED if compiled else None)
    try:
        trace = chrome_trace.parse_chrome_trace(bytearray(text), "mutant.json")
    except ProfviewError as exc:
        return ("error", str(exc))
    return ("read", trace.events.rows(), trace.metadata, trace.warnings, trace.truncated)


COMPILED = fast_chrome._fastscan


def test_the_base_text_is_a_real_trace_read_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    text = real_text()
    compiled, pure = read(text, True, monkeypatch), read(text, False, monkeypatch)
    assert compiled[0] == "read" and len(compiled[1]) == 160
    assert compiled == pure


def test_compiled_and_pure_readers_agree_on_raw_text_mutants(monkeypatch: pytest.MonkeyPatch) -> None:
    text = real_text()
    rng = random.Random(SEED)
    outcomes = {"read": 0, "error": 0}
    for number in range(MUTANTS):
        mutant = mutate(text, rng)
        compiled, pure = read(mutant, True, monkeypatch), read(mutant, False, monkeypatch)
        assert compiled == pure, f"mutant {number} (seed {SEED}) read differently"
        outcomes[compiled[0]] += 1
    print(f"{MUTANTS} mutants: {outcomes['read']} read, {outcomes['error']} refused, all alike")
    assert outcomes["read"] > MUTANTS // 2  # the mutants exercise reading, not only refusal
