"""A memory snapshot through the command line: summary (text and JSON), export of every view,
query, and the same answers from the snapshot re-pickled at protocol 5 and gzipped."""

from __future__ import annotations

import gzip
import json
import pickle
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from support import SAMPLES, SHARED, run_cli

from profview.frames import fmt_bytes
from profview.profiles.snapshot_profile import SNAPSHOT_VIEWS, load_snapshot

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
SHARED_SNAPSHOTS = sorted((SHARED / "formats" / "memory-snapshots").glob("*.pickle")) if SHARED.is_dir() else []


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def _summary(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert run_cli(["summary", str(path), *extra]) == 0
    return capsys.readouterr().out


def test_summary_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """``summary --format json``: the schema and the keys the issue names, per device too."""
    document = json.loads(_summary(SAMPLE, capsys, "--format", "json"))
    assert document["schema"] == "profview.memory-snapshot/1"
    for key in (
        "segments",
        "reserved_bytes",
        "allocated_bytes",
        "requested_bytes",
        "free_internal_bytes",
        "free_external_bytes",
        "events",
        "devices",
    ):
        assert key in document
    for device in document["devices"]:
        assert {"device", "events", "peak_active_bytes", "peak_time_us"} <= set(device)


def test_summary_text_says_the_json_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """The text shows the document's figures (one source for both), and why memory ran short."""
    document = json.loads(_summary(SAMPLE, capsys, "--format", "json"))
    text = _summary(SAMPLE, capsys)
    for key in ("reserved_bytes", "allocated_bytes", "requested_bytes", "free_external_bytes"):
        assert fmt_bytes(document[key]) in text
    peak = document["devices"][0]
    assert f"peak active {fmt_bytes(peak['peak_active_bytes'])}" in text
    assert "no out-of-memory event" in text
    assert "top sites live at the peak" in text and "largest live allocations" in text


def _copies(source: Path, folder: Path) -> list[Path]:
    """The snapshot as written, re-pickled at protocol 5, and gzipped, each under the same name in
    a folder of its own (so the path in the answers is the same)."""
    with open(source, "rb") as fh:
        loaded = _PlainData(fh).load()
    out = []
    for kind, data in (
        ("plain", source.read_bytes()),
        ("protocol5", pickle.dumps(loaded, protocol=5)),
        ("gzip", gzip.compress(source.read_bytes())),
    ):
        where = folder / kind
        where.mkdir()
        (where / "snap.pickle").write_bytes(data)
        out.append(where / "snap.pickle")
    return out


def _answers_alike(source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    answers = []
    for copy in _copies(source, tmp_path):
        monkeypatch.chdir(copy.parent)
        answers.append(
            (_summary(Path("snap.pickle"), capsys), _summary(Path("snap.pickle"), capsys, "--format", "json"))
        )
    assert answers[0] == answers[1] == answers[2]


def test_protocol5_and_gzip_answer_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    """The sample's summaries, text and JSON, byte for byte the same from all three copies."""
    _answers_alike(SAMPLE, tmp_path, capsys, monkeypatch)


@pytest.mark.parametrize("path", SHARED_SNAPSHOTS, ids=[p.name for p in SHARED_SNAPSHOTS])
def test_shared_copies_answer_alike(
    path: Path, shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Every shared snapshot: the same summaries from its protocol-5 and gzipped copies."""
    _answers_alike(path, tmp_path, capsys, monkeypatch)


@pytest.mark.parametrize("view", sorted(SNAPSHOT_VIEWS))
def test_export_every_view(view: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each view exports to CSV, Parquet and JSON with the rows and columns of the view."""
    expected = load_snapshot(SAMPLE).view(view)
    for suffix in ("csv", "parquet", "json"):
        out = tmp_path / f"{view}.{suffix}"
        assert run_cli(["export", str(SAMPLE), "--view", view, "-o", str(out)]) == 0
        if suffix == "parquet":
            back = pl.read_parquet(out)
            assert back.shape == expected.shape
            assert back.columns == expected.columns
        elif suffix == "csv":
            back = pl.read_csv(out, infer_schema_length=0)
            assert back.height == expected.height and back.columns == expected.columns
        else:
            rows = json.loads(out.read_text())
            assert len(rows if isinstance(rows, list) else rows["rows"]) == expected.height
    capsys.readouterr()


def test_export_refuses_a_trace_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace's option on a snapshot is said, not ignored."""
    assert run_cli(["export", str(SAMPLE), "--view", "sites", "--step", "2", "-o", str(tmp_path / "x.csv")]) != 0
    assert "--step: a trace's option, not a memory snapshot's" in capsys.readouterr().err


def test_query_sites(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``query SNAP -q``: the sites sum to allocated, the peak view to the peak (as the summary says)."""
    document = json.loads(_summary(SAMPLE, capsys, "--format", "json"))
    out = tmp_path / "answer.csv"
    sql = "SELECT SUM(bytes) AS total, COUNT(*) AS n FROM sites"
    assert run_cli(["query", str(SAMPLE), "-q", sql, "-o", str(out)]) == 0
    answer = pl.read_csv(out)
    assert answer["total"][0] == document["allocated_bytes"]
    sql = "SELECT device, SUM(bytes) AS total FROM peak GROUP BY device"
    assert run_cli(["query", str(SAMPLE), "-q", sql, "-o", str(out), "--force"]) == 0
    assert pl.read_csv(out)["total"][0] == document["devices"][0]["peak_active_bytes"]
    capsys.readouterr()


def test_a_snapshot_is_told_by_its_content(tmp_path: Path) -> None:
    """Any name: a pickle is routed to the snapshot reader, a trace is not."""
    from profview.cli.target import Target

    renamed = tmp_path / "trace.json"
    renamed.write_bytes(SAMPLE.read_bytes())
    assert Target.of([str(renamed)]).is_snapshot
    assert not Target.of([str(SAMPLES / "hta_backward_thread.json")]).is_snapshot


def test_query_lists_the_snapshot_tables(capsys: pytest.CaptureFixture[str]) -> None:
    """``query SNAP --tables``: every snapshot view, with its columns and units."""
    assert run_cli(["query", str(SAMPLE), "--tables"]) == 0
    listed = capsys.readouterr().out
    for view in SNAPSHOT_VIEWS:
        assert f"{view}: {SNAPSHOT_VIEWS[view]}" in listed
    assert re.search(r"^  active_bytes +Int64  \[bytes\]$", listed, re.MULTILINE)


def test_summary_fits_80_columns(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns no line of the text summary is wider: prose folds at spaces, the tables printed
    two spaces in fit the rest; the figures stay (the allocated bytes, summed here from the blocks)."""
    monkeypatch.setenv("COLUMNS", "80")
    with SAMPLE.open("rb") as handle:
        snapshot = _PlainData(handle).load()
    allocated = sum(
        block["size"]
        for segment in snapshot["segments"]
        for block in segment["blocks"]
        if block["state"] == "active_allocated"
    )
    out = _summary(SAMPLE, capsys)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert f"allocated  {fmt_bytes(allocated):>11}" in out
    assert "a request above the largest free block" in " ".join(out.split())


def test_a_peak_above_what_is_reserved_at_the_end_is_no_share(
    shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot whose cache released segments after its peak (reserved at the end 250 MiB, the
    active peak over the recorded events 2.10 GiB): the peak is said to lie above what is reserved,
    never as a share of it (it read 860.4%); no percentage of the summary is above 100."""
    path = shared_dir / "formats/memory-snapshots/mosaic__output.SYNTHETIC.pickle"
    with path.open("rb") as handle:
        snapshot = _PlainData(handle).load()
    reserved = sum(segment["total_size"] for segment in snapshot["segments"])
    out = " ".join(_summary(path, capsys).split())
    assert f"above the {fmt_bytes(reserved)} reserved at the snapshot: segments were released after the peak" in out
    assert all(float(share) <= 100 for share in re.findall(r"(\d+(?:\.\d+)?)%", out))


def test_the_json_gives_each_top_site_its_devices_as_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    """``top_sites[].devices`` is a list of device numbers (the sites table joins them as "0"), the
    devices of the site's live blocks in the plain load."""
    with SAMPLE.open("rb") as handle:
        snapshot = _PlainData(handle).load()
    devices = sorted({segment["device"] for segment in snapshot["segments"]})
    assert run_cli(["summary", str(SAMPLE), "--no-cache", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["top_sites"] and all(
        isinstance(site["devices"], list) and set(site["devices"]) <= set(devices) and site["devices"]
        for site in document["top_sites"]
    )


def test_blocks_without_requested_size_leave_requested_and_rounding_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A snapshot whose live blocks record no ``requested_size`` (as older torch wrote them):
    requested bytes and rounding are unknown in the text, the JSON, the sites view and the gate,
    never the block size passed off as what was asked (rounding 0)."""
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    stripped = 0
    for segment in snap["segments"]:
        for block in segment["blocks"]:
            stripped += block["state"] in ("active_allocated", "active_pending_free")
            block.pop("requested_size", None)
    old = tmp_path / "old.pickle"
    old.write_bytes(pickle.dumps(snap, protocol=4))
    document = json.loads(_summary(old, capsys, "--format", "json"))
    assert document["requested_bytes"] is None and document["free_internal_bytes"] is None
    assert document["allocated_bytes"] == json.loads(_summary(SAMPLE, capsys, "--format", "json"))["allocated_bytes"]
    assert f"{stripped:,} of {stripped:,} live blocks record no requested_size" in " ".join(document["warnings"])
    text = _summary(old, capsys)
    assert re.search(r"requested\s+unknown\s+rounding \(free internal\) unknown", text)
    sites = load_snapshot(old).view("sites")
    assert sites["requested_bytes"].null_count() == sites.height
    assert run_cli(["diff", str(SAMPLE), str(old), "--fail-if", "totals.requested_bytes > +5%"]) == 2
    assert "requested_bytes is unknown in this snapshot" in capsys.readouterr().err
    assert run_cli(["diff", str(SAMPLE), str(old), "--summary"]) == 0


@pytest.mark.parametrize("traces", ["none", "empty"])
def test_a_device_with_no_recorded_event_has_no_peak(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], traces: str
) -> None:
    """No ``device_traces`` (history not recorded) or an empty one: only the end state is known, so
    the peak is unknown in the JSON, the text, the peak view, the job row and the gate, never the
    end state's active bytes passed off as a peak."""
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    if traces == "none":
        del snap["device_traces"]
    else:
        snap["device_traces"] = [[]]
    path = tmp_path / "rank0.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    document = json.loads(_summary(path, capsys, "--format", "json"))
    assert [(d["events"], d["peak_active_bytes"], d["peak_time_us"]) for d in document["devices"]] == [(0, None, None)]
    assert document["top_sites_at_peak"] == []
    text = _summary(path, capsys)
    assert "device 0: no event recorded, so no peak" in text and "peak active" not in text
    assert load_snapshot(path).view("peak").is_empty()
    assert run_cli(["summary", str(tmp_path), "--format", "json"]) == 0
    job = json.loads(capsys.readouterr().out)
    assert job["ranks"][0]["peak_active_bytes"] is None and job["highest_peak_rank"] is None
    assert run_cli(["diff", str(SAMPLE), str(path), "--fail-if", "totals.peak_active_bytes > +5%"]) == 2
    assert "peak_active_bytes is unknown in this snapshot" in capsys.readouterr().err
