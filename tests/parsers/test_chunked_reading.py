"""Reading a trace in chunks gives exactly what reading it whole gives (issue 25).

Both readers (the compiled scanner and the general reader) read every sample trace, every
raw-text mutant of the differential fuzz, cut files and damaged gzip streams in chunks of many
sizes, down to one byte, with windows as small as one byte; the answer (every column of every
event, metadata, warnings, truncation, or the one-line refusal) must equal the same reader's
answer on the whole document, and the two readers must agree with each other.  Valid and cut
traces must really be read in chunks (never the whole document), through a bounded window.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES, raw_events, sample
from test_differential_fuzz import MUTANTS, SEED, mutate, real_text

from profview.errors import ProfviewError
from profview.parsers import chrome_trace, chunked, fast_chrome, source, trace_file

COMPILED = fast_chrome._fastscan
READERS = ["compiled", "general"] if COMPILED is not None else ["general"]
TRACES = sorted(p.name for p in SAMPLES.glob("*.json*") if not p.name.endswith((".jsonl", ".facts.json")))


def use(reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Switch the compiled scanner on or off for everything read next (whole-document fallbacks too)."""
    monkeypatch.setattr(fast_chrome, "_fastscan", COMPILED if reader == "compiled" else None)


def whole(path: Path) -> tuple:
    """The answer of reading ``path`` whole (read_source, then the whole-document reader)."""
    try:
        data = source.read_source(path)
        trace = chrome_trace.parse_chrome_trace(data.release(), str(path))
    except ProfviewError as exc:
        return ("error", str(exc))
    return ("read", trace.events, trace.metadata, data.warnings + trace.warnings, trace.truncated)


def in_chunks(path: Path, chunk: int, window: int, whole_reads: list[str] | None = None) -> tuple:
    """The answer of reading ``path`` in chunks of ``chunk`` bytes through windows of ``window``."""
    try:
        file = trace_file.read_trace_file(path, chunk_bytes=chunk, window_bytes=window)
        if not file.chrome:
            return ("not chrome",)
        trace = chrome_trace.read_chrome(file, chunk_bytes=chunk, window_bytes=window)
    except ProfviewError as exc:
        return ("error", str(exc))
    return ("read", trace.events, trace.metadata, file.warnings + trace.warnings, trace.truncated)


@pytest.fixture
def whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files read whole from here on (a chunked read that gave up and fell back)."""
    reads: list[str] = []
    real = source.read_source

    def spy(path: str) -> source.SourceBytes:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(trace_file, "read_source", spy)
    monkeypatch.setattr(chrome_trace, "read_source", spy)
    return reads


def assert_same(got: tuple, expected: tuple) -> None:
    assert got[0] == expected[0], (got, expected)
    if got[0] == "read":
        assert_frame_equal(got[1], expected[1])
        assert got[2:] == expected[2:]
    else:
        assert got == expected


def decompressed(name: str) -> bytes:
    data = sample(name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


@pytest.mark.parametrize("name", [n for n in TRACES if chunked.looks_like_chrome_trace(decompressed(n)[:65536])])
@pytest.mark.parametrize("reader", READERS)
def test_every_sample_reads_the_same_in_chunks(
    name: str, reader: str, whole_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sample, at a small random chunk size and a 1-byte window, and at 64 KB chunks."""
    use(reader, monkeypatch)
    path = sample(name)
    expected = whole(path)
    whole_reads.clear()
    rng = random.Random(name)
    # Small documents: 1-byte chunks and windows.  Large ones: small chunks into windows of a few
    # hundred kilobytes (the general reader types each window with Polars: tiny windows are slow).
    small = (1, 1) if len(decompressed(name)) < 200_000 else (rng.randrange(2, 4096), rng.randrange(1, 400_000))
    for chunk, window in (small, (65536, 65536), (rng.randrange(1, 100_000), rng.randrange(100_000, 1_000_000))):
        assert_same(in_chunks(path, chunk, window), expected)
    events = [e for e in raw_events(name) if isinstance(e, dict) and (e.get("ph"), e.get("cat")) != (None, None)]
    assert expected[0] == "read" and expected[1].height == len(events) > 0  # the stdlib's count: a second witness
    assert whole_reads == [], "a valid sample was read whole instead of in chunks"


@pytest.mark.parametrize("name", ["resnet50_train_amp.pt.trace.json.gz", "tracelens_h100_qwen1.5-0.5b.json.gz"])
def test_the_two_readers_agree_in_chunks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if COMPILED is None:
        pytest.skip("the compiled scanner is not built")
    answers = []
    for reader in READERS:
        use(reader, monkeypatch)
        answers.append(in_chunks(sample(name), 7919, 50_000))
    assert_same(answers[0], answers[1])


def test_kinds_found_once_per_trace_equal_the_general_readers_when_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled frame finds each (ph, cat) pair's kind once for all its ranges, and forgets
    them past KIND_PAIRS_CROSS (hostile input); made to forget at every range here, its kinds still
    equal the general reader's (kind_expr over every row), range after range of 50 KB windows."""
    if COMPILED is None:
        pytest.skip("the compiled scanner is not built")
    path = sample("resnet50_train_amp.pt.trace.json.gz")
    use("general", monkeypatch)
    general = in_chunks(path, 7919, 50_000)
    use("compiled", monkeypatch)
    monkeypatch.setattr(fast_chrome, "KIND_PAIRS_CROSS", 4)
    forgetting = in_chunks(path, 7919, 50_000)
    assert general[0] == forgetting[0] == "read" and general[1]["kind"].n_unique() > 4
    assert_same(forgetting, general)


def test_the_window_stays_bounded_on_a_large_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt2_train_bf16 (about 15 MB of JSON) through 64 KB windows: no window holds more than a few."""
    if COMPILED is None:
        pytest.skip("the compiled scanner is not built")
    seen: list[int] = []
    real = fast_chrome.ChunkedScan.__call__

    def spy(self: fast_chrome.ChunkedScan, window: bytearray, start: int) -> int:
        seen.append(len(window))
        return real(self, window, start)

    monkeypatch.setattr(fast_chrome.ChunkedScan, "__call__", spy)
    path = sample("gpt2_train_bf16.pt.trace.json.gz")
    file = trace_file.read_trace_file(path, chunk_bytes=16384, window_bytes=65536)
    assert file.scan is not None
    size = len(decompressed("gpt2_train_bf16.pt.trace.json.gz"))
    assert len(seen) > size // (2 * 65536) and max(seen) < 3 * 65536  # many windows, each bounded
    assert sum(part.rows for part in file.scan.parts) == len(raw_events("gpt2_train_bf16.pt.trace.json.gz"))


@pytest.mark.parametrize("threads", ["1", "3"])
def test_ranges_of_a_window_join_up_on_threads(threads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 256 KB cut into 3 ranges at guessed boundaries (wrong guesses included)."""
    if COMPILED is None:
        pytest.skip("the compiled scanner is not built")
    monkeypatch.setenv("PROFVIEW_THREADS", threads)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 4096)
    path = sample("resnet50_train_amp.pt.trace.json.gz")
    assert_same(in_chunks(path, 100_000, 256 * 1024), whole(path))


@pytest.mark.parametrize("reader", READERS)
def test_a_cut_file_reads_to_its_last_complete_event_in_chunks(
    reader: str, tmp_path: Path, whole_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed job's file, cut at many places (plain and gzip-cut): the same events and warning."""
    use(reader, monkeypatch)
    text = decompressed("ddp_nccl_streams.pt.trace.json.gz")
    packed = sample("ddp_nccl_streams.pt.trace.json.gz").read_bytes()
    rng = random.Random(25)
    streamed = 0
    for cut in [len(text) // 2, len(text) - 3, *(rng.randrange(len(text) // 10, len(text)) for _ in range(6))]:
        plain = tmp_path / "cut.json"
        plain.write_bytes(text[:cut])
        expected = whole(plain)
        assert expected[0] == "read" and expected[4] is True
        whole_reads.clear()
        assert_same(in_chunks(plain, rng.choice((1, 13, 4096)), rng.choice((1, 2048))), expected)
        streamed += not whole_reads
    assert streamed >= 6  # cut traces are read in chunks, not whole (unless cut inside a number's sign)
    for cut in (len(packed) // 3, len(packed) - 20):
        packed_cut = tmp_path / "cut.json.gz"
        packed_cut.write_bytes(packed[:cut])
        expected = whole(packed_cut)
        assert expected[0] == "read" and any("gzip stream ends early" in w for w in expected[3])
        assert_same(in_chunks(packed_cut, 4099, 1), expected)


@pytest.mark.parametrize("reader", READERS)
def test_raw_text_mutants_read_the_same_in_chunks(
    reader: str, tmp_path: Path, whole_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The differential fuzz's mutants, each at a random chunk size (1 byte for one in eight)."""
    use(reader, monkeypatch)
    text = real_text()
    rng = random.Random(SEED + 25)
    outcomes = {"read": 0, "error": 0, "read in chunks": 0}
    for number in range(MUTANTS // 2):
        mutant = mutate(text, rng)
        path = tmp_path / ("mutant.json.gz" if number % 5 == 0 else "mutant.json")
        path.write_bytes(gzip.compress(mutant) if path.suffix == ".gz" else mutant)
        chunk = rng.choice((1, 2, 3, 5, 64, 1000, 4096, len(mutant)))
        window = rng.choice((1, 1, 100, 5000))
        expected = whole(path)
        whole_reads.clear()
        got = in_chunks(path, chunk, window)
        outcomes["read in chunks"] += got[0] == "read" and not whole_reads
        if got == ("not chrome",):
            continue  # an edit that made the start unrecognisable: loading reads such a file whole
        try:
            assert_same(got, expected)
        except AssertionError as exc:
            raise AssertionError(f"mutant {number} (seed {SEED + 25}, chunk {chunk}, window {window}): {exc}") from None
        outcomes[expected[0]] += 1
    print(f"{MUTANTS // 2} mutants in chunks ({reader}): {outcomes}")
    assert outcomes["read"] > MUTANTS // 5
    assert outcomes["read in chunks"] > MUTANTS // 10  # the rest hold values only the whole reader repairs


@pytest.fixture
def mapped_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every plain Chrome trace from here on read mapped (its threshold at 0); the files it read."""
    reads: list[str] = []
    real = trace_file._read_mapped

    def spy(stream: source.SourceStream) -> trace_file.TraceFile | None:
        reads.append(stream.path)
        return real(stream)

    monkeypatch.setattr(trace_file, "MAP_SCAN_BYTES", 0)
    monkeypatch.setattr(trace_file, "_read_mapped", spy)
    return reads


@pytest.mark.parametrize("threads", ["1", "3"])
def test_a_mapped_plain_trace_reads_as_the_whole_document(
    threads: str, tmp_path: Path, mapped_reads: list[str], whole_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large plain trace is scanned in place (mapped, ranges at guessed boundaries on threads):
    every sample written plain, cut files and the differential fuzz's mutants give the whole
    document's answer (every column, metadata, warnings, truncation, or the one-line refusal)."""
    if COMPILED is None:
        pytest.skip("the compiled scanner is not built")
    monkeypatch.setenv("PROFVIEW_THREADS", threads)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 4096)  # many ranges, wrong guesses among them
    plain = tmp_path / "plain.json"
    for name in TRACES:
        text = decompressed(name)
        if not chunked.looks_like_chrome_trace(text[:65536]):
            continue
        plain.write_bytes(text)
        mapped_reads.clear()
        whole_reads.clear()
        expected = whole(plain)
        assert_same(in_chunks(plain, 4096, 4096), expected)
        if len(text) > 2 * 4096:  # at most two windows: read in one piece (a job's rank)
            assert mapped_reads == [str(plain)], name
        if expected[0] == "read":  # the stdlib's count: a second witness
            events = [e for e in raw_events(name) if isinstance(e, dict)]
            counted = [e for e in events if (e.get("ph"), e.get("cat")) != (None, None)]
            assert expected[1].height == len(counted) > 0, name
            assert whole_reads == [], f"{name}: a valid sample was read whole instead of mapped"
    text = decompressed("ddp_nccl_streams.pt.trace.json.gz")
    rng = random.Random(54)
    for cut in [len(text) // 2, len(text) - 3, *(rng.randrange(len(text) // 10, len(text)) for _ in range(4))]:
        plain.write_bytes(text[:cut])
        expected = whole(plain)
        assert expected[0] == "read" and expected[4] is True
        assert_same(in_chunks(plain, 4096, 2048), expected)
    real = real_text()
    outcomes = {"read": 0, "error": 0}
    for number in range(MUTANTS // 4):
        plain.write_bytes(mutate(real, rng))
        got, expected = in_chunks(plain, 4096, 5000), whole(plain)
        if got == ("not chrome",):
            continue
        try:
            assert_same(got, expected)
        except AssertionError as exc:
            raise AssertionError(f"mutant {number} (seed 54): {exc}") from None
        outcomes[expected[0]] += 1
    assert outcomes["read"] > MUTANTS // 10
