"""A directory of per-rank memory snapshots: one row per rank, the rank that ran out of memory
first (from the OOM events written into the copies here) and the highest peak."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from support import SAMPLES, run_cli

from profview.profiles.snapshot_profile import load_snapshot

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def _with_oom(path: Path, delay_us: int) -> None:
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    trace = snap["device_traces"][0]
    trace.append({"action": "oom", "addr": 0, "size": 2**33, "stream": 0,
                  "time_us": trace[-1]["time_us"] + delay_us, "device_free": 1, "frames": []})
    path.write_bytes(pickle.dumps(snap, protocol=4))


def test_first_oom_and_highest_peak(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "oom"
    run.mkdir()
    (run / "rank0.pickle").write_bytes(SAMPLE.read_bytes())
    _with_oom(run / "rank1.pickle", 50)
    _with_oom(run / "rank2.pickle", 10)
    (run / "notes.txt").write_text("not a snapshot")
    assert run_cli(["summary", str(run), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in document["ranks"]] == [0, 1, 2]
    assert [r["ooms"] for r in document["ranks"]] == [0, 1, 1]
    assert document["first_oom_rank"] == 2
    peak = load_snapshot(SAMPLE).summary(0)["devices"][0]["peak_active_bytes"]
    assert all(r["peak_active_bytes"] == peak for r in document["ranks"])  # an OOM asks, allocates nothing
    assert run_cli(["summary", str(run)]) == 0
    assert "first OOM: rank 2" in capsys.readouterr().out
    assert run_cli(["export", str(run), "-o", str(tmp_path / "x.csv")]) != 0
    assert "a directory of 3 memory snapshots" in capsys.readouterr().err
