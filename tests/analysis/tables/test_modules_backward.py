"""Backward GPU time by module and the optimizer's row (issue 15), on ResNet-50 (AMP training).

The witness reads the raw events (gzip + json, plain Python), without profview's call tree: a GPU
event launched outside every ``nn.Module`` frame is taken to its runtime call (``correlation``);
the innermost operator on that thread holding the call and carrying ``Sequence number`` with a
``Fwd thread id`` > 0 is its autograd node; the last-starting operator with that sequence number
and no forward thread id made the node, and the ``nn.Module`` frames open when it started (on its
thread) are the modules charged.  Launches inside an ``Optimizer.`` annotation are that row.
"""

from __future__ import annotations

import json

import pytest
from support import loaded, raw_events, run_cli, sample
from witness import GPU_CATS, _intervals, _open, backward_witness

import profview
from profview.frames import NO_MODULE

RESNET = "resnet50_train_amp.pt.trace.json.gz"
OPTIMIZER = "Optimizer.step#SGD.step"


def test_backward_time_per_module_matches_raw_sequence_numbers() -> None:
    table = loaded(RESNET).modules()
    seen = backward_witness(raw_events(RESNET))
    named = table.filter((table["path"] != NO_MODULE) & ~table["path"].str.starts_with("Optimizer."))
    mine_total = {m: v for m, v in zip(named["module"], named["bwd_total_us"], strict=True) if v}
    mine_self = {m: v for m, v in zip(named["module"], named["bwd_self_us"], strict=True) if v}
    assert mine_total.keys() == {k for k, v in seen["bwd_total"].items() if v}
    for name, value in seen["bwd_total"].items():
        assert mine_total[name] == pytest.approx(value, abs=1e-6), name
    assert mine_self.keys() == {k for k, v in seen["bwd_self"].items() if v}
    for name, value in seen["bwd_self"].items():
        assert mine_self[name] == pytest.approx(value, abs=1e-6), name
    # self and total are the two passes together
    for row in named.iter_rows(named=True):
        assert row["total_us"] == pytest.approx(row["fwd_total_us"] + row["bwd_total_us"], abs=1e-6)
        assert row["self_us"] == pytest.approx(row["fwd_self_us"] + row["bwd_self_us"], abs=1e-6)
    # the backward outside every module (the loss, the input's cast) stays in (no module)
    rest = table.filter(table["path"] == NO_MODULE).row(0, named=True)
    assert rest["bwd_total_us"] == pytest.approx(seen["bwd_outside"]["us"], abs=1e-6)
    assert rest["total_us"] == pytest.approx(seen["bwd_outside"]["us"] + seen["passes"]["other"], abs=1e-6)


def test_optimizer_is_its_own_row() -> None:
    table = loaded(RESNET).modules()
    seen = backward_witness(raw_events(RESNET))
    assert set(seen["optimizer"]) == {OPTIMIZER}
    row = table.filter(table["path"] == OPTIMIZER).row(0, named=True)
    assert row["total_us"] == pytest.approx(seen["optimizer"][OPTIMIZER], abs=1e-6)
    assert row["depth"] == 0 and row["fwd_total_us"] == 0 and row["bwd_total_us"] == 0
    raw_calls = sum(1 for e in raw_events(RESNET) if e.get("cat") == "user_annotation" and e["name"] == OPTIMIZER)
    assert row["calls"] == raw_calls == 2
    kernels = loaded(RESNET).module_kernels(OPTIMIZER)
    assert kernels["total_us"].sum() == pytest.approx(row["total_us"], abs=1e-6)


def test_pass_shares_add_up_to_all_gpu_time() -> None:
    """Forward, backward, optimizer and the rest partition the GPU time, as the raw events do."""
    table = loaded(RESNET).modules()
    seen = backward_witness(raw_events(RESNET))["passes"]
    all_gpu = sum(e["dur"] for e in raw_events(RESNET) if e.get("ph") == "X" and e.get("cat") in GPU_CATS)
    assert sum(seen.values()) == pytest.approx(all_gpu, abs=1e-3)
    assert table["fwd_self_us"].sum() == pytest.approx(seen["fwd"], abs=1e-3)
    assert table["bwd_self_us"].sum() == pytest.approx(seen["bwd"], abs=1e-3)
    assert table["self_us"].sum() == pytest.approx(all_gpu, abs=1e-3)
    # The backward is the larger pass of a training step, and most GPU time is now named.
    assert seen["bwd"] > seen["fwd"] > seen["optimizer"] > 0
    rest = table.filter(table["path"] == NO_MODULE)["self_us"][0]
    assert rest / all_gpu < 0.07


def test_export_has_the_split_columns(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(sample(RESNET))
    assert run_cli(["export", path, "--view", "modules", "-o", "-", "--no-cache"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[-4:] == ["fwd_self_us", "fwd_total_us", "bwd_self_us", "bwd_total_us"]


def test_a_sequence_number_on_two_forward_threads_is_not_guessed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Sequence numbers count per thread: the real trace with one forward operator copied onto a
    second thread leaves that node's backward in (no module), and nothing else moves."""
    events = raw_events(RESNET)
    seen = backward_witness(events)
    launch = {
        e["args"]["correlation"]: ((e["pid"], e["tid"]), e["ts"])
        for e in events
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})
    }
    nodes = _intervals(
        events,
        lambda e: e.get("cat") == "cpu_op" and e.get("args", {}).get("Fwd thread id", 0) > 0,
    )
    seq = next(n["args"]["Sequence number"] for n in sorted(nodes[next(iter(nodes))], key=lambda n: -n["dur"]))
    moved = 0.0
    for e in events:
        at = launch.get(e.get("args", {}).get("correlation")) if e.get("cat") in GPU_CATS else None
        held = _open(nodes, *at) if at else []
        if held and max(held, key=lambda n: (n["ts"], -n["dur"]))["args"]["Sequence number"] == seq:
            moved += e["dur"]
    assert moved > 0
    twin = next(e for e in events if e.get("cat") == "cpu_op" and e.get("args", {}).get("Sequence number") == seq) | {
        "tid": 999_999
    }
    path = tmp_path / "twin.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": [*events, twin]}))
    table = profview.load(path, use_cache=False).modules()
    rest = table.filter(table["path"] == NO_MODULE).row(0, named=True)
    assert rest["bwd_total_us"] == pytest.approx(seen["bwd_outside"]["us"] + moved, abs=1e-6)
    root = table.filter(table["path"] == "ResNet_0").row(0, named=True)
    assert root["bwd_total_us"] == pytest.approx(seen["bwd_total"]["ResNet_0"] - moved, abs=1e-6)
