"""Every real trace in ../shared loads, and all four views export with totals that reconcile.

Skipped, with the reason printed, where ../shared is absent (the samples/ tests still cover every
feature)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import polars as pl
import pytest
from support import SHARED, run_cli

from profview.frames import CATEGORIES

TRACES = sorted(
    p
    for p in [*(SHARED / "traces").glob("*.json*"), *(SHARED / "traces" / "public").glob("*.json*")]
    if "gpt2_train_big" not in p.name  # the 172 MB benchmark trace: benchmarks/run.py
)


def check_trace(trace: Path, out: Path) -> None:
    for view in ("kernels", "ops", "steps"):
        assert run_cli(["export", str(trace), "-v", view, "-o", str(out / f"{view}.csv"), "--no-cache"]) == 0
    ops = pl.read_csv(out / "ops.csv")
    steps = pl.read_csv(out / "steps.csv")
    import profview

    profile = profview.load(trace, use_cache=False)
    assert ops["device_self_us"].sum() == pytest.approx(profile.gpu["dur"].sum(), rel=1e-9, abs=1e-6)
    parts = [f"{category}_us" for category in CATEGORIES]  # the breakdown; other *_us columns are not parts of it
    assert (steps.select(pl.sum_horizontal(parts)).to_series() - steps["duration_us"]).abs().max() < 0.05
    top_op = ops["name"][0]
    launches = ["export", str(trace), "-v", "launches", "--op", top_op, "-o", str(out / "l.csv"), "--no-cache"]
    assert run_cli(launches) == 0
    kernels = pl.read_csv(out / "kernels.csv")
    if kernels.height:
        target = out / "kl.csv"
        assert run_cli(["export", str(trace), "-v", "launches", "--kernel", kernels["name"][0], "-o", str(target)]) == 0
        assert pl.read_csv(target)["calls"].sum() == kernels["calls"][0]


ABSENT = pytest.param(None, marks=pytest.mark.skip(reason=f"{SHARED} is absent: the corpus tests need ../shared"))


@pytest.mark.parametrize("trace", TRACES or [ABSENT], ids=[p.name for p in TRACES] or ["shared-absent"])
def test_shared_trace_exports_every_view(trace: Path, tmp_path: Path, shared_dir: Path) -> None:
    check_trace(trace, tmp_path)


def test_dlrm_eight_rank_traces(tmp_path: Path, shared_dir: Path) -> None:
    with tarfile.open(shared_dir / "traces" / "public" / "param_dlrm_8rank_v100.tar.gz") as archive:
        members = [m for m in archive.getmembers() if m.name.endswith(".json")]
        archive.extractall(tmp_path, members=members, filter="data")
    traces = sorted(tmp_path.rglob("*.json"))
    assert len(traces) == 8
    for index, trace in enumerate(traces[:2]):
        out = tmp_path / f"out{index}"
        out.mkdir()
        check_trace(trace, out)
