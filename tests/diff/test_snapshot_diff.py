"""Two memory snapshots compared: the site deltas sum exactly to the change in allocated bytes
(and live blocks), the peak's to the change in the peak, each total witnessed by summing the
pickles loaded with a no-globals unpickler written here."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from support import SAMPLES, SHARED, run_cli

from profview.diff.snapshot_comparison import load_snapshot_comparison

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
INFERENCE = [SHARED / "formats" / "memory-snapshots" / f"wedsonlin__medium_{n}_inference_memory_snapshot.pickle"
             for n in (512, 1024)]
LIVE = ("active_allocated", "active_pending_free")


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def _load(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        return _PlainData(fh).load()


def _allocated(snap: dict[str, Any]) -> tuple[int, int]:
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] in LIVE]
    return sum(b["size"] for b in blocks), len(blocks)


def _check(before: Path, after: Path) -> None:
    comparison = load_snapshot_comparison(str(before), str(after))
    (a_bytes, a_count), (b_bytes, b_count) = _allocated(_load(before)), _allocated(_load(after))
    sites = comparison.view("sites")
    assert int(sites["bytes_delta"].sum()) == b_bytes - a_bytes
    assert int(sites["count_delta"].sum()) == b_count - a_count
    assert int(sites["bytes_a"].sum()) == a_bytes and int(sites["bytes_b"].sum()) == b_bytes
    peak = comparison.view("peak")
    peaks = {row["figure"]: row for row in comparison.totals()}["device 0 peak_active_bytes"]
    assert int(peak["bytes_delta"].sum()) == peaks["delta"]
    segments = comparison.view("segments")
    reserved = {row["figure"]: row for row in comparison.totals()}["reserved_bytes"]
    assert int(segments["reserved_bytes_delta"].sum()) == reserved["delta"]
    assert int(segments["allocated_bytes_delta"].sum()) == b_bytes - a_bytes


def test_sample_against_a_changed_copy(tmp_path: Path) -> None:
    """The sample against a copy in which its largest live block was freed: that site shrinks by it."""
    snap = _load(SAMPLE)
    largest = max((b for s in snap["segments"] for b in s["blocks"] if b["state"] in LIVE), key=lambda b: b["size"])
    largest["state"] = "inactive"
    changed = tmp_path / "changed.pickle"
    changed.write_bytes(pickle.dumps(snap, protocol=4))
    _check(SAMPLE, changed)
    sites = load_snapshot_comparison(str(SAMPLE), str(changed)).view("sites")
    assert sites.filter(pl.col("bytes_delta") != 0)["bytes_delta"].to_list() == [-largest["size"]]


def test_inference_snapshots(shared_dir: Path) -> None:
    """The two inference steps (contexts 512 and 1024): the deltas sum to the changes."""
    _check(*INFERENCE)


def test_diff_cli(shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``diff A B --summary`` and ``--view sites -o``; a snapshot against a trace is refused."""
    assert run_cli(["diff", *map(str, INFERENCE), "--summary"]) == 0
    text = capsys.readouterr().out
    assert "bytes live at the peak by site" in text and "softmax" in text
    out = tmp_path / "sites.csv"
    assert run_cli(["diff", *map(str, INFERENCE), "--view", "sites", "-o", str(out)]) == 0
    (a_bytes, _), (b_bytes, _) = (_allocated(_load(p)) for p in INFERENCE)
    assert int(pl.read_csv(out)["bytes_delta"].sum()) == b_bytes - a_bytes
    assert run_cli(["diff", str(INFERENCE[0]), str(SAMPLES / "hta_backward_thread.json"), "--summary"]) != 0
    assert "compares with another memory snapshot" in capsys.readouterr().err
