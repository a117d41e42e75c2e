"""The Efficiency pane's ``t``, ``l`` and ``u`` at 80x24: Tensor Cores per GEMM kernel, launch
delays per kernel (Enter: that kernel's launches) and queue length per stream, each a drill-down
whose figures are recomputed from the raw events; the Overview's Tensor Core hint."""

from __future__ import annotations

from collections import defaultdict

import pytest
from pilot import screen_text, wait_loaded, wait_until
from support import SAMPLES
from witness import GPU_CATS, raw

import profview
from profview.analysis.tables.launch_stats import LAUNCH_CALLS
from profview.tui.app import ProfviewApp
from profview.tui.drill.screen import DrillScreen

TRACE = SAMPLES / "ddp_nccl_streams.pt.trace.json.gz"


def app_on() -> ProfviewApp:
    return ProfviewApp(str(TRACE), no_cache=True, profile=profview.load(TRACE, use_cache=False))


def raw_delays() -> dict[str, list[float]]:
    """GPU event name → its launch delays (GPU start − launch call end, 0 at least), from the raw JSON."""
    calls: dict[int, tuple[float, float]] = {}
    work: dict[int, list[tuple[str, float]]] = defaultdict(list)
    for e in raw(TRACE):
        corr = (e.get("args") or {}).get("correlation")
        if e.get("ph") != "X" or corr is None:
            continue
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["name"] in LAUNCH_CALLS:
            calls[corr] = (e["ts"], e["dur"])
        elif e.get("cat") in GPU_CATS:
            work[corr].append((e["name"], e["ts"]))
    delays: dict[str, list[float]] = defaultdict(list)
    for corr, (ts, dur) in calls.items():
        if len(work.get(corr, [])) == 1:
            name, start = work[corr][0]
            delays[name].append(max(0.0, start - ts - dur))
    return delays


def fp32_simt_share() -> float:
    """The share of kernel time (%) in kernels whose name says FP32 on the SIMT cores."""
    total = simt = 0.0
    for e in raw(TRACE):
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            total += e["dur"]
            if "ffma" in e["name"] or "simt_sgemm" in e["name"]:
                simt += e["dur"]
    return simt / total * 100


@pytest.mark.asyncio
async def test_l_opens_launch_delays_per_kernel_and_enter_its_launches() -> None:
    delays = raw_delays()
    app = app_on()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8", "l")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "launch_names")
        frame = app.screen.frame
        assert frame.height == len(delays)
        top = frame.row(0, named=True)
        assert top["launches"] == len(delays[top["name"]])
        assert top["delay_max_us"] == pytest.approx(max(delays[top["name"]]), abs=1e-6)
        text = screen_text(app)
        assert "Efficiency" in text and "launch delay per kernel" in text
        assert "delay_median_us" in text  # the figures lead, at 80 columns
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "launch_stats")
        launches = app.screen.frame
        assert launches.height == len(delays[top["name"]])
        assert sorted(launches["launch_delay_us"].to_list()) == pytest.approx(sorted(delays[top["name"]]), abs=1e-6)


@pytest.mark.asyncio
async def test_t_opens_tensor_cores_and_u_queue_length() -> None:
    app = app_on()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8", "t")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "tensor_cores")
        frame = app.screen.frame
        no = frame.filter(frame["tensor_cores"] == "no")
        assert float(no["pct"].sum()) == pytest.approx(fp32_simt_share(), abs=1e-6)
        assert "tensor_cores" in screen_text(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, DrillScreen))
        await pilot.press("u")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "queue_length")
        assert sorted(app.screen.frame["stream"].to_list()) == [7, 52]


@pytest.mark.asyncio
async def test_overview_hints_fp32_gemms_without_tensor_cores() -> None:
    share = fp32_simt_share()
    app = app_on()
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        text = " ".join(screen_text(app).split())
        assert f"FP32 GEMMs without Tensor Cores take {share:.1f}% of kernel time" in text


@pytest.mark.asyncio
async def test_the_keys_work_where_the_perf_model_has_no_shapes() -> None:
    """The AlexNet trace has no shapes (no efficiency table): its Efficiency tab says why, and ``t``
    still opens Tensor Cores per GEMM kernel (its FP32 ``ampere_sgemm`` kernel: no)."""
    path = SAMPLES / "hta_critical_path_alexnet.json.gz"
    sgemm = {e["name"] for e in raw(path) if e.get("cat") == "kernel" and e["name"].startswith("ampere_sgemm")}
    app = ProfviewApp(str(path), no_cache=True, profile=profview.load(path, use_cache=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("8")
        await pilot.pause()
        assert "Efficiency: not available" in screen_text(app)
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, DrillScreen) and app.screen.view == "tensor_cores")
        frame = app.screen.frame
        assert set(frame.filter(frame["tensor_cores"] == "no")["name"].to_list()) == sgemm
