"""``profview diff`` of two serving runs per phase, each figure recomputed from the raw events.

Pairs: the H100 eager KV-cache loop against the same loop replaying a CUDA graph (decode tokens
unknown on the graph side: compared per iteration), and TraceLens' vLLM against its SGLang decode
replay (both count 32 tokens: compared per token).  Witness: ``tests/serving_witness.py``."""

from __future__ import annotations

import statistics
from pathlib import Path

import polars as pl
import pytest
from serving_witness import EAGER, GRAPH, SGLANG, VLLM, raw_iterations
from support import run_cli, sample

from profview.diff.comparison import load_comparison

SIDES = (EAGER, GRAPH)


def decode_gpu(name: str) -> list[float]:
    return [r["gpu_us"] for r in raw_iterations(name, lambda n: n == "decode")]


def test_eager_against_graph_decode_compares_per_iteration() -> None:
    comparison = load_comparison(str(sample(EAGER)), str(sample(GRAPH)), use_cache=False)
    frame = comparison.view("phases")
    decode = frame.filter(pl.col("name") == "decode").row(0, named=True)
    prefill = frame.filter(pl.col("name") == "prefill").row(0, named=True)
    before, after = statistics.median(decode_gpu(EAGER)), statistics.median(decode_gpu(GRAPH))
    # the graph side's decode tokens come from its capture's embedding (test_replay_tokens.py)
    assert decode["compared"] == "gpu_us_per_token"
    assert (decode["median_gpu_us_before"], decode["median_gpu_us_after"]) == pytest.approx((before, after), abs=1e-3)
    per_token = decode["gpu_us_per_token_after"] - decode["gpu_us_per_token_before"]
    assert decode["delta_us"] == pytest.approx(per_token, abs=1e-3)
    hosts = [statistics.median(r["host_us"] for r in raw_iterations(n, lambda x: x == "decode")) for n in SIDES]
    assert (decode["median_host_us_before"], decode["median_host_us_after"]) == pytest.approx(hosts, abs=1e-3)
    assert hosts[1] < hosts[0] / 10  # the graph's point: a tenth of the host time per token
    assert prefill["compared"] == "gpu_us_per_token" and prefill["gpu_us_per_token_before"] == pytest.approx(
        raw_iterations(EAGER, lambda n: n == "prefill")[0]["gpu_us"] / 128, abs=1e-3
    )


def test_vllm_against_sglang_decode_compares_per_token(capsys: pytest.CaptureFixture[str]) -> None:
    (vllm,) = raw_iterations(VLLM, lambda n: n.startswith("execute_"))
    (sglang,) = raw_iterations(SGLANG, lambda n: n.startswith("execute_"))
    assert run_cli(["diff", str(sample(VLLM)), str(sample(SGLANG)), "--summary", "--no-cache"]) == 0
    out = capsys.readouterr().out
    before, after = vllm["gpu_us"] / 32, sglang["gpu_us"] / 32
    line = next(line for line in out.splitlines() if line.startswith("▼ decode"))
    assert line == (
        f"▼ decode (1→1 iterations): GPU/token {before:.1f} us → {after:.1f} us, "
        f"-{before - after:.1f} us ({(after - before) / before * 100:+.1f}%)"
    )


def test_diff_phases_export_and_a_side_without_iterations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "phases.csv"
    args = ["diff", str(sample(EAGER)), str(sample(GRAPH)), "--view", "phases", "-o", str(out), "--no-cache"]
    assert run_cli(args) == 0
    assert pl.read_csv(out)["name"].to_list() == ["prefill", "decode"]
    capsys.readouterr()
    alexnet = str(sample("hta_critical_path_alexnet.json.gz"))
    assert run_cli(["diff", str(sample(EAGER)), alexnet, "--view", "phases", "-o", "-", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no iterations" in err and len(err.splitlines()) == 1
