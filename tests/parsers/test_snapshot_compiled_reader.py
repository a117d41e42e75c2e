"""The compiled opcode reader of memory snapshots (``native/snapshot_reader.c``) against the
no-globals unpickler and the Python frames: the same frames, exactly, on every real snapshot
(plain, gzipped, re-pickled in each protocol) and on generated and damaged pickles; where the
two could differ it hands the file back, and the unpickler's answer or refusal stands."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from strategies import SETTINGS
from support import SAMPLES, SHARED
from test_memory_snapshot_reader import payload

from profview.errors import ProfviewError
from profview.parsers.snapshot import columns
from profview.parsers.snapshot.frames import SnapshotFrames, snapshot_frames
from profview.parsers.snapshot.reader import read_snapshot
from profview.parsers.snapshot.unpickle import DANGEROUS_OPCODES, load_snapshot_pickle

pytestmark = pytest.mark.skipif(not columns.available(), reason="the compiled snapshot reader was not built")

SNAPSHOTS = [
    *sorted((SHARED / "formats" / "memory-snapshots").glob("*.pickle")), SAMPLES / "magma27_memory_snapshot.pickle"
]


def _python(path: Path) -> SnapshotFrames | str:
    """The witness: the no-globals unpickler and the Python frames (or the error line)."""
    try:
        return snapshot_frames(load_snapshot_pickle(path))
    except ProfviewError as exc:
        return exc.problem


def _compiled(path: Path) -> SnapshotFrames | str | None:
    """The compiled reader's frames, its error line, or None where it handed the file back."""
    try:
        raw = columns.read_raw(str(path))
    except ProfviewError as exc:
        return exc.problem
    if isinstance(raw, tuple):
        assert raw[0] == "fallback" and raw[1]
        return None
    try:
        return columns.frames_from_raw(raw)
    except ProfviewError as exc:
        return exc.problem


def _same(fast: SnapshotFrames, slow: SnapshotFrames) -> None:
    for name in ("segments", "blocks", "events", "stacks", "annotations"):
        assert_frame_equal(getattr(fast, name), getattr(slow, name))
    assert fast.settings == slow.settings
    assert fast.devices == slow.devices
    assert fast.warnings == slow.warnings


def _agree(path: Path, must_read: bool = False) -> SnapshotFrames | None:
    """The compiled reader and the witness agree on ``path``: equal frames, or the reader handed
    it back (never where ``must_read``), or both refuse with the same line."""
    fast, slow = _compiled(path), _python(path)
    if fast is None:
        assert not must_read, f"{path.name}: the compiled reader handed back a file it should read"
        return None
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
        return None
    _same(fast, slow)
    return fast


def _unpickled(path: Path) -> Any:
    return pickle.loads(path.read_bytes()) if path.suffix != ".gz" else pickle.loads(gzip.decompress(path.read_bytes()))


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_real_snapshots_read_the_same(path: Path) -> None:
    """Every shared snapshot: the compiled reader reads it (no fallback) to the witness's frames."""
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared not checked out)")
    frames = _agree(path, must_read=True)
    assert frames is not None and frames.events.height + frames.blocks.height > 0


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("path", SNAPSHOTS[:1] + SNAPSHOTS[-1:], ids=lambda p: p.name)
def test_each_protocol_and_gzip(path: Path, protocol: int, tmp_path: Path) -> None:
    """The same snapshot re-pickled in each protocol (2-3: BINPUT and BINGET; 5: the default from
    Python 3.14), plain and gzipped: the witness's frames each time."""
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared not checked out)")
    data = pickle.dumps(_unpickled(path), protocol=protocol)
    plain, packed = tmp_path / "snap.pickle", tmp_path / "snap.pickle.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data, compresslevel=1))
    _agree(plain, must_read=True)
    _agree(packed, must_read=True)
    assert read_snapshot(packed).events.height == _python(plain).events.height  # type: ignore[union-attr]


INTS = st.integers(min_value=-(2**60), max_value=2**60)  # a missing block address is summed from these: no overflow
ODD = st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=4) | st.integers()
FIELD = INTS | ODD
TEXT = st.sampled_from(["alloc", "free_requested", "free_completed", "segment_alloc", "oom", "", "N/A", "é"])
FRAME = st.fixed_dictionaries(
    {}, optional={"name": st.sampled_from(["f", "g", "λ"]) | st.none(), "filename": st.sampled_from(["a.py", "??"]),
                  "line": st.integers(min_value=0, max_value=3) | st.none()},
)
FRAMES = st.lists(FRAME, max_size=3) | st.none()


def _event(shared: list[list[dict[str, Any]]]) -> Any:
    return st.fixed_dictionaries(
        {"action": TEXT, "addr": INTS, "size": INTS},
        optional={"stream": FIELD, "time_us": FIELD, "device_free": INTS, "compile_context": TEXT | st.none(),
                  "user_metadata": TEXT, "frames": FRAMES | st.sampled_from(shared), "extra": ODD},
    )


SHARED_FRAMES: list[list[dict[str, Any]]] = [[{"name": "f", "filename": "a.py", "line": 1}], []]
BLOCK = st.fixed_dictionaries(
    {"size": INTS, "state": st.sampled_from(["active_allocated", "inactive", "active_pending_free"])},
    optional={"address": INTS, "requested_size": FIELD, "frames": FRAMES | st.sampled_from(SHARED_FRAMES)},
)
SEGMENT = st.fixed_dictionaries(
    {"address": INTS, "blocks": st.lists(BLOCK, max_size=4)},
    optional={"device": st.integers(0, 3), "total_size": INTS, "segment_type": st.sampled_from(["large", "small"]),
              "segment_pool_id": st.tuples(st.integers(0, 2), st.integers(0, 2)), "is_expandable": ODD,
              "frames": FRAMES, "stream": FIELD},
)
SNAPSHOT = st.fixed_dictionaries(
    {},
    optional={
        "segments": st.lists(SEGMENT, max_size=4),
        "device_traces": st.lists(st.lists(_event(SHARED_FRAMES), max_size=6), max_size=3),
        "allocator_settings": st.dictionaries(st.text(max_size=5), ODD, max_size=3),
        "external_annotations": st.lists(
            st.fixed_dictionaries({"stage": st.sampled_from(["START", "END"]), "name": st.text(max_size=5),
                                   "device": st.integers(0, 2), "time_us": INTS}), max_size=3),
        "other": ODD,
    },
)


@SETTINGS
@given(snapshot=SNAPSHOT, protocol=st.sampled_from([2, 3, 4, 5]))
def test_generated_snapshots_property(snapshot: dict[str, Any], protocol: int, tmp_path_factory: Any) -> None:
    """Property: any snapshot-shaped pickle (odd values, missing keys, frames shared through the
    memo): the compiled reader's frames are the witness's, or both refuse in the same line, or
    it handed the file back; one of plain whole numbers, texts and lists it always reads."""
    path = tmp_path_factory.mktemp("gen") / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=protocol))
    _agree(path)


@SETTINGS
@given(
    snapshot=st.fixed_dictionaries(
        {"segments": st.lists(st.fixed_dictionaries({"address": INTS, "device": st.integers(0, 2),
                                                      "blocks": st.lists(st.fixed_dictionaries(
                                                          {"size": INTS, "state": st.just("inactive"),
                                                           "frames": FRAMES}), max_size=3)}), max_size=3),
         "device_traces": st.lists(st.lists(st.fixed_dictionaries(
             {"action": TEXT, "addr": INTS, "size": INTS, "time_us": INTS, "frames": FRAMES}), max_size=5),
             max_size=2)}),
    protocol=st.sampled_from([2, 3, 4, 5]),
)
def test_well_formed_snapshots_are_read_property(
    snapshot: dict[str, Any], protocol: int, tmp_path_factory: Any
) -> None:
    """Property: a well-formed snapshot is read by the compiled reader itself, never handed back."""
    path = tmp_path_factory.mktemp("ok") / "snap.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=protocol))
    _agree(path, must_read=True)


def _small_snapshot() -> bytes:
    frames = [{"name": "f", "filename": "a.py", "line": 3}, {"name": "g", "filename": "b.py", "line": 9}]
    return pickle.dumps({
        "segments": [{"address": 4096, "device": 0, "total_size": 8192, "segment_pool_id": (0, 0),
                      "blocks": [{"address": 4096, "size": 512, "state": "active_allocated", "frames": frames},
                                 {"size": 7680, "state": "inactive"}]}],
        "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 7,
                            "frames": frames}, {"action": "free_requested", "addr": 4096, "size": 512,
                                                "time_us": 2**40, "frames": frames[:1]}]],
        "allocator_settings": {"expandable_segments": False},
    }, protocol=4)


@SETTINGS
@given(data=st.data(), protocol=st.sampled_from([2, 4]))
def test_damaged_pickles_property(data: st.DataObject, protocol: int, tmp_path_factory: Any) -> None:
    """Property: a snapshot with bytes overwritten, cut short or with bytes spliced in (hostile
    lengths, memo indices, opcodes): the compiled reader never crashes, and agrees with the
    witness or hands the file back."""
    base = bytearray(pickle.dumps(pickle.loads(_small_snapshot()), protocol=protocol))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["set", "cut", "insert"]))
        at = data.draw(st.integers(0, len(base) - 1))
        if kind == "set":
            base[at] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del base[at:]
            if not base:
                base = bytearray(b"\x80")
        else:
            base[at:at] = data.draw(st.binary(min_size=1, max_size=9))
    path = tmp_path_factory.mktemp("bad") / "snap.pickle"
    path.write_bytes(bytes(base))
    _agree(path)


@pytest.mark.parametrize("protocol", [2, 4, 5])
@pytest.mark.parametrize("opcode", sorted(DANGEROUS_OPCODES))
def test_dangerous_opcodes_are_handed_back(opcode: str, protocol: int, tmp_path: Path) -> None:
    """Each opcode of code: the compiled reader stops at it (naming it) and never builds columns;
    the unpickler's refusal, in its one line, is what the reader says."""
    if opcode == "NEWOBJ_EX" and protocol < 4:
        pytest.skip("the pickler writes NEWOBJ_EX from protocol 4 on")
    target = tmp_path / "made"
    snap = tmp_path / "evil.pickle"
    snap.write_bytes(payload(opcode, protocol, str(target)))
    raw = columns.read_raw(str(snap))
    assert isinstance(raw, tuple) and raw[0] == "fallback"
    assert raw[1].startswith("opcode ") and raw[1].split()[1] in DANGEROUS_OPCODES, raw
    with pytest.raises(ProfviewError) as caught:
        read_snapshot(snap)
    assert str(caught.value).startswith(f"{snap}: refused: pickle opcode ")
    assert str(caught.value) == f"{snap}: {_python(snap)}"
    assert not target.exists()


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64 - 1, 2**200])
def test_whole_numbers_past_64_bits_are_handed_back(value: int, tmp_path: Path) -> None:
    """An address past int64 (LONG1 of 9 bytes): handed back, and the unpickler's line names it."""
    snap = tmp_path / "big.pickle"
    snap.write_bytes(pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "addr": value, "size": 1}]]}))
    assert _compiled(snap) is None
    with pytest.raises(ProfviewError, match=r"'addr' = .* out of the 64-bit range"):
        read_snapshot(snap)
    edge = tmp_path / "edge.pickle"
    edge.write_bytes(pickle.dumps({"device_traces": [[{"action": "alloc", "addr": 2**63 - 1, "size": -(2**63)}]]}))
    frames = _agree(edge, must_read=True)
    assert frames is not None and frames.events["addr"].to_list() == [2**63 - 1]


def test_a_frames_list_shared_by_the_memo_is_one_stack(tmp_path: Path) -> None:
    """Frames lists shared through the memo (as torch writes them): one stack, numbered as the
    witness numbers them (first seen over the blocks, then the events)."""
    snap = tmp_path / "snap.pickle"
    snap.write_bytes(_small_snapshot())
    frames = _agree(snap, must_read=True)
    assert frames is not None
    assert frames.blocks["stack"].to_list() == [0, None]
    assert frames.events["stack"].to_list() == [0, 1]
    assert frames.stacks.filter(pl.col("stack") == 0)["name"].to_list() == ["f", "g"]


@pytest.mark.parametrize(
    "data",
    [
        b"\x80\x02}r\xff\xff\xff\x7f.",  # LONG_BINPUT far past the memo's next index
        b"\x80\x04}\x94j\xff\xff\xff\x00.",  # LONG_BINGET of an index never put
        b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f}.",  # a FRAME longer than the file
        b"\x80\x04X\xff\xff\xff\xffab",  # a string longer than the file
        b"\x80\x04\x8b\xff\xff\xff\x7f\x00",  # LONG4 longer than the file
        b"\x80\x04" + b"(" * 100_000 + b"}.",  # deep marks
        b"\x80\x04" + b"]" * 100_000 + b"a" * 99_999 + b".",  # deep nesting
    ],
)
def test_hostile_headers_are_handed_back(data: bytes, tmp_path: Path) -> None:
    """Lengths, memo indices and nesting a file could use to make the reader read past its bytes
    or allocate without end: each is handed back (the reader never builds its columns)."""
    snap = tmp_path / "hostile.pickle"
    snap.write_bytes(data)
    raw = columns.read_raw(str(snap))
    assert isinstance(raw, tuple) and raw[0] == "fallback"
