"""The compiled scanner and the pure-Python reader give the same answer on the same bytes.

Mutants are made from the raw text of a real trace (a slice of samples/ddp_nccl_streams: kernels
with collective arguments, runtime calls, flows, CPU ops) by byte-level edits that a strategy built
on ``json.dumps`` cannot produce: numbers out of every range, lone surrogates and other escapes,
invalid UTF-8, deleted and inserted structure, cuts, a byte-order mark, trailing documents.
Each mutant is read by both paths in the same process: both must refuse it with the same message,
or both must read the same events (every column, nulls included), metadata and warnings.

The same mutants are read by the compiled scanner's chunked, parallel path too (small windows,
each cut into ranges at guessed event boundaries and scanned on threads), and a crafted event is
read with a window's end at each of its bytes (inside strings, escapes and numbers): the same
events as one window on one thread, and as the pure reader.

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
from profview.parsers import chrome_trace, chunked, fast_chrome
from profview.parsers.metadata_keys import METADATA_KEYS

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


def scan_in_chunks(text: bytes, chunks: list[int], window: int, frame: bool = True) -> tuple:
    """The compiled scanner's chunked read of ``text`` cut at the ``chunks`` sizes (the last size
    repeated to the end): the frame's rows, metadata and truncation, or how it gave up."""
    pieces, at = [], 0
    for size in (*chunks, *[chunks[-1]] * len(text)):
        if at >= len(text):
            break
        pieces.append(text[at : at + size])
        at += size
    scanner = fast_chrome.ChunkedScan()
    try:
        scan = scanner.finish(chunked.read_chunked(iter(pieces), scanner, window), METADATA_KEYS)
    except (chunked.NotChunkable, RecursionError):
        return ("read whole",)
    finally:
        scanner.close()
    if scan is None:
        return ("general reader",)
    return ("read", scan.frame().rows() if frame else _values(scan.parts), scan.metadata, scan.truncated)


def _values(parts: list[fast_chrome.Scanned]) -> list[tuple]:
    """The scanned events as rows of values, read from the column buffers without building a
    frame (text by its code's unique, the null markers as None): quicker than a frame for a few rows."""
    rows: list[tuple] = []
    for part in parts:
        columns = []
        for group, code in (("floats", "d"), ("ints", "q")):
            for _name, buffer in sorted(getattr(part, group).items()):
                values = memoryview(buffer).cast("B").cast(code)[: part.rows].tolist() if buffer is not None else []
                nulls = (fast_chrome.INT_NULL, "nan")  # the scanner's null markers
                shown = [None if v in nulls or repr(v) in nulls else repr(v) for v in values]
                columns.append(shown or [None] * part.rows)
        for _name, (codes, uniques) in sorted(part.texts.items()):
            found = memoryview(codes).cast("B").cast("I")[: part.rows].tolist() if codes is not None else []
            columns.append([uniques[c] for c in found] or [None] * part.rows)
        rows += list(zip(*columns, strict=True))
    return rows


def threads(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """``count`` scanning threads; with more than one, each window is cut into ranges of a few
    hundred bytes at guessed event boundaries (wrong guesses included: a ``}, {`` in a string)."""
    monkeypatch.setattr(fast_chrome, "_fastscan", COMPILED)
    monkeypatch.setenv("PROFVIEW_THREADS", str(count))
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 256 if count > 1 else fast_chrome.MIN_RANGE_BYTES)


def test_parallel_chunks_agree_with_one_thread_on_mutants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutants through the chunked read on 3 threads (ranges at guessed boundaries): the answer of
    the same chunks on one thread, and the pure reader's events on the whole text where both read."""
    text = real_text()
    rng = random.Random(SEED + 42)
    outcomes = {"read": 0, "other": 0}
    for number in range(MUTANTS // 2):
        mutant = mutate(text, rng)
        sizes = [rng.choice((1, 2, 5, 64, 700, 4096, 20_000)) for _ in range(3)]
        window = rng.choice((1, 100, 5000, 1 << 20))
        threads(monkeypatch, 1)
        serial = scan_in_chunks(mutant, sizes, window)
        threads(monkeypatch, 3)
        parallel = scan_in_chunks(mutant, sizes, window)
        assert parallel == serial, f"mutant {number} (seed {SEED + 42}, chunks {sizes}, window {window})"
        if parallel[0] != "read":
            outcomes["other"] += 1
            continue
        outcomes["read"] += 1
        pure = read(mutant, False, monkeypatch)
        if pure[0] == "read":  # a second witness: the pure reader's events, row for row
            assert len(parallel[1]) == len(pure[1]), f"mutant {number}: {len(parallel[1])} rows, pure {len(pure[1])}"
    print(f"{MUTANTS // 2} mutants in parallel chunks: {outcomes}")
    assert outcomes["read"] > MUTANTS // 10  # the rest hold values only the whole reader reads


#: An event with what a chunk's end may cut: escapes of every kind, a surrogate pair, long and
#: short numbers (exponents, signs, fractions), nested arguments, a number as text (pid).
CRAFTED = (
    b'{"ph": "X", "cat": "kernel", "name": "void at::\\\\native::k<\\"f\\u00e9\\">\\t\\ud83d\\ude00 \\/x",'
    b' "pid": -12, "tid": "stream 7", "ts": 1.7625e+15, "dur": -0.000125,'
    b' "args": {"External id": 123456789012, "correlation": 42, "grid": [1, 2, 3],'
    b' "blocks per SM": 0.25E-2, "stream": 7, "device": 0}}'
)


def test_a_window_end_at_every_byte_of_an_event_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A window's end at each byte of the crafted event (inside its strings, escapes and numbers),
    the next windows growing by 1 to 89 bytes: the events of one window, and of the pure reader."""
    head = b'{"schemaVersion": 1, "traceEvents": [\n  '
    before = b'{"ph": "i", "cat": "x", "name": "a", "pid": 1, "tid": 1, "ts": 0},\n  '
    after = b',\n  {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 2}\n]}'
    text = head + before * 3 + CRAFTED + after
    start = text.index(CRAFTED)
    threads(monkeypatch, 1)
    expected = scan_in_chunks(text, [len(text)], 1 << 20, frame=False)
    assert expected[0] == "read" and len(expected[1]) == 5
    pure = read(text, False, monkeypatch)
    assert pure[0] == "read" and pure[1] == read(text, True, monkeypatch)[1] and len(pure[1]) == 5
    checked = 0
    threads(monkeypatch, 1)
    for cut in range(start, start + len(CRAFTED) + 2):
        for then in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89):  # the next window ends `then` bytes on, and so on
            got = scan_in_chunks(text, [cut, then], 1, frame=False)
            assert got == expected, f"a window's end at byte {cut - start} of the event, then every {then} bytes"
            checked += 1
    assert checked > 2000


def test_a_file_cut_just_after_a_window_s_last_comma_keeps_its_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed job's file that ends with ``}, `` where a window ended: the windows hold every event
    and the document's end none, yet it is still the trace cut after them, read as when read whole
    (it went to the general reader, whose repair of a cut file renders the escapes otherwise)."""
    head = b'{"schemaVersion": 1, "traceEvents": [\n  '
    text = head + b",\n  ".join([CRAFTED] * 3) + b",\n  "
    whole = read(text, True, monkeypatch)
    assert whole[0] == "read" and len(whole[1]) == 3 and whole[-1] is True
    assert read(text, False, monkeypatch)[1] == whole[1]  # the pure reader's events, escapes and all
    for count in (1, 3):
        threads(monkeypatch, count)
        for size in (len(text), 40, 7):  # one window ending at the cut, and small ones
            got = scan_in_chunks(text, [size], size)
            assert got == ("read", whole[1], whole[2], True), (count, size)
