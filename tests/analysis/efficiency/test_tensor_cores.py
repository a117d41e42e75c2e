"""Tensor Core use per GEMM kernel, read from the name: the rules on the samples' own kernel names,
the table's shares against the raw events, the summary's block and hint, and the export."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter

import polars as pl
import pytest
from support import SAMPLES, run_cli
from witness import raw

from profview.analysis.efficiency.tensor_cores import tensor_core_use

DDP = SAMPLES / "ddp_nccl_streams.pt.trace.json.gz"


def kernel_names(name: str) -> list[str]:
    return sorted({e["name"] for e in raw(SAMPLES / name) if e.get("cat") == "kernel" and e.get("ph") == "X"})


def verdict(name: str) -> str:
    return str(tensor_core_use(pl.Series([name]))["tensor_cores"][0])


def test_the_names_decide_and_an_unreadable_name_stays_unknown() -> None:
    """Each name as written in a sample trace: the SIMT fragments outrank ``xmma``; ``tf32f32`` is
    not ``f32f32``; a name that says nothing is unknown."""
    names = [
        *kernel_names("ddp_nccl_streams.pt.trace.json.gz"),
        *kernel_names("hta_critical_path_alexnet.json.gz"),
        *kernel_names("h100_compile_reduce_overhead.json.gz"),
        *kernel_names("tracelens_h100_qwen1.5-0.5b.json.gz"),
    ]
    ffma = next(n for n in names if "xmma" in n and "ffma" in n)
    tf32 = next(n for n in names if "tf32f32" in n)
    nvjet = next(n for n in names if n.startswith("nvjet_"))
    bf16 = next(n for n in names if "xmma_gemm_bf16" in n)
    sgemm = next(n for n in names if n.startswith("ampere_sgemm"))
    split = next(n for n in names if "splitKreduce" in n)
    scudnn = next(n for n in names if "scudnn" in n)
    assert [verdict(n) for n in (ffma, sgemm)] == ["no", "no"]
    assert [verdict(n) for n in (tf32, nvjet, bf16)] == ["yes", "yes", "yes"]
    assert [verdict(n) for n in (split, scudnn)] == ["unknown", "unknown"]
    use = tensor_core_use(pl.Series([ffma, tf32, bf16, nvjet]))
    assert use["precision"].to_list() == ["fp32", "tf32", "bf16", "unknown"]


def simt_share() -> tuple[float, Counter[str]]:
    """The share of kernel time (%) in the FP32 SIMT GEMMs of the DDP trace, from the raw events."""
    total = 0.0
    simt: Counter[str] = Counter()
    for e in raw(DDP):
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            total += e["dur"]
            if "ffma" in e["name"] or "_simt_sgemm" in e["name"]:
                simt[e["name"]] += e["dur"]
    return sum(simt.values()) / total * 100, simt


def summary_json() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_cli(["summary", str(DDP), "--no-cache", "--format", "json"]) == 0
    return json.loads(out.getvalue())


def test_summary_block_and_hint_have_the_fp32_share() -> None:
    share, simt = simt_share()
    document = summary_json()
    block = document["tensor_cores"]
    assert block["fp32_simt_pct"] == pytest.approx(share, abs=1e-6)
    no = {k["name"] for k in block["kernels"] if k["tensor_cores"] == "no"}
    assert no == set(simt)
    hints = document["lines"]["hints"]
    assert any(h.startswith(f"FP32 GEMMs without Tensor Cores take {share:.1f}% of kernel time") for h in hints)
    launches = document["launches"]
    assert launches["launches"] > 200 and launches["queue_max_by_stream"]["52"] == 1


def test_no_hint_where_the_gemms_use_tensor_cores() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        path = SAMPLES / "h100_compile_reduce_overhead.json.gz"
        assert run_cli(["summary", str(path), "--no-cache", "--format", "json"]) == 0
    document = json.loads(out.getvalue())
    assert document["tensor_cores"]["fp32_simt_pct"] == 0.0
    assert {k["tensor_cores"] for k in document["tensor_cores"]["kernels"]} == {"yes"}
    assert not any("Tensor Cores" in h for h in document["lines"]["hints"])


def test_export_writes_the_view(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "tc.csv"
    assert run_cli(["export", str(DDP), "--no-cache", "-v", "tensor_cores", "-o", str(target)]) == 0
    frame = pl.read_csv(target)
    _share, simt = simt_share()
    for name, us in simt.items():
        row = frame.filter(pl.col("name") == name).row(0, named=True)
        assert row["tensor_cores"] == "no" and row["total_us"] == pytest.approx(us, abs=1e-3)
