"""The compiled fast path (native/fastscan.c, native/calltree.c) against the general reader.

The general reader (msgspec + Polars NDJSON) is the reference: on every input the scanner takes,
the events frame, metadata and warnings must be identical; every input it cannot reproduce
exactly must be handed back (None), never read differently.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from strategies import EVENT, SETTINGS
from support import SAMPLES, loaded, raw_events, sample

import profview
from profview.analysis.trace import calltree
from profview.errors import ProfviewError
from profview.parsers import chrome_trace, fast_chrome, source

pytestmark = pytest.mark.skipif(
    not fast_chrome.available(), reason="the compiled scanner was not built (no C compiler at install)"
)

#: Every Chrome-trace sample (a rocprofv3 JSON document is no Chrome trace: its own reader reads it).
TRACES = sorted(
    p.name for p in SAMPLES.glob("*.json*")
    if not p.name.endswith((".jsonl", ".facts.json")) and not p.name.startswith("rocprofv3_")
)


def general(data: bytes, monkeypatch: pytest.MonkeyPatch) -> chrome_trace.ChromeTrace:
    """The general reader's result (the scanner switched off)."""
    with monkeypatch.context() as patch:
        patch.setattr(chrome_trace, "scan_fast", lambda *_args: None)
        return chrome_trace.parse_chrome_trace(bytearray(data), "trace.json")


def assert_same_as_general(data: bytes, monkeypatch: pytest.MonkeyPatch) -> chrome_trace.ChromeTrace:
    assert fast_chrome.scan_fast(data, chrome_trace.METADATA_KEYS) is not None, "the scanner refused it"
    fast = chrome_trace.parse_chrome_trace(bytearray(data), "trace.json")
    reference = general(data, monkeypatch)
    assert_frame_equal(fast.events, reference.events)
    assert fast.metadata == reference.metadata
    assert fast.warnings == reference.warnings
    return fast


def sample_bytes(name: str) -> bytes:
    data = sample(name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


@pytest.mark.parametrize("name", TRACES)
def test_every_sample_trace_reads_the_same(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = assert_same_as_general(sample_bytes(name), monkeypatch)
    events = [e for e in raw_events(name) if isinstance(e, dict) and (e.get("ph"), e.get("cat")) != (None, None)]
    assert fast.events.height == len(events) > 0


@pytest.mark.parametrize("threads", ["1", "2", "5"])
def test_many_small_ranges_on_threads_join_up(threads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ResNet-50 cut into ~300 ranges of 64 KB, scanned on 1, 2 and 5 threads."""
    monkeypatch.setattr(fast_chrome, "RANGE_BYTES", 64 * 1024)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 64 * 1024)
    monkeypatch.setenv("PROFVIEW_THREADS", threads)
    assert_same_as_general(sample_bytes("resnet50_train_amp.pt.trace.json.gz"), monkeypatch)


def test_a_wrong_boundary_guess_inside_a_string_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names full of '}, {' (what the range splitter looks for): every guess lands inside a string."""
    decoy = '}, {"ph": "X", "name": "decoy", "ts": 1, "dur": 1}, {'
    events = [
        {"ph": "X", "cat": "kernel", "name": f"k{i} {decoy * 3}", "pid": 0, "tid": 7, "ts": i, "dur": 1.5}
        for i in range(400)
    ]
    data = json.dumps({"traceEvents": events}).encode()
    monkeypatch.setattr(fast_chrome, "RANGE_BYTES", 997)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 997)
    monkeypatch.setenv("PROFVIEW_THREADS", "2")
    fast = assert_same_as_general(data, monkeypatch)
    assert fast.events.height == 400 and fast.events["name"].str.starts_with("k").all()


def test_values_read_as_polars_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Numbers as text, arrays as text, first key wins, ints out of range, stream as digits."""
    events = [
        '{"ph":"X","cat":"kernel","name":"k\\u00e9\\n\\"x","pid":0,"tid":"stream 7","ts":6178431702034.123,'
        '"dur":1.5,"id":5,"args":{"External id":3,"stream":7,"grid":[64, 1,1],"Input Dims":[[64,3],[ ], []],'
        '"Input type":["float", "", "Scalar"],"device":0}}',
        '{"ph":"X","pid":15,"tid":-3,"ts":"12","dur":2,"id":"0x5","args":{"External id":1.0,"stream":"9",'
        '"grid":"abc","bytes":99999999999999999999,"registers per thread":1e2,"shared memory":true,'
        '"Call stack":null,"name":{"a":1}}}',
        '{"ph":"X","pid":true,"tid":null,"ts":1e3,"dur":-0,"args":{"External id":"5","est. achieved '
        'occupancy %":50,"Sequence number":-7,"Collective name":5,"Fwd thread id":1.7}}',
        '{"ph":"X","pid":12345678901234567,"ts":1.0E+2,"dur":0.1e-1,"args":5}',
        '{"name":5,"cat":null,"ph":7}',
        '{"args":{"name":"x","name":"y"},"ts":1,"ts":2,"ph":"i"}',
        '{"ph":"X","ts":9007199254740993,"dur":0.30000000000000004,"args":{"stream":7,"device":"3",'
        '"Input Dims":"s","external id":0,"External id":null}}',
        '{"ph":"X","ts":1,"dur":1,"pid":[1,"a",true,null],"tid":{"x":[1,2]},"args":{"stream":"+09"}}',
        '{"ph":"X","ts":1,"dur":1,"cat":"Kernel","args":{"correlation id":8,"theoretical achieved occupancy %":25}}',
    ]
    data = ('{"schemaVersion": 1, "traceEvents": [' + ",\n".join(events) + '], "traceName": "t"}').encode()
    fast = assert_same_as_general(data, monkeypatch)
    first = fast.events.row(0, named=True)
    assert (first["name"], first["pid"], first["grid"], first["input_dims"]) == (
        'ké\n"x',
        "0",
        "[64, 1, 1]",
        "[[64, 3], [], []]",
    )
    assert fast.metadata == {"schemaVersion": 1, "traceName": "t"}


@pytest.mark.parametrize(
    "document",
    [
        b'{"traceEvents": [{"ph": "X", "ts": NaN, "dur": 1}]}',  # NaN: the general reader repairs it
        b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}, {"ph": "X", "ts": 2.',  # cut in a number: "broken"
        b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1}, {"ph": "X", "ts": 2, "dur": NaN}',  # NaN, then cut
        b'{"traceEvents": [{"ph": "X", "t',  # cut before the first complete event
        b'{"traceEvents": [{"ph": "X", "ts": 1, "pid": 1.5}]}',  # a float where text is expected
        b'{"traceEvents": [{"ph": "X", "ts": 1, "args": {"stream": 7.0}}]}',  # a float stream (Polars: 7)
        b'{"traceEvents": [{"ph": "X", "ts": 1, "args": {"Input Dims": ["a\\"b"]}}]}',  # escaped text in an array
        b'{"traceEvents": [{"ph": "X", "ts": 1, "name": "\\ud800"}]}',  # a lone surrogate
        b'{"traceEvents": [{"ph": "X", "ts": 1}], "traceEvents": []}',  # the key twice
        b'{"traceEvents": [{"ph": "X", "ts": 1}, 5]}',  # an element that is not an object
        b'{"traceEvents": [{"ph": "X", "ts": 1e400}]}',  # a number Polars refuses
        b'{"traceEvents": [{"ph": "X", "name": "a\tb"}]}',  # a raw control character
        b'{"traceEvents": []}',
        b'{"traceEvents": [{"ph": "X"}]} trailing',
    ],
)
def test_what_the_scanner_cannot_promise_goes_to_the_general_reader(document: bytes) -> None:
    assert fast_chrome.scan_fast(document, chrome_trace.METADATA_KEYS) is None


def test_mapped_plain_file_reads_like_a_read_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain trace is memory-mapped from MAP_BYTES on (here: from 1 byte), scanned pages dropped."""
    target = tmp_path / "trace.json"
    target.write_bytes(sample_bytes("gpt2_train_bf16.pt.trace.json.gz"))
    monkeypatch.setattr(source, "MAP_BYTES", 1)
    monkeypatch.setattr(fast_chrome, "RANGE_BYTES", 256 * 1024)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 256 * 1024)
    assert not isinstance(source.read_source(target).data, bytearray)
    mapped = profview.load(target, use_cache=False)
    assert_frame_equal(mapped.events, loaded("gpt2_train_bf16.pt.trace.json.gz").events)


def test_mapped_file_the_scanner_refuses_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "nan.json"
    target.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": NaN}]}')
    monkeypatch.setattr(source, "MAP_BYTES", 1)
    profile = profview.load(target, use_cache=False)
    assert profile.events.height == 1 and any("NaN" in w for w in profile.warnings)


@SETTINGS
@given(st.lists(EVENT, max_size=30), st.sampled_from([None, 2, 0]))
def test_any_event_list_reads_the_same_or_is_handed_back(events: list[dict], indent: int | None) -> None:
    data = json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}, indent=indent).encode()
    if fast_chrome.scan_fast(data, chrome_trace.METADATA_KEYS) is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            reference = general(data, monkeypatch)
        except ProfviewError:  # nothing there the general reader calls an event
            with pytest.raises(ProfviewError):
                chrome_trace.parse_chrome_trace(bytearray(data), "trace.json")
            return
        fast = chrome_trace.parse_chrome_trace(bytearray(data), "trace.json")
    assert_frame_equal(fast.events, reference.events)
    assert fast.warnings == reference.warnings


@pytest.mark.parametrize("name", ["resnet50_train_amp.pt.trace.json.gz", "gpt2_train_bf16.pt.trace.json.gz"])
def test_compiled_call_tree_equals_the_python_pass(name: str) -> None:
    host = loaded(name).model.host
    tree = calltree.build_call_tree(host)
    reference = calltree._nest_in_python(
        calltree.thread_index(host).tolist(),
        host["ts"].to_list(),
        (host["ts"] + host["dur"]).to_list(),
        host["is_op"].cast(pl.UInt8).to_list(),
    )
    for field in ("parent", "op_parent", "subtree_end"):
        np.testing.assert_array_equal(getattr(tree, field), getattr(reference, field))
    assert (tree.parent >= 0).sum() > host.height // 2  # most host events are nested in something


SMALL_DOC = (
    b'{"schemaVersion":1,"traceEvents":[{"ph":"X","name":"a\\u00e9b","ts":1.5e3,"dur":true,'
    b'"args":{"x":[1,{"y":null}]}},{"ph":"i","name":"x","ts":-0.25,"s":"t"}, '
    b'{"ph":"X","cat":"kernel","ts":12,"dur":3,"args":{"stream":7,"grid":[1,2,3]}}]}'
)


def outcome(data: bytes, monkeypatch: pytest.MonkeyPatch, fast: bool) -> chrome_trace.ChromeTrace | str:
    try:
        if fast:
            return chrome_trace.parse_chrome_trace(bytearray(data), "trace.json")
        return general(data, monkeypatch)
    except ProfviewError as exc:
        return str(exc)


def test_a_document_cut_anywhere_reads_as_the_general_reader_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cut of a small document, and 60 cuts of a real trace (inside strings, numbers, literals,
    escapes, between events): the scanner keeps the complete events with the same warning, or
    hands the document back (a number cut short is "broken" to msgspec: the general reader says so)."""
    ddp = sample_bytes("ddp_nccl_streams.pt.trace.json.gz")
    cuts = [SMALL_DOC[:n] for n in range(1, len(SMALL_DOC))]
    cuts += [ddp[: len(ddp) * k // 61] for k in range(1, 61)]
    scanned = 0
    for data in cuts:
        scanned += fast_chrome.scan_fast(data, chrome_trace.METADATA_KEYS) is not None
        got, reference = outcome(data, monkeypatch, True), outcome(data, monkeypatch, False)
        if isinstance(reference, str) or isinstance(got, str):
            assert got == reference
            continue
        assert_frame_equal(got.events, reference.events)
        assert (got.warnings, got.metadata, got.truncated) == (reference.warnings, reference.metadata, True)
    assert scanned > len(cuts) // 2  # most cuts are read by the scanner itself


def test_a_cut_mapped_file_keeps_its_complete_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed job's plain trace, memory-mapped and scanned in ranges: the same events and warning as
    the general reader gives for the same bytes."""
    data = sample_bytes("gpt2_train_bf16.pt.trace.json.gz")
    cut = data[: len(data) * 2 // 3]
    target = tmp_path / "cut.json"
    target.write_bytes(cut)
    monkeypatch.setattr(source, "MAP_BYTES", 1)
    monkeypatch.setattr(fast_chrome, "RANGE_BYTES", 512 * 1024)
    monkeypatch.setattr(fast_chrome, "MIN_RANGE_BYTES", 512 * 1024)
    profile = profview.load(target, use_cache=False)
    reference = general(cut, monkeypatch)
    assert profile.truncated and reference.truncated
    assert_frame_equal(profile.events, reference.events)
    assert [w.replace(str(target), "") for w in profile.warnings] == reference.warnings
    assert profile.events.height > 30_000


def test_the_argument_columns_have_one_source() -> None:
    """native/arg_fields.h is generated from ARG_COLUMNS: it must be current (else regenerate it)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent.parent / "scripts" / "gen_arg_fields.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@given(st.binary(max_size=64), st.binary(max_size=6), st.sampled_from([bytes, bytearray]))
@SETTINGS
def test_the_compiled_byte_search_answers_as_python_in(haystack: bytes, needle: bytes, kind: type) -> None:
    """``contains`` (memmem without the GIL, which the chunked read's key check uses) is ``in``."""
    data = kind(haystack + needle + haystack) if len(haystack) % 3 == 0 else kind(haystack)
    assert fast_chrome._scanner().contains(data, needle) is (needle in data)  # type: ignore[attr-defined]
    assert fast_chrome._scanner().contains(data, b'"traceEvents"') is (b'"traceEvents"' in data)  # type: ignore[attr-defined]


def test_the_events_key_is_found_across_a_chunk_end() -> None:
    """A ``"traceEvents"`` key inside an event, cut by a chunk's end, is found in the window (the
    compiled search): the document goes to the whole reader, as it did with Python's search."""
    from profview.parsers import chunked

    event = b'{"ph": "i", "name": "a", "ts": 1}'
    keyed = b'{"name": "x", "traceEvents": 1},'
    text = b'{"traceEvents": [' + (event + b",") * 50 + keyed + b",".join([event] * 50) + b"]}"
    cut = text.rindex(b"traceEvents") + 3  # the key's end is in the next chunk
    scanner = fast_chrome.ChunkedScan()
    try:
        with pytest.raises(chunked.NotChunkable, match="traceEvents"):
            chunked.read_chunked(iter([text[:cut], text[cut:]]), scanner, 16)
    finally:
        scanner.close()


def test_text_already_in_its_printed_form_and_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values read as text: those whose JSON is already Polars' text ("[[8192, 50257], []]": one
    space after each comma and colon, plain strings, short integers) are taken from the buffer as
    they are, the others rendered; both read as the general reader reads them, and the printed form
    is what Python's json.dumps writes for the same value (the second witness)."""
    printed = [[[8192, 50257], [], [[]]], ["float", "", "Scalar"], [True, False, None], {"a": [1, -2]}, 12345678901]
    other = ["[[8192,50257], []]", "[ 1, 2]", "[1 ,2]", '{"a":1}', '{"a" : 1}', "[true,null]", "[\n1, 2\n]"]
    refused = ["[-0]", "[1234567890123456789]", "[1.5]", '["a\\"b"]', "[" * 66 + "]" * 66]  # left to Polars
    events = [
        f'{{"ph": "X", "ts": {k}, "pid": {json.dumps(v)}, "args": {{"Input Dims": {json.dumps(v)}}}}}'
        for k, v in enumerate(printed)
    ]
    events += [f'{{"ph": "X", "ts": {k}, "tid": {v}, "args": {{"Concrete Inputs": {v}}}}}' for k, v in enumerate(other)]
    data = ('{"traceEvents": [' + ", ".join(events) + "]}").encode()
    fast = assert_same_as_general(data, monkeypatch)
    assert fast.events["input_dims"].head(len(printed)).to_list() == [json.dumps(v) for v in printed]
    assert fast.events["pid"].head(len(printed)).to_list() == [json.dumps(v) for v in printed]
    assert fast.events["concrete_inputs"].tail(len(other)).null_count() == 0
    for value in refused:
        for key in ('"pid"', '"args": {"Input Dims"'):
            document = '{"traceEvents": [{"ph": "X", "ts": 1, ' + key + ": " + value + ("}" * key.count("{")) + "}]}"
            assert fast_chrome.scan_fast(document.encode(), chrome_trace.METADATA_KEYS) is None, document


def test_numbers_read_in_one_pass_or_two_agree_with_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """ts/dur and integer arguments at the edges of the one-pass path (19 and 20 significant digits,
    leading zeros of a fraction, exponents, -0, 18- and 19-digit integers): the same frame as the
    general reader, and Python's float()/int() of each literal (the second witness)."""
    floats = [
        "0",
        "-0",
        "-0.0",
        "0.000123",
        "4482789437971.914",
        "9007199254740993",
        "1234567890123456789",
        "12345678901234567890.5",
        "0.30000000000000004",
        "1.5e3",
        "-2E-2",
        "123.4560000000000000001",
    ]
    ints = [
        "0",
        "-0",
        "7",
        "-7",
        "123456789012345678",
        "1234567890123456789",
        "-9223372036854775807",
        "99999999999999999999",
        "1.0",
        "2e3",
    ]
    events = [f'{{"ph": "X", "ts": {t}, "dur": {t}}}' for t in floats]
    events += [f'{{"ph": "X", "ts": 1, "args": {{"External id": {i}, "correlation": {i}}}}}' for i in ints]
    data = ('{"traceEvents": [' + ",".join(events) + "]}").encode()
    fast = assert_same_as_general(data, monkeypatch)
    assert fast.events["dur"].head(len(floats)).to_list() == [float(t) for t in floats]
    # a time past 2^53 µs is no time (left out of the tables, issue 55): its ts is null
    times = [float(t) if abs(float(t)) <= 2**53 and 2 * float(t) <= 2**53 else None for t in floats]
    assert fast.events["ts"].head(len(floats)).to_list() == times
    expected = [int(i) if i.lstrip("-").isdigit() and abs(int(i)) < 2**63 else None for i in ints]
    assert fast.events["correlation"].tail(len(ints)).to_list() == expected


def test_columns_first_filled_late_and_events_of_changing_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A column has no buffer until its first value (here at event 2,500 of 6,000, and one value in
    the last event only), and the rows the range will hold are projected from its first events
    (here long ones, then short ones: several projections fall short).  Null before the first
    value, the same frame as the general reader, counts as the standard library counts them."""
    events: list[dict] = []
    for k in range(6000):
        event: dict = {"ph": "X", "name": ("long " * 40 if k < 1500 else "s") + str(k % 7), "ts": k, "dur": 1}
        if k >= 2500:
            event["args"] = {"External id": k, "grid": [k % 3, 1, 1]}
        if k == 5999:
            event["args"]["est. achieved occupancy %"] = 50
        events.append(event)
    data = json.dumps({"traceEvents": events}).encode()
    fast = assert_same_as_general(data, monkeypatch)
    frame = fast.events
    with_args = sum("args" in e for e in events)
    assert frame["external_id"].null_count() == len(events) - with_args
    assert frame["grid"].drop_nulls().to_list() == [json.dumps(e["args"]["grid"]) for e in events if "args" in e]
    assert frame["occupancy"].drop_nulls().to_list() == [50.0]


def test_argument_keys_that_only_look_like_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys of the same length and first letter as a known argument (``External iD``, ``streaM``), or
    longer than any: skipped, as the general reader skips them."""
    args = '{"External iD": 5, "streaM": 3, "correlatioN": 4, "' + "k" * 80 + '": 1, "External id": 9}'
    data = ('{"traceEvents": [{"ph": "X", "ts": 1, "args": ' + args + "}]}").encode()
    fast = assert_same_as_general(data, monkeypatch)
    assert fast.events.select("external_id", "stream", "correlation").row(0) == (9, None, None)


def test_tiny_first_events_do_not_size_the_columns_for_the_whole_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 events of 12 bytes, then 3,000 of about 300: the first projection is 90 times the rows
    there are (the growth is bounded to 16 times a step); the same frame as the general reader."""
    events = [{"ph": "i"}] * 2000
    events += [
        {"ph": "X", "name": "n" * 200 + str(k % 5), "ts": k, "dur": 1, "args": {"External id": k + 1}}
        for k in range(3000)
    ]
    data = json.dumps({"traceEvents": events}, separators=(",", ":")).encode()
    fast = assert_same_as_general(data, monkeypatch)
    assert fast.events.height == 5000 and fast.events["external_id"].drop_nulls().to_list() == list(range(1, 3001))
