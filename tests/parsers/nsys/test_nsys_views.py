"""An Nsight Systems export through every command: ``diff`` and a gate rule on the before/after pair,
``query`` and ``export`` over its tables, the viewer's drill from a kernel to the NVTX ranges that
launched it, and the cache's second open.  Witness: plain ``sqlite3`` (:mod:`nsys_witness`)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from nsys_witness import connect, cuda_gpu_kern_sum, emit_nvtx_name, export_path
from pilot import wait_loaded
from support import run_cli

import profview
from profview.analysis.tables.instance import kernel_instance

SAXPY = export_path("nsys_saxpy_mpi_a100_2022.sqlite")


def test_query_sees_the_events_and_the_kernel_table(tmp_path: Path) -> None:
    out = tmp_path / "q.parquet"
    sql = "SELECT k.name, k.calls, COUNT(*) AS events FROM kernels k JOIN events e ON e.name = k.name GROUP BY 1, 2"
    assert run_cli(["query", str(SAXPY), "-q", sql, "-o", str(out), "--force"]) == 0
    answer = pl.read_parquet(out)
    witness = cuda_gpu_kern_sum(SAXPY)
    assert {row["name"]: (row["calls"], row["events"]) for row in answer.iter_rows(named=True)} == {
        name: (figures[0], figures[0]) for name, figures in witness.items()
    }


def test_export_writes_the_kernel_table_and_a_cached_open_agrees(tmp_path: Path) -> None:
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    assert run_cli(["export", str(SAXPY), "--view", "kernels", "-o", str(first), "--force"]) == 0
    assert run_cli(["export", str(SAXPY), "--view", "kernels", "-o", str(second), "--force"]) == 0  # from the cache
    assert first.read_text() == second.read_text()
    table = pl.read_csv(first)
    assert table["calls"].sum() == sum(figures[0] for figures in cuda_gpu_kern_sum(SAXPY).values())


def test_the_saxpy_kernels_belong_to_the_saxpy_range_and_their_launch_is_cudalaunchkernel() -> None:
    """The oldest layout: each kernel's innermost push/pop range is ``saxpy`` (its launch lies in
    it), and its launching call, counted once though the export writes it twice, is cudaLaunchKernel."""
    profile = profview.load(SAXPY, use_cache=False)
    with connect(SAXPY) as db:
        launches = db.execute(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
            "ON k.correlationId = r.correlationId"
        ).fetchone()[0]
        kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert launches == 2 * kernels  # the repeated rows a plain join double-counts
    model = profile.model
    gpu = model.gpu.with_row_index("at").filter(pl.col("kind") == "kernel")
    assert gpu.height == kernels
    for at in gpu["at"].to_list():
        instance = kernel_instance(model, at)
        assert instance.launch is not None and instance.launch.name == "cudaLaunchKernel"
        assert instance.op is not None and instance.op.name == "saxpy"
    ops = profile.ops()
    saxpy = ops.filter(pl.col("name") == "saxpy").row(0, named=True)
    assert saxpy["device_self_us"] == pytest.approx(gpu["dur"].sum(), abs=1e-6)
    assert ops.filter(pl.col("name") == "cudaLaunchKernel")["calls"].item() == kernels


def _pair(shared_dir: Path) -> tuple[Path, Path]:
    return (
        shared_dir / "formats/nsys/nsysai__mfu_2gpu_before.sqlite",
        shared_dir / "formats/nsys/nsysai__mfu_2gpu_after.sqlite",
    )


def test_diff_of_the_before_after_pair(shared_dir: Path, tmp_path: Path) -> None:
    before, after = _pair(shared_dir)
    out = tmp_path / "diff.csv"
    assert run_cli(["diff", str(before), str(after), "--view", "kernels", "-o", str(out), "--force"]) == 0
    table = pl.read_csv(out)
    old, new = cuda_gpu_kern_sum(before), cuda_gpu_kern_sum(after)
    name = max(old, key=lambda n: old[n][1])  # flash-attn's forward kernel
    row = table.filter(pl.col("name") == name).row(0, named=True)
    calls = [c for c in table.columns if "calls" in c]
    totals = [c for c in table.columns if "total" in c and "us" in c]
    figures = {c: row[c] for c in calls + totals}
    assert old[name][0] in figures.values() and new[name][0] in figures.values()
    assert any(abs(value * 1000 - old[name][1]) < 1 for value in figures.values() if isinstance(value, float))
    assert any(abs(value * 1000 - new[name][1]) < 1 for value in figures.values() if isinstance(value, float))


def test_a_gate_rule_on_the_pair(shared_dir: Path, tmp_path: Path) -> None:
    """NCCL SendRecv's total grows by a third between the two (25.4 → 33.7 ms by sqlite3), but its
    calls spread over 40× (waits on the peer), so a 2% rule on kernel totals names it as not
    significant: the gate passes by default and exits 3 with ``--inconclusive fail``; the same
    export against itself passes."""
    before, after = _pair(shared_dir)
    old, new = cuda_gpu_kern_sum(before), cuda_gpu_kern_sum(after)
    sendrecv = next(n for n in old if n.startswith("ncclDevKernel_SendRecv"))
    assert new[sendrecv][1] > 1.3 * old[sendrecv][1]
    out = tmp_path / "gate.json"
    rule = "kernels.total_us > +2%"
    assert run_cli(["diff", str(before), str(after), "--fail-if", rule, "--format", "json", "-o", str(out)]) == 0
    verdicts = {t["name"]: t["status"] for r in json.loads(out.read_text())["rules"] for t in r["results"]}
    assert verdicts[sendrecv] == "not significant"
    assert "regression" not in verdicts.values()
    assert run_cli(["diff", str(before), str(after), "--fail-if", rule, "--inconclusive", "fail"]) == 3
    assert run_cli(["diff", str(before), str(before), "--fail-if", rule]) == 0


def test_a_gate_rule_finds_a_steady_kernel_made_slower(shared_dir: Path, tmp_path: Path) -> None:
    """A copy of the export with every call of a steady GEMM (34 calls within 2% of each other, by
    sqlite3) made 50% longer in CUPTI_ACTIVITY_KIND_KERNEL: the gate names it as the one regression."""
    before, _after = _pair(shared_dir)
    slower = tmp_path / "slower.sqlite"
    shutil.copyfile(before, slower)
    gemm = "nvjet_tst_192x208_64x4_1x1_h_bz_coopB_bias_TNT"
    with sqlite3.connect(slower) as db:
        (spread,) = db.execute(
            "SELECT CAST(MAX(k.end - k.start) AS REAL) / MIN(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName WHERE s.value = ?",
            (gemm,),
        ).fetchone()
        assert spread < 1.05
        db.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + (end - start) * 3 / 2 "
            "WHERE demangledName = (SELECT id FROM StringIds WHERE value = ?)",
            (gemm,),
        )
    out = tmp_path / "gate.json"
    rule = "kernels.total_us > +5%"
    assert (
        run_cli(["diff", str(before), str(slower), "--fail-if", rule, "--no-cache", "--format", "json", "-o", str(out)])
        == 1
    )
    verdicts = {t["name"]: t["status"] for r in json.loads(out.read_text())["rules"] for t in r["results"]}
    assert [key for key, verdict in verdicts.items() if verdict == "regression"] == [gemm]


@pytest.mark.tui
async def test_viewer_drills_a_kernel_to_its_nvtx_range_stack_at_80x24(shared_dir: Path) -> None:
    """Kernels tab, Enter on the first kernel: its launch paths, whose ``op_chain`` is the NVTX
    range stack (names as emit_nvtx wrote them, fields stripped); Enter again: that range's GPU work."""
    from profview.tui.app import ProfviewApp
    from profview.tui.drill.screen import DrillScreen

    path = shared_dir / "formats/nsys/nsysai__mfu_2gpu_before.sqlite"
    profile = profview.load(path, use_cache=False)
    with connect(path) as db:
        texts = {
            emit_nvtx_name(t)
            for (t,) in db.execute(
                "SELECT COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId"
            )
            if t
        }
    app = ProfviewApp(str(path), no_cache=True, profile=profile)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "enter")
        for _ in range(400):
            if isinstance(app.screen, DrillScreen):
                break
            await pilot.pause(0.05)
        drill = app.screen
        assert isinstance(drill, DrillScreen) and drill.view == "kernel_launches"
        chains = [c for c in drill.frame["op_chain"].to_list() if c != "(unattributed)"]
        assert chains and all(part in texts for chain in chains for part in chain.split(" > "))
        await pilot.press("enter")
        for _ in range(400):
            if isinstance(app.screen, DrillScreen) and app.screen.view == "op_launches":
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, DrillScreen) and app.screen.view == "op_launches"
        assert app.screen.frame.height > 0
