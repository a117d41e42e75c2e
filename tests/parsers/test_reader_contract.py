"""One contract for the compiled scanner and the pure-Python reader: named cases (issue 12).

Each case is read by both readers in one process; both must give the same answer, and the answer
must be the documented one (docs/robustness.md, "One answer for both readers").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from support import sample

from profview.errors import ProfviewError
from profview.parsers import chrome_trace, fast_chrome
from profview.parsers.chrome_trace import read_chrome
from profview.parsers.trace_file import read_trace_file

COMPILED = fast_chrome._fastscan
HEADER = b'{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H100"}], "traceEvents": [%s], "traceName": "t"}'
KERNEL = (
    b'{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,'
    b' "args": {"External id": 3, "correlation": 4, "device": 0, "stream": 7, "unused": %s}}'
)
OP = b'{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 20, "args": {"External id": 3}}'
READERS = ["compiled", "pure"] if COMPILED is not None else ["pure"]


def trace(unused: bytes = b"1", kernel: bytes | None = None) -> bytes:
    return HEADER % b", ".join([kernel or KERNEL % unused, OP, OP])


def read(data: bytes, reader: str, monkeypatch: pytest.MonkeyPatch) -> chrome_trace.ChromeTrace:
    monkeypatch.setattr(fast_chrome, "_fastscan", COMPILED if reader == "compiled" else None)
    return chrome_trace.parse_chrome_trace(bytearray(data), "t.json")


def both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> chrome_trace.ChromeTrace:
    """The trace as both readers read it, after checking that they agree."""
    answers = [read(data, reader, monkeypatch) for reader in READERS]
    for other in answers[1:]:
        assert other.events.rows() == answers[0].events.rows()
        assert (other.metadata, other.warnings) == (answers[0].metadata, answers[0].warnings)
    return answers[0]


@pytest.mark.parametrize("escape", [b'"\\ud800"', b'"\\udc00"', b'"a\\ud800\\ud800b"'])
def test_a_lone_surrogate_in_an_unused_field_costs_nothing(escape: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert both(trace(escape), monkeypatch).events.height == 3


def test_a_lone_surrogate_in_a_name_becomes_the_replacement_character(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = (KERNEL % b"1").replace(b'"name": "k"', b'"name": "k\\udc00x"')
    events = both(trace(kernel=kernel), monkeypatch).events
    assert events["name"].to_list()[0] == "k\ufffdx"


OVERFLOWING = [b"1e400", b"-1e400", b"7e4649", b"9" * 400, b"1" + b"0" * 300]


@pytest.mark.parametrize("number", OVERFLOWING)
def test_an_overflowing_number_in_an_id_or_unused_field_is_read_as_missing(
    number: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert both(trace(number), monkeypatch).events.height == 3
    kernel = (KERNEL % b"1").replace(b'"correlation": 4', b'"correlation": ' + number)
    events = both(trace(kernel=kernel), monkeypatch).events
    assert events.height == 3 and events["correlation"][0] is None


@pytest.mark.parametrize("number", [b"1e400", b"-7e4649", b"9" * 400])
def test_an_overflowing_time_loses_that_event_only_and_says_so(number: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = (KERNEL % b"1").replace(b'"ts": 10', b'"ts": ' + number)
    read_trace = both(trace(kernel=kernel), monkeypatch)
    assert read_trace.events.height == 3 and read_trace.events["ts"].null_count() == 1
    assert read_trace.warnings == ["1 complete events without a valid ts or dur were left out of the tables"]


def test_a_huge_but_finite_integer_time_is_read_as_its_double(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = (KERNEL % b"1").replace(b'"dur": 5', b'"dur": 1' + b"0" * 300)
    assert both(trace(kernel=kernel), monkeypatch).events["dur"][0] == 1e300


def test_a_byte_order_mark_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    read_trace = both(b"\xef\xbb\xbf" + trace(), monkeypatch)
    assert read_trace.events.height == 3 and read_trace.metadata["deviceProperties"][0]["name"] == "H100"


LATE_METADATA = b'{"traceEvents": [%s], "deviceProperties": [{"id": 0, "name": "H100"}]}' % b", ".join(
    [KERNEL % b"1", OP]
)


@pytest.mark.parametrize("after", [b"garbage", b"\n" + LATE_METADATA, b"}"])
def test_text_after_the_document_keeps_the_metadata_that_follows_the_events(
    after: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_trace = both(LATE_METADATA + after, monkeypatch)
    assert read_trace.events.height == 2
    assert read_trace.metadata["deviceProperties"] == [{"id": 0, "name": "H100"}]
    ignored = len(after.lstrip())  # counted from the first byte that is not whitespace
    assert read_trace.warnings == [f"ignored {ignored:,} bytes after the end of the JSON document"]


def test_a_repeated_trace_events_key_keeps_the_events_of_both_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    doubled = trace().replace(b'"traceName"', b'"traceEvents": [%s, %s], "traceName"' % (OP, OP))
    read_trace = both(doubled, monkeypatch)
    assert read_trace.events.height == 5
    assert read_trace.warnings == ["the trace has 2 'traceEvents' arrays; read the events of all of them"]


@pytest.mark.parametrize("zero", [b"-0", b"-0.0", b"-0e5"])
def test_negative_zero_is_zero(zero: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = (KERNEL % b"1").replace(b'"dur": 5', b'"dur": ' + zero)
    assert str(both(trace(kernel=kernel), monkeypatch).events["dur"][0]) == "0.0"


def test_ts_and_dur_are_copied_only_where_a_negative_zero_is() -> None:
    """-0 becomes 0 in the column that has one; a column without a -0 keeps its buffer, zeros or
    not (copying ts and dur of every event was 8 MB of gpt2_train_big's read peak)."""
    from profview.parsers.chrome_trace import _checked

    events = read_chrome(read_trace_file(sample("ddp_nccl_streams.pt.trace.json.gz"))).events
    zero = pl.int_range(pl.len()) == 5
    events = events.with_columns(pl.when(zero).then(0.0).otherwise(pl.col(n)).alias(n) for n in ("ts", "dur"))
    buffers = {name: _address(events[name]) for name in ("ts", "dur")}
    kept = _checked(events, "t", truncated=False, warnings=[])
    assert {name: _address(kept[name]) for name in ("ts", "dur")} == buffers
    signed = events.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(-0.0).otherwise("dur").alias("dur"))
    fixed = _checked(signed, "t", truncated=False, warnings=[])
    assert _address(fixed["ts"]) == _address(signed["ts"])
    assert _address(fixed["dur"]) != _address(signed["dur"])
    assert str(signed["dur"][3]) == "-0.0" and str(fixed["dur"][3]) == "0.0"
    assert fixed["dur"].equals(signed["dur"])  # -0 == 0: only the sign went


def _address(column: pl.Series) -> int:
    """Where a one-chunk float column's values are (Arrow's view of them, not a copy)."""
    assert column.n_chunks() == 1
    return int(column.to_arrow().buffers()[1].address)


def test_refusals_are_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = set()
    for reader in READERS:
        with pytest.raises(ProfviewError) as caught:
            read(b'{"traceEvents": [}', reader, monkeypatch)
        messages.add(str(caught.value))
    assert len(messages) == 1


@pytest.mark.skipif(COMPILED is None, reason="the compiled scanner is not built")
def test_numbers_are_read_whatever_the_host_program_set_as_lc_numeric(tmp_path: Path) -> None:
    """strtod follows LC_NUMERIC (a comma in de_DE); the scanner must not."""
    if shutil.which("localedef") is None:
        pytest.skip("localedef is not installed: no comma-decimal locale can be built")
    target = tmp_path / "de_DE.UTF-8"
    built = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(target)], capture_output=True)
    if built.returncode not in (0, 1) or not target.exists():
        pytest.skip(f"the de_DE locale sources are not installed: {built.stderr.decode()[:80]}")
    script = textwrap.dedent(
        """
        import locale
        locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8")
        assert locale.localeconv()["decimal_point"] == ","
        from profview.parsers import chrome_trace
        # 20 significant digits: past the scanner's exact fast path, so strtod's path is taken
        data = b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.2345678901234567891, "dur": 2.5e-3}]'
        events = chrome_trace.parse_chrome_trace(bytearray(data), "t.json").events
        print(repr(events["ts"][0]), repr(events["dur"][0]))
        """
    )
    env = {**os.environ, "LOCPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [repr(1.2345678901234567891), repr(2.5e-3)]


def test_gzip_members_are_all_read_and_trailing_zeros_ignored(tmp_path: Path) -> None:
    """``cat a.gz b.gz`` (and zero padding after it) decompresses to what gzip.decompress gives."""
    import gzip

    from support import sample

    from profview.profiles.loading import load

    data = gzip.decompress(sample("ddp_nccl_streams.pt.trace.json.gz").read_bytes())
    half = len(data) // 2
    target = tmp_path / "two_members.json.gz"
    target.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 512)
    plain = tmp_path / "plain.json"
    plain.write_bytes(data)
    assert load(target, use_cache=False).events.equals(load(plain, use_cache=False).events)
