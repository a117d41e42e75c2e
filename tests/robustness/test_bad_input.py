"""Bad input: truncated, corrupt, empty, wrong or odd files.  Each either loads what is there
(with a warning) or fails with one line naming the file and the problem, exit code 2."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from support import run_cli, sample

import profview
from profview.errors import ProfviewError

DDP = "ddp_nccl_streams.pt.trace.json.gz"


def ddp_text() -> str:
    with gzip.open(sample(DDP), "rt") as fh:
        return fh.read()


def complete_events(text: str) -> int:
    """Count the events of a cut document with the standard library, one object at a time."""
    decoder = json.JSONDecoder()
    start = text.find("[", text.find('"traceEvents"'))
    if start < 0:
        return 0
    pos, count = start + 1, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            _obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return count
        count += 1


# Offsets spread over the file, plus cuts inside a string, just after an event, and in the footer.
def cut_offsets(text: str) -> list[int]:
    spread = [int(len(text) * f) for f in (0.02, 0.1, 0.25, 0.4, 0.5, 0.63, 0.77, 0.9, 0.99)]
    in_name = text.find('"name": "', len(text) // 3) + 12
    after_event = text.find("},", len(text) // 2) + 1
    footer = text.rfind('"traceName"') + 5
    return [*spread, in_name, after_event, footer]


@pytest.mark.parametrize("fraction_index", range(12))
def test_truncated_plain_trace_recovers_every_complete_event(tmp_path: Path, fraction_index: int) -> None:
    text = ddp_text()
    cut = cut_offsets(text)[fraction_index]
    target = tmp_path / "cut.json"
    target.write_text(text[:cut])
    expected = complete_events(text[:cut])
    profile = profview.load(target, use_cache=False)
    assert profile.events.height == expected
    assert profile.truncated
    assert any(f"read {expected:,} complete events" in w for w in profile.warnings)
    # every table is consistent with the events read
    gpu = profile.gpu
    assert profile.ops()["device_self_us"].sum() == pytest.approx(gpu["dur"].sum())
    assert profile.kernels()["calls"].sum() == gpu.filter(gpu["kind"] == "kernel").height


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6, 0.95])
def test_truncated_gzip_stream(tmp_path: Path, fraction: float) -> None:
    raw = sample(DDP).read_bytes()
    cut = raw[: int(len(raw) * fraction)]
    target = tmp_path / "cut.json.gz"
    target.write_bytes(cut)
    text = zlib.decompressobj(wbits=31).decompress(cut).decode("utf-8", "replace")
    expected = complete_events(text)
    if expected == 0:
        with pytest.raises(ProfviewError, match="cut before its first complete event"):
            profview.load(target, use_cache=False)
        return
    profile = profview.load(target, use_cache=False)
    assert profile.events.height == expected
    assert any("gzip stream ends early" in w for w in profile.warnings)


def test_cli_reports_truncation_and_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = ddp_text()
    target = tmp_path / "cut.json"
    target.write_text(text[: len(text) // 2])
    assert run_cli(["export", str(target), "-o", str(tmp_path / "k.csv"), "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "truncated" in err
    assert f"read {complete_events(text[: len(text) // 2]):,} complete events" in err


def test_byte_flip_in_gzip_keeps_what_decompresses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(sample(DDP).read_bytes())
    data[len(data) // 2] ^= 0xFF
    target = tmp_path / "flip.json.gz"
    target.write_bytes(bytes(data))
    code = run_cli(["export", str(target), "-o", str(tmp_path / "k.csv"), "--no-cache"])
    err = capsys.readouterr().err
    if code == 0:
        assert "corrupt gzip data" in err or "broken" in err
    else:
        assert code == 2 and err.count("\n") == 1 and str(target) in err


BROKEN = {
    "empty.json": (b"", "the file is empty"),
    "junk.bin": (bytes(range(256)) * 20, "not a recognised profile"),
    "array.json": (b"[1, 2, 3]", "the trace has no events"),
    "number.json": (b"42", "not a recognised profile"),
    "dict.json": (b'{"a": 1, "b": [1, 2]}', "not a recognised profile"),
    "events_not_list.json": (b'{"traceEvents": 5}', "JSON but not a Chrome trace"),
    "text.txt": (b"hello\nthis is not a profile\n", "not a recognised profile"),
    "opened.json": (b'{"traceEvents": [', "cut before its first complete event"),
    "gz_garbage.json.gz": (b"\x1f\x8b" + b"\x00" * 50, "gzip"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_input_gets_one_line_error(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    content, problem = BROKEN[name]
    target = tmp_path / name
    target.write_bytes(content)
    assert run_cli(["summary", str(target), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"profview: error: {target}: ")
    assert problem in err


def test_missing_file_and_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(tmp_path / "nope.json")]) == 2
    assert run_cli(["summary", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"profview: error: {tmp_path / 'nope.json'}: no such file",
        # a directory is a job (several rank traces): this one holds none
        f"profview: error: {tmp_path}: no trace files (*.json, *.json.gz) nor Nsight Systems exports (*.sqlite) "
        "in this directory",
    ]


def write_events(path: Path, events: list[dict] | str) -> Path:
    body = events if isinstance(events, str) else json.dumps(events)
    path.write_text('{"traceEvents": ' + body + "}")
    return path


def test_odd_values_load_with_warnings(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": "neg", "ts": 10, "dur": -5, "pid": 0, "tid": 7},
        {"ph": "X", "cat": "kernel", "name": "no_ts", "dur": 3, "pid": 0, "tid": 7},
        {"ph": "X", "cat": "mystery", "name": "unknown category", "ts": 1, "dur": 1, "pid": 1, "tid": 1},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ok",
            "ts": 20,
            "dur": 4,
            "pid": 0,
            "tid": 7,
            "args": {"External id": 5, "correlation": 5},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "dup",
            "ts": 30,
            "dur": 4,
            "pid": 0,
            "tid": 7,
            "args": {"External id": 5, "correlation": 5},
        },
        {"ph": "X", "cat": "kernel", "name": "k" * 1_000_000, "ts": 40, "dur": 1, "pid": 0, "tid": 7},
        {"ph": "X", "cat": "kernel", "name": "huge id", "ts": 50, "dur": 1, "args": {"correlation": 2**70}},
    ]
    profile = profview.load(write_events(tmp_path / "odd.json", events), use_cache=False)
    kernels = profile.kernels()
    assert set(kernels["name"]) == {"neg", "ok", "dup", "k" * 1_000_000, "huge id"}
    assert kernels.filter(kernels["name"] == "neg")["total_us"][0] == 0.0
    assert any("negative duration" in w for w in profile.warnings)
    assert any("without a valid ts or dur" in w for w in profile.warnings)
    assert profile.events.filter(profile.events["name"] == "huge id")["correlation"][0] is None
    assert profile.ops()["device_self_us"].sum() == pytest.approx(0.0 + 4 + 4 + 1 + 1)


def test_nan_and_non_utf8(tmp_path: Path) -> None:
    nan = write_events(
        tmp_path / "nan.json",
        '[{"ph":"X","cat":"kernel","name":"a","ts":NaN,"dur":1},'
        '{"ph":"X","cat":"kernel","name":"b","ts":1,"dur":Infinity},'
        '{"ph":"X","cat":"kernel","name":"c","ts":2,"dur":3}]',
    )
    profile = profview.load(nan, use_cache=False)
    assert profile.kernels()["name"].to_list() == ["c"]
    assert any("NaN/Infinity" in w for w in profile.warnings)
    raw = tmp_path / "latin1.json"
    raw.write_bytes(b'{"traceEvents": [{"ph":"X","cat":"kernel","name":"caf\xe9","ts":1,"dur":2}]}')
    assert profview.load(raw, use_cache=False).kernels()["name"].to_list() == ["caf\ufffd"]


def test_memory_check_fails_early(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused before reading, by the documented rule (docs/performance.md, the memory guard): a gzip
    file's content taken as 4x its size, times the chunked reader's factor for this install, plus
    the libraries' base."""
    from profview.parsers.source import BASE_MEMORY, memory_factor

    size = sample(DDP).stat().st_size
    expected = round((int(size * 4 * memory_factor(chunked=True)) + BASE_MEMORY) / 2**20)
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(10 * 2**20))
    refused = rf"needs about {expected} MiB of memory to load, but only 10 MiB is available"
    with pytest.raises(ProfviewError, match=refused):
        profview.load(sample(DDP), use_cache=False)


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
@pytest.mark.parametrize(("where", "byte"), [("name", "\x00"), ("name", '"'), ("comma", "]"), ("comma", "}")])
def test_damage_mid_plain_trace_is_fast_and_exact(tmp_path: Path, fraction: float, where: str, byte: str) -> None:
    """A damaged byte in the middle costs a few tries, not one per later event (it used to hang)."""
    import time

    text = ddp_text()
    start = int(len(text) * fraction)
    at = text.find('"name": "', start) + 10 if where == "name" else text.find("},", start) + 1
    damaged = text[:at] + byte + text[at + 1 :]
    target = tmp_path / "damaged.json"
    target.write_text(damaged)
    started = time.perf_counter()
    profile = profview.load(target, use_cache=False)
    assert time.perf_counter() - started < 10
    expected = complete_events(damaged)
    assert profile.truncated
    assert profile.events.height == expected > 0
    assert any(f"read {expected:,} complete events" in w for w in profile.warnings)


def test_cut_inside_a_long_string_of_braces_does_not_hang(tmp_path: Path) -> None:
    head = '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2},'
    target = tmp_path / "braces.json"
    target.write_text(head + '{"ph": "X", "cat": "kernel", "name": "' + "}" * 200_000)
    profile = profview.load(target, use_cache=False)
    assert profile.events.height == 1 and profile.truncated


@pytest.mark.parametrize("trailer", [0xFFFFFFFF, 0x7FFFFFFF, 0])
def test_forged_gzip_trailer_neither_refuses_nor_allocates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trailer: int
) -> None:
    """The last 4 bytes of a cut or forged gzip say nothing: a small file must still open."""
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(1 * 2**30))
    data = bytearray(sample(DDP).read_bytes())
    data[-4:] = trailer.to_bytes(4, "little")
    target = tmp_path / "forged.json.gz"
    target.write_bytes(bytes(data))
    assert profview.load(target, use_cache=False).events.height > 0


def test_gzip_bomb_fails_early_with_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_MEMORY_LIMIT", str(300 * 2**20))
    target = tmp_path / "bomb.json.gz"
    # 128 MiB of spaces: over the 300 MiB budget by both readers' chunked factors (1.2x, 2.4x, + 200 MiB)
    target.write_bytes(gzip.compress(b"[" + b" " * (128 * 2**20), 1))
    with pytest.raises(ProfviewError, match=r"needs about \d+ MiB of memory to load, but only 300 MiB is available"):
        profview.load(target, use_cache=False)


def test_internal_errors_are_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import profview.profiles.loading

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("unexpected\nsecond line")

    monkeypatch.delenv("PROFVIEW_DEBUG", raising=False)
    monkeypatch.setattr(profview.profiles.loading, "load", boom)
    code = run_cli(["summary", str(sample(DDP))])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "internal error (RuntimeError" in err and str(sample(DDP)) in err


def test_invalid_utf8_in_metadata_is_replaced(tmp_path: Path) -> None:
    event = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}'
    for document in (
        b'{"traceName": "r\xff\xfe", "traceEvents": [' + event + b"]}",  # whole document
        b'{"traceName": "r\xff\xfe", "traceEvents": [' + event + b", {",  # cut: header read on its own
    ):
        target = tmp_path / "latin1_meta.json"
        target.write_bytes(document)
        profile = profview.load(target, use_cache=False)
        assert profile.events.height == 1 and profile.metadata["traceName"] == "r\ufffd\ufffd"


@pytest.mark.parametrize("devices", [5, "H100", [1, 2], {"name": "x"}, [None], True])
def test_odd_device_properties_are_ignored(tmp_path: Path, devices: object, capsys: pytest.CaptureFixture[str]) -> None:
    event = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}
    target = tmp_path / "devices.json"
    target.write_text(json.dumps({"traceEvents": [event], "deviceProperties": devices}))
    assert run_cli(["summary", str(target), "--no-cache"]) == 0
    assert "k" in capsys.readouterr().out


def test_devices_and_pipes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import threading

    assert run_cli(["summary", "/dev/zero"]) == 2  # would never end
    assert "is a device" in capsys.readouterr().err
    fifo = tmp_path / "pipe.json.gz"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(sample(DDP).read_bytes())

    writer = threading.Thread(target=feed)
    writer.start()
    assert run_cli(["summary", str(fifo)]) == 0  # <(zcat trace.json.gz) and the like
    writer.join()
    assert "aten::" in capsys.readouterr().out
