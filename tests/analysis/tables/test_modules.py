"""GPU time by module and by source line (issue 15), on ResNet-50 (with_stack + with_modules).

The witness is computed from the raw events (gzip + json, plain Python): each GPU event is placed
at its launching runtime call (same ``correlation``); every ``nn.Module`` frame open on that
call's thread at that instant gets the event's duration in its total, the latest-starting one
(the innermost) in its self time.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest
from support import loaded, raw_events, run_cli, sample
from witness import GPU_CATS, witness

from profview.errors import ProfviewError
from profview.frames import CHAIN_SEPARATOR, NO_MODULE

RESNET = "resnet50_train_amp.pt.trace.json.gz"


def modules_only(table: pl.DataFrame) -> pl.DataFrame:
    """The module rows (not the optimizer rows, not (no module))."""
    return table.filter((table["path"] != NO_MODULE) & ~table["path"].str.starts_with("Optimizer."))


def test_module_totals_match_raw_intervals() -> None:
    """The forward figures: GPU work launched while the module's frame was open."""
    table = loaded(RESNET).modules()
    total, own, outside = witness(raw_events(RESNET))
    named = modules_only(table)
    assert named["module"].n_unique() == named.height  # ResNet's module names are unique per instance
    mine_total = dict(zip(named["module"], named["fwd_total_us"], strict=True))
    mine_self = {m: s for m, s in zip(named["module"], named["fwd_self_us"], strict=True) if s}
    assert mine_total.keys() == total.keys()
    for name, value in total.items():
        assert mine_total[name] == pytest.approx(value, abs=1e-6), name
    assert mine_self.keys() == {k for k, v in own.items() if v}
    for name, value in own.items():
        assert mine_self[name] == pytest.approx(value, abs=1e-6), name
    # what the frames leave outside is now the backward, the optimizer and (no module)
    rest = table.filter(~table["path"].is_in(named["path"].to_list()))
    assert rest["total_us"].sum() + named["bwd_self_us"].sum() == pytest.approx(outside, abs=1e-6)
    # Self times partition all GPU time; the root's total is every module's self time.
    all_gpu = sum(e["dur"] for e in raw_events(RESNET) if e.get("ph") == "X" and e.get("cat") in GPU_CATS)
    assert table["self_us"].sum() == pytest.approx(all_gpu, abs=1e-3)
    assert total["ResNet_0"] == pytest.approx(15732.442, abs=1e-3)


def test_tree_order_and_paths() -> None:
    table = loaded(RESNET).modules()
    paths = table["path"].to_list()
    assert paths[0] == "ResNet_0"
    assert paths[-2:] == ["Optimizer.step#SGD.step", NO_MODULE]
    for path, depth in zip(paths[:-2], table["depth"].to_list()[:-2], strict=True):
        assert path.count(CHAIN_SEPARATOR) == depth
        if depth:  # a child comes after its parent
            assert paths.index(path.rsplit(CHAIN_SEPARATOR, 1)[0]) < paths.index(path)
    # calls: the module's frames in the raw trace (3 active steps; ReLU modules are reused per block)
    frames = defaultdict(int)
    for e in raw_events(RESNET):
        if e.get("cat") == "python_function" and e["name"].startswith("nn.Module: "):
            frames[e["name"][len("nn.Module: ") :]] += 1
    named = modules_only(table)
    assert dict(zip(named["module"], named["calls"], strict=True)) == dict(frames)


def test_module_kernels_drill_down() -> None:
    profile = loaded(RESNET)
    row = profile.modules().filter(profile.modules()["module"] == "Bottleneck_0").row(0, named=True)
    kernels = profile.module_kernels(row["path"])
    assert kernels["total_us"].sum() == pytest.approx(row["total_us"], abs=1e-6)
    assert kernels["calls"].sum() == row["kernels"]
    with pytest.raises(ProfviewError, match="no module"):
        profile.module_kernels("Nope_0")


def test_sources_self_partitions_gpu_time() -> None:
    profile = loaded(RESNET)
    sources = profile.sources()
    all_gpu = sum(e["dur"] for e in raw_events(RESNET) if e.get("ph") == "X" and e.get("cat") in GPU_CATS)
    assert sources["self_us"].sum() == pytest.approx(all_gpu, abs=1e-3)
    # the training-loop frame encloses every module's launches: its total is at least ResNet_0's
    total, _own, _outside = witness(raw_events(RESNET))
    top = dict(zip(sources["name"], sources["total_us"], strict=True))
    assert top["torchvision/models/resnet.py(284): forward"] == pytest.approx(total["ResNet_0"], abs=1e-6)


def test_traces_without_modules_say_why(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(
        ["export", str(sample("gpt2_train_bf16.pt.trace.json.gz")), "--view", "modules", "-o", "-", "--no-cache"]
    )
    assert code == 2
    assert "with_modules=True" in capsys.readouterr().err


def test_source_line_drill_down_matches_raw_frames() -> None:
    """The GPU work under a source line: GPU events whose launching call (same correlation) ran
    while a Python frame of that name was open on its thread, from the raw events."""
    line = "torch/nn/modules/conv.py(552): forward"
    events = raw_events(RESNET)
    launch = {}
    for e in events:
        runtime = e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")
        if runtime and "correlation" in e.get("args", {}):
            launch.setdefault(e["args"]["correlation"], (e["pid"], e["tid"], e["ts"]))
    frames = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "python_function" and e["name"] == line:
            frames[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    total, count = 0.0, 0
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        where = launch.get(e.get("args", {}).get("correlation"))
        if where and any(s <= where[2] <= t for s, t in frames[where[:2]]):
            total += e["dur"]
            count += 1
    profile = loaded(RESNET)
    drilled = profile.source_kernels(line)
    assert drilled["total_us"].sum() == pytest.approx(total, abs=1e-6)
    assert drilled["calls"].sum() == count
    row = profile.sources().filter(profile.sources()["name"] == line).row(0, named=True)
    assert row["total_us"] == pytest.approx(total, abs=1e-6)
    assert row["kernels"] == count


def test_transformer_module_totals_match_raw_intervals() -> None:
    """The same check on TraceLens' Qwen1.5-0.5B H100 trace (a transformer's module tree)."""
    name = "tracelens_h100_qwen1.5-0.5b.json.gz"
    table = loaded(name).modules()
    total, _own, _outside = witness(raw_events(name))
    named = modules_only(table)
    assert named["bwd_total_us"].sum() == 0  # an inference trace: no autograd nodes
    assert named["module"].n_unique() == named.height
    mine = dict(zip(named["module"], named["fwd_total_us"], strict=True))
    assert named["fwd_total_us"].to_list() == named["total_us"].to_list()
    assert mine.keys() == total.keys()
    for module, value in total.items():
        assert mine[module] == pytest.approx(value, abs=1e-6), module
    assert "Qwen2Model_0 > Qwen2DecoderLayer_13 > Qwen2Attention_13" in table["path"].to_list()
