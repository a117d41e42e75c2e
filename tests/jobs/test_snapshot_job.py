"""A directory of per-rank memory snapshots: one row per rank, the rank that ran out of memory
first (from the OOM events written into the copies here) and the highest peak, in ``summary``,
``export`` and the viewer; each rank's peak witnessed by a backward walk written here."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from pilot import screen_text, wait_until
from support import SAMPLES, run_cli

from profview.frames import fmt_bytes
from profview.jobs.snapshot_job import snapshot_directory
from profview.profiles.snapshot_profile import load_snapshot
from profview.tui.snapshot.job import SnapshotJobApp, SnapshotJobScreen
from profview.tui.snapshot.screen import SnapshotScreen

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
LIVE = ("active_allocated", "active_pending_free")
SNAPSHOTS = "formats/memory-snapshots"


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def _with_oom(path: Path, delay_us: int) -> None:
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    trace = snap["device_traces"][0]
    trace.append(
        {
            "action": "oom",
            "addr": 0,
            "size": 2**33,
            "stream": 0,
            "time_us": trace[-1]["time_us"] + delay_us,
            "device_free": 1,
            "frames": [],
        }
    )
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
    assert run_cli(["query", str(run), "-q", "select rank from ranks where first_oom"]) == 0
    assert capsys.readouterr().out.split()[2] == "2"  # the header, its rule, then the one rank


def _load(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        snap: dict[str, Any] = _PlainData(fh).load()
    return snap


def _walked_peak(snap: dict[str, Any]) -> int:
    """Device 0's peak of active (requested) bytes: the end state's live blocks, walked back
    through the events (before an alloc its size was not held; before a free_completed it was)."""
    active = sum(
        b.get("requested_size") or b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] in LIVE
    )
    best = active
    for event in reversed(snap["device_traces"][0]):
        if event["action"] == "alloc":
            active -= event["size"]
        elif event["action"] == "free_completed":
            active += event["size"]
        best = max(best, active)
    return best


def _oom_job(shared_dir: Path, run: Path) -> tuple[dict[int, int], dict[int, int]]:
    """``run``: ranks 0-1 linked to the two shared inference snapshots, ranks 2-3 copies of the
    training ones, each with an OOM event appended (rank 3's first by its own clock); each rank's
    witnessed peak and the OOM times written."""
    run.mkdir()
    folder = shared_dir / SNAPSHOTS
    sources = [
        "wedsonlin__medium_512_inference_memory_snapshot.pickle",
        "wedsonlin__medium_1024_inference_memory_snapshot.pickle",
        "wedsonlin__medium_128_training_memory_snapshot.pickle",
        "bcrafton__memory_snapshot.pickle",
    ]
    peaks, ooms = {}, {}
    for rank, name in enumerate(sources):
        snap = _load(folder / name)
        peaks[rank] = _walked_peak(snap)
        target = run / f"snapshot_rank{rank}.pickle"
        if rank < 2:
            target.symlink_to(folder / name)
            continue
        trace = snap["device_traces"][0]
        ooms[rank] = trace[-1]["time_us"] + 1_000
        trace.append(
            {
                "action": "oom",
                "addr": 0,
                "size": 2**36,
                "stream": 0,
                "time_us": ooms[rank],
                "device_free": 2**20,
                "frames": [],
            }
        )
        target.write_bytes(pickle.dumps(snap, protocol=4))
    return peaks, ooms


def test_a_directory_of_shared_snapshots_is_a_job(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "oom"
    peaks, ooms = _oom_job(shared_dir, run)
    first = min(ooms, key=lambda r: ooms[r])
    highest = max(peaks, key=lambda r: peaks[r])
    assert run_cli(["summary", str(run), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {r["rank"]: r["peak_active_bytes"] for r in document["ranks"]} == peaks
    assert (document["first_oom_rank"], document["highest_peak_rank"]) == (first, highest)
    assert {r["rank"]: r["first_oom_time_us"] for r in document["ranks"] if r["ooms"]} == ooms
    out = tmp_path / "ranks.csv"
    assert run_cli(["export", str(run), "-o", str(out)]) == 0
    table = pl.read_csv(out)
    assert dict(zip(table["rank"], table["peak_active_bytes"], strict=True)) == peaks
    assert table.filter(pl.col("first_oom"))["rank"].to_list() == [first]
    assert table.filter(pl.col("highest_peak"))["rank"].to_list() == [highest]
    assert run_cli(["export", str(run), "--view", "sites", "-o", str(tmp_path / "sites.csv")]) == 2
    assert "one view, ranks" in capsys.readouterr().err


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_the_viewer_opens_the_ranks_then_one_rank(
    shared_dir: Path, tmp_path: Path, size: tuple[int, int]
) -> None:
    run = tmp_path / "oom"
    peaks, ooms = _oom_job(shared_dir, run)
    first = min(ooms, key=lambda r: ooms[r])
    found = snapshot_directory(str(run))
    assert found is not None
    app = SnapshotJobApp(str(run), found)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotJobScreen), 60)
        await pilot.pause()
        text = screen_text(app)
        assert f"first OOM: rank {first}" in text
        assert all(len(line) <= size[0] for line in text.splitlines())
        view = app.screen.frame_view()
        assert dict(zip(view.displayed["rank"], view.displayed["peak_active_bytes"], strict=True)) == peaks
        row = view.displayed["rank"].to_list().index(first)
        view.table.move_cursor(row=row)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotScreen), 60)
        await pilot.pause()
        assert f"peak {fmt_bytes(peaks[first])}" in screen_text(app) and "1 OOM" in screen_text(app)
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotJobScreen))
        await pilot.press("q")
    assert app.return_code == 0


def test_ranks_numbered_by_file_order_are_said_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "oom"
    run.mkdir()
    (run / "b.pickle").write_bytes(SAMPLE.read_bytes())
    (run / "a.pickle").write_bytes(SAMPLE.read_bytes())
    assert run_cli(["summary", str(run), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["file"], r["rank_from"]) for r in document["ranks"]] == [
        (0, "a.pickle", "file order"),
        (1, "b.pickle", "file order"),
    ]
    assert document["rank_note"] == "ranks numbered by file-name order (no file name gives a rank)"
    assert run_cli(["summary", str(run)]) == 0
    assert document["rank_note"] in capsys.readouterr().out
    (run / "a.pickle").rename(run / "rank7.pickle")
    assert run_cli(["summary", str(run), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {r["file"]: r["rank_from"] for r in document["ranks"]} == {
        "b.pickle": "file order",
        "rank7.pickle": "file name",
    }
    assert document["rank_note"] == "ranks numbered by file-name order (1 of 2 file names give no rank)"


def test_ranks_named_by_their_files_carry_no_numbering_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "oom"
    run.mkdir()
    for rank in (3, 1):
        (run / f"rank{rank}.pickle").write_bytes(SAMPLE.read_bytes())
    assert run_cli(["summary", str(run), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in document["ranks"]] == [1, 3] and document["rank_note"] is None


async def test_the_viewer_says_ranks_numbered_by_file_order_at_80x24(tmp_path: Path) -> None:
    run = tmp_path / "oom"
    run.mkdir()
    for name in ("b.pickle", "a.pickle"):
        (run / name).write_bytes(SAMPLE.read_bytes())
    found = snapshot_directory(str(run))
    assert found is not None
    app = SnapshotJobApp(str(run), found)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SnapshotJobScreen), 60)
        await pilot.pause()
        assert "ranks numbered by file-name order (no file name gives a rank)" in screen_text(app)
        await pilot.press("q")
