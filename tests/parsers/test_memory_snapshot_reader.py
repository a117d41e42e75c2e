"""The memory snapshot reader never runs a pickle: every opcode that could reach code is refused
in one line naming the file and the opcode, and a pickle whose loading would create a file (as
a plain ``pickle.load`` proves here, by creating it) leaves no file behind."""

from __future__ import annotations

import copyreg
import gzip
import os
import pickle
import pickletools
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import SETTINGS
from support import SAMPLES, run_cli

from profview.errors import ProfviewError
from profview.parsers.snapshot.reader import looks_like_snapshot, read_snapshot
from profview.parsers.snapshot.unpickle import DANGEROUS_OPCODES

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
#: An extension code free in the registry (the EXT payloads register ``builtins.open`` under it).
EXT_CODES = {"EXT1": 0xF0, "EXT2": 0xF0F0, "EXT4": 0x0F0F0F0}


class _Reduce:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


class _SetState:
    """Creates the file named by its state when BUILD calls ``__setstate__``."""

    def __setstate__(self, state: str) -> None:
        open(state, "w").close()


class _Build:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (_SetState, (), self.path)


class _New:
    """Creates the file named by its argument in ``__new__`` (what NEWOBJ and NEWOBJ_EX call)."""

    path = ""
    ex = False

    def __new__(cls, path: str | None = None) -> _New:
        if path is not None:
            open(path, "w").close()
        return super().__new__(cls)

    def __reduce_ex__(self, protocol: object) -> tuple[Any, ...]:
        if self.ex:
            return (copyreg.__newobj_ex__, (_New, (self.path,), {}))  # type: ignore[attr-defined]
        return (copyreg.__newobj__, (_New, self.path))  # type: ignore[attr-defined]


def _new_obj(path: str, ex: bool) -> _New:
    made = _New()
    made.path, made.ex = path, ex
    return made


class _Persistent:
    def __init__(self, path: str) -> None:
        self.path = path


class _PersistentPickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        return obj.path if isinstance(obj, _Persistent) else None


def _unicode(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _wrapped(payload: Any) -> dict[str, Any]:
    """A snapshot whose one event's frames are the payload (the danger is deep, not on top)."""
    return {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 2, "frames": payload}]]}


def payload(opcode: str, protocol: int, path: str, nested: bool = True) -> bytes:
    """A pickle of ``protocol`` using ``opcode`` whose plain loading creates ``path``."""
    def dump(obj: Any) -> bytes:
        return pickle.dumps(_wrapped(obj) if nested else obj, protocol=protocol)

    head = b"\x80" + bytes([protocol])
    if opcode in ("GLOBAL", "STACK_GLOBAL", "REDUCE"):
        if opcode == "REDUCE" or (opcode == "GLOBAL") == (protocol < 4):
            return dump(_Reduce(path))
        if opcode == "GLOBAL":  # written by hand at protocol 4-5
            return head + b"cbuiltins\nopen\n" + _unicode(path) + _unicode("w") + b"\x86R."
        return head + _unicode("builtins") + _unicode("open") + b"\x93" + _unicode(path) + _unicode("w") + b"\x86R."
    if opcode == "BUILD":
        return dump(_Build(path))
    if opcode in ("NEWOBJ", "NEWOBJ_EX"):
        return dump(_new_obj(path, ex=opcode == "NEWOBJ_EX"))
    if opcode == "INST":
        return head + b"(" + _unicode(path) + _unicode("w") + b"ibuiltins\nopen\n."
    if opcode == "OBJ":
        return head + b"(cbuiltins\nopen\n" + _unicode(path) + _unicode("w") + b"o."
    if opcode in EXT_CODES:
        copyreg.add_extension(open.__module__, "open", EXT_CODES[opcode])
        try:
            return dump(_Reduce(path))
        finally:
            copyreg.remove_extension(open.__module__, "open", EXT_CODES[opcode])
    if opcode == "PERSID":
        return head + b"P" + path.encode() + b"\n."
    if opcode == "BINPERSID":
        import io

        out = io.BytesIO()
        _PersistentPickler(out, protocol=protocol).dump(_wrapped(_Persistent(path)) if nested else _Persistent(path))
        return out.getvalue()
    raise AssertionError(opcode)


def plain_load(data: bytes, opcode: str) -> None:
    """Load ``data`` as a careless reader would (``pickle.loads``; for a persistent id, an
    unpickler that opens what it names), with the extension registered for the EXT payloads."""
    import io

    class Careless(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            return open(pid, "w")

    if opcode in EXT_CODES:
        copyreg.add_extension(open.__module__, "open", EXT_CODES[opcode])
    try:
        Careless(io.BytesIO(data)).load()
    finally:
        if opcode in EXT_CODES:
            copyreg.remove_extension(open.__module__, "open", EXT_CODES[opcode])


def _opcodes(data: bytes) -> set[str]:
    return {op.name for op, _arg, _at in pickletools.genops(data)}


def _check_refused(opcode: str, protocol: int, gzipped: bool, nested: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "created-by-the-pickle")
        data = payload(opcode, protocol, target, nested)
        assert opcode in _opcodes(data)
        snap = os.path.join(folder, "snap.pickle" + (".gz" if gzipped else ""))
        with open(snap, "wb") as fh:
            fh.write(gzip.compress(data) if gzipped else data)
        assert looks_like_snapshot(snap)
        with pytest.raises(ProfviewError) as caught:
            read_snapshot(snap)
        assert not os.path.exists(target), "the pickle ran"
        message = str(caught.value)
        assert message.startswith(f"{snap}: refused: pickle opcode ")
        named = message.split("pickle opcode ", 1)[1].split()[0]
        assert named in DANGEROUS_OPCODES
        assert DANGEROUS_OPCODES[named] in message
        assert "\n" not in message
        plain_load(data, opcode)  # the witness: the same bytes, loaded carelessly, create the file
        assert os.path.exists(target)


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("opcode", sorted(DANGEROUS_OPCODES))
def test_every_dangerous_opcode_is_refused(opcode: str, protocol: int) -> None:
    """Each opcode of the dangerous class, in each protocol: refused, and the file never made."""
    if opcode == "NEWOBJ_EX" and protocol < 4:
        pytest.skip("the pickler writes NEWOBJ_EX from protocol 4 on")
    _check_refused(opcode, protocol, gzipped=False, nested=True)


@SETTINGS
@given(
    opcode=st.sampled_from(sorted(DANGEROUS_OPCODES)),
    protocol=st.sampled_from([2, 3, 4, 5]),
    gzipped=st.booleans(),
    nested=st.booleans(),
)
def test_no_pickle_runs_property(opcode: str, protocol: int, gzipped: bool, nested: bool) -> None:
    """Property: whatever dangerous opcode, protocol, compression and depth, the reader refuses
    the pickle in one line and the file its loading would create never exists."""
    if opcode == "NEWOBJ_EX" and protocol < 4:
        protocol = 4
    _check_refused(opcode, protocol, gzipped, nested)


@pytest.mark.parametrize(
    ("data", "opcode"),
    [
        (b"\x80\x04])R.", "REDUCE"),  # a call of a list: no global at all
        (b"\x80\x04}}b.", "BUILD"),  # BUILD on a dict
        (b"\x80\x04]).", None),  # plain data: a list then a tuple, STOP: not a snapshot
    ],
)
def test_code_opcodes_without_a_global(tmp_path: Path, data: bytes, opcode: str | None) -> None:
    """An opcode of code that has no global to call is refused by its name too."""
    snap = tmp_path / "snap.pickle"
    snap.write_bytes(data)
    with pytest.raises(ProfviewError) as caught:
        read_snapshot(snap)
    message = str(caught.value)
    assert message.startswith(f"{snap}: ")
    if opcode:
        assert f"pickle opcode {opcode} " in message
    else:
        assert "not a memory snapshot" in message or "not a readable" in message


def test_a_pickle_that_is_not_a_snapshot(tmp_path: Path) -> None:
    """A pickle of plain data that is not a snapshot says what it is."""
    snap = tmp_path / "model.pickle"
    snap.write_bytes(pickle.dumps({"weights": [1, 2]}, protocol=4))
    with pytest.raises(ProfviewError, match=r"model\.pickle: is a pickle of a dict without 'segments'"):
        read_snapshot(snap)
    snap.write_bytes(pickle.dumps([1, 2, 3], protocol=5))
    with pytest.raises(ProfviewError, match="is a pickle of a list"):
        read_snapshot(snap)


def test_a_cut_snapshot(tmp_path: Path) -> None:
    """A snapshot cut short (a copy that stopped) is one line, not a traceback."""
    snap = tmp_path / "cut.pickle"
    snap.write_bytes(SAMPLE.read_bytes()[:200_000])
    with pytest.raises(ProfviewError, match=r"cut\.pickle: not a readable memory snapshot pickle"):
        read_snapshot(snap)


def test_a_malformed_entry_is_named(tmp_path: Path) -> None:
    """A snapshot whose entry has the wrong type names the entry."""
    snap = tmp_path / "odd.pickle"
    bad = {"segments": [{"address": "x", "blocks": []}], "device_traces": []}
    snap.write_bytes(pickle.dumps(bad, protocol=4))
    with pytest.raises(ProfviewError, match=r"odd\.pickle: segments\[0\]: 'address' is str"):
        read_snapshot(snap)


@pytest.mark.parametrize(("value", "kind"), [(True, "bool"), (1.5, "float"), ("64", "str"), (2**64, "int")])
def test_an_event_field_that_is_not_a_whole_number_is_named(tmp_path: Path, value: object, kind: str) -> None:
    """An event whose size is not a 64-bit whole number (a bool too, which Polars alone would take
    as 1) names its device, index and field, not a figure built on it."""
    snap = tmp_path / "odd.pickle"
    good = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1}
    bad = {"segments": [], "device_traces": [[good, {**good, "size": value}]]}
    snap.write_bytes(pickle.dumps(bad, protocol=4))
    with pytest.raises(ProfviewError, match=rf"odd\.pickle: device_traces\[0\]\[1\]: 'size' (is {kind}|= )"):
        read_snapshot(snap)


def test_memory_limit_refuses_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a memory limit too small for the snapshot's objects: one line, before unpickling."""
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(100 * 2**20))
    with pytest.raises(ProfviewError, match=r"needs about .* of memory") as caught:
        read_snapshot(SAMPLE)
    assert caught.value.out_of_memory


def test_cli_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``profview summary evil.pickle``: exit non-zero, one line naming the file, no file made."""
    target = tmp_path / "made"
    evil = tmp_path / "evil.pickle"
    evil.write_bytes(payload("REDUCE", 4, str(target)))
    code = run_cli(["summary", str(evil)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1 and str(evil) in err[0] and "STACK_GLOBAL" in err[0]
    assert not target.exists()


def _one_segment(blocks: list[dict[str, Any]], address: int, frames_name: str = "a.py") -> dict[str, Any]:
    frames = [{"filename": frames_name, "line": 1, "name": "f"}]
    segment = {"device": 0, "address": address, "total_size": 8 << 20, "stream": 0, "segment_type": "large",
               "allocated_size": 0, "active_size": 0, "blocks": [dict(b, frames=frames) for b in blocks]}
    return {"segments": [segment], "device_traces": [[]]}


@pytest.mark.parametrize("pure", ["1", "0"])
def test_a_lone_surrogate_in_a_text_is_read_as_a_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pure: str
) -> None:
    """A file name with a lone surrogate (which Python's unpickler makes from such bytes) reads as
    U+FFFD, on both readers; it was an internal error (UnicodeEncodeError in Polars)."""
    monkeypatch.setenv("PROFVIEW_PURE_PYTHON", pure)
    path = tmp_path / "surrogate.pickle"
    path.write_bytes(pickle.dumps(_one_segment([{"size": 2 << 20, "requested_size": 2 << 20,
                                                 "state": "active_allocated"}], 1 << 40, "a\ud800.py"), protocol=4))
    frames = read_snapshot(path)
    assert frames.stacks["filename"].to_list() == ["a\ufffd.py"]
    assert run_cli(["summary", str(path)]) == 0
    assert "a\ufffd.py:1 f" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("address", "blocks", "named"),
    [
        ((1 << 63) - (4 << 20), [{"size": 6 << 20}, {"size": 2 << 20}], "blocks[1]"),  # an end past int64
        (-(1 << 63) + 5, [{"address": (1 << 63) - 8, "size": 4}], "'offset'"),  # an offset past int64
    ],
)
def test_a_block_whose_sums_pass_64_bits_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: int, blocks: list[dict[str, Any]], named: str
) -> None:
    """A block address or offset that only a sum of two in-range numbers puts past int64 is one
    line naming the block (it was an internal error building the column)."""
    path = tmp_path / "overflow.pickle"
    full = [dict(b, requested_size=0, state="inactive") for b in blocks]
    path.write_bytes(pickle.dumps(_one_segment(full, address), protocol=4))
    code = run_cli(["summary", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert str(path) in err[0] and named in err[0] and "64-bit range" in err[0] and "internal error" not in err[0]


@pytest.mark.parametrize("pure", ["1", "0"])
def test_a_device_with_an_empty_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: str) -> None:
    """``device_traces: [[]]`` (history recorded, nothing happened on the device): the summary
    has no events and the end state's totals (the timeline's walk had failed on no events)."""
    monkeypatch.setenv("PROFVIEW_PURE_PYTHON", pure)
    path = tmp_path / "empty_trace.pickle"
    path.write_bytes(pickle.dumps(_one_segment([{"size": 2 << 20, "requested_size": 1 << 20,
                                                 "state": "active_allocated"}], 1 << 40), protocol=5))
    from profview.profiles.snapshot_profile import load_snapshot

    summary = load_snapshot(path).summary(5)
    assert summary["events"] == 0 and summary["allocated_bytes"] == 2 << 20 and summary["requested_bytes"] == 1 << 20


def test_sizes_whose_sums_pass_64_bits_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four allocations of 2^62 bytes each: int64 running sums would wrap to a negative or small
    peak; the summary is one line naming the file instead (it gave a wrapped peak, exit 0)."""
    frames = [{"filename": "a.py", "line": 1, "name": "f"}]
    trace = [{"action": action, "addr": (1 << 41) + i * (1 << 20), "size": (1 << 62) - 1, "stream": 0,
              "time_us": t + i, "frames": frames} for action, t in (("alloc", 0), ("free_completed", 10))
             for i in range(4)]
    snapshot = _one_segment([{"size": 2 << 20, "requested_size": 2 << 20, "state": "active_allocated"}], 1 << 40)
    snapshot["device_traces"] = [trace]
    path = tmp_path / "wrap.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    code = run_cli(["summary", str(path), "--format", "json"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and str(path) in err[0] and "64-bit" in err[0], (code, err)
    assert captured.out == ""


@pytest.mark.parametrize("pure", ["1", "0"])
def test_the_older_block_layout_reads_its_allocation_from_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pure: str
) -> None:
    """Blocks without ``frames`` whose ``history`` lists their allocations (the layout before
    blocks had frames and ``requested_size``): the first entry's ``real_size`` and ``frames`` are
    the block's requested size and stack, on both readers, as torch's ``_memory_viz`` reads them."""
    monkeypatch.setenv("PROFVIEW_PURE_PYTHON", pure)
    frames = [{"filename": "train.py", "line": 12, "name": "forward"}]
    old = [{"filename": "old.py", "line": 3, "name": "earlier"}]
    blocks = [
        {"size": 4 << 20, "state": "active_allocated",
         "history": [{"addr": 1 << 40, "real_size": (4 << 20) - 5, "frames": frames},
                     {"addr": 1 << 40, "real_size": 1, "frames": old}]},
        {"size": 2 << 20, "state": "active_allocated", "history": []},
        {"size": 2 << 20, "state": "inactive"},
    ]
    segment = {"device": 0, "address": 1 << 40, "total_size": 8 << 20, "stream": 0, "segment_type": "large",
               "allocated_size": 6 << 20, "active_size": 6 << 20, "blocks": blocks}
    path = tmp_path / "older.pickle"
    path.write_bytes(pickle.dumps({"segments": [segment]}, protocol=2))
    from profview.profiles.snapshot_profile import load_snapshot

    profile = load_snapshot(path)
    got = profile.frames.blocks.select("size", "requested_size", "state").rows()
    assert got == [(4 << 20, (4 << 20) - 5, "active_allocated"), (2 << 20, None, "active_allocated"),
                   (2 << 20, None, "inactive")]
    assert profile.stack_text(profile.frames.blocks["stack"][0]) == ["train.py:12 forward"]
    assert profile.frames.blocks["stack"][1] is None
    summary = profile.summary(5)
    assert summary["requested_bytes"] is None  # the second live block's history is empty: not known
    assert summary["allocated_bytes"] == 6 << 20
    assert summary["top_sites"][0]["site"] == "train.py:12 forward"
