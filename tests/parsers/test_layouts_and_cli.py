"""Any JSON layout gives the same tables; the CLI exports exactly the view's frame; the Python API."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from support import loaded, raw_events, run_cli, sample

import profview

DDP = "ddp_nccl_streams.pt.trace.json.gz"


def write_layout(doc: dict, path: Path, layout: str) -> None:
    events = doc["traceEvents"]
    meta = {k: v for k, v in doc.items() if k != "traceEvents"}
    if layout == "oneline":
        text = json.dumps({"traceEvents": events, **meta}, separators=(",", ":"))  # events key first
    elif layout == "compact":
        body = ",\n".join(json.dumps(e, separators=(",", ":")) for e in events)
        text = json.dumps(meta)[:-1] + ', "traceEvents": [\n' + body + "\n]}"
    else:
        text = json.dumps(doc, indent=4)
    path.write_text(text)


@pytest.mark.parametrize("layout", ["oneline", "compact", "indented"])
def test_every_json_layout_gives_the_same_tables(tmp_path: Path, layout: str) -> None:
    with gzip.open(sample(DDP), "rt") as fh:
        doc = json.load(fh)
    target = tmp_path / f"t_{layout}.json"
    write_layout(doc, target, layout)
    profile = profview.load(target, use_cache=False)
    reference = loaded(DDP)
    assert profile.kernels().equals(reference.kernels())
    assert profile.ops().equals(reference.ops())
    assert profile.steps().equals(reference.steps())
    assert profile.metadata["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"


def test_nccl_kernels_count_as_communication() -> None:
    """Rank 0 of a 128-rank NCCL job: its SendRecv kernels are Communication, not Kernel time."""
    name = "hta_sampled_rank-0.json.gz"
    profile = loaded(name)
    nccl = [e for e in raw_events(name) if e.get("cat") == "kernel" and "nccl" in e["name"].lower()]
    assert profile.kernels().filter(pl.col("name").str.contains("(?i)nccl"))["calls"].sum() == len(nccl) == 10
    steps = profile.steps()
    assert steps["communication_us"].sum() > 0
    assert steps["communication_us"].sum() <= sum(e["dur"] for e in nccl) + 0.01


def test_export_csv_equals_filtered_sorted_frame(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "k.csv"
    done_code = run_cli(
        [
            "export",
            str(sample(DDP)),
            "-v",
            "kernels",
            "--filter",
            "gemm|nccl",
            "--sort",
            "calls",
            "--asc",
            "-n",
            "5",
            "-o",
            str(out),
        ]
    )
    assert done_code == 0
    written = pl.read_csv(out)
    frame = loaded(DDP).kernels()
    expected = frame.filter(pl.col("name").str.contains("(?i)gemm|nccl")).sort("calls", maintain_order=True).head(5)
    assert written["name"].to_list() == expected["name"].to_list()
    assert written["calls"].to_list() == expected["calls"].to_list()
    assert f"wrote {expected.height} rows" in capsys.readouterr().err


@pytest.mark.parametrize("view", ["kernels", "ops", "steps"])
@pytest.mark.parametrize("ext", ["csv", "parquet", "json"])
def test_export_every_view_and_format(tmp_path: Path, view: str, ext: str) -> None:
    out = tmp_path / f"v.{ext}"
    run_cli(["export", str(sample(DDP)), "-v", view, "-o", str(out)])
    frame = {"csv": pl.read_csv, "parquet": pl.read_parquet, "json": pl.read_json}[ext](out)
    expected = getattr(loaded(DDP), view)()
    assert frame.height == expected.height
    extra = ["outlier"] if view == "steps" else []  # issue 13: the steps export flags outlier steps
    # issue 24: steps gain the model FLOPs and GPU busy; kernels and ops a category (issue 32: no TFLOP/s)
    extra += ["gpu_busy_us", "model_tflop", "tflops_s", "mfu_pct"] if view == "steps" else ["category"]
    assert frame.columns == [*expected.columns, *extra]


def test_export_launches_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "l.csv"
    run_cli(
        [
            "export",
            str(sample("resnet50_train_amp.pt.trace.json.gz")),
            "-v",
            "launches",
            "--op",
            "aten::convolution_backward",
            "-o",
            str(out),
        ]
    )
    assert pl.read_csv(out)["total_us"].sum() == pytest.approx(10331.192)
    failed_code = run_cli(["export", str(sample(DDP)), "-v", "launches", "-o", str(out), "--force"])
    assert failed_code == 2
    assert "needs --op" in capsys.readouterr().err
    exists_code = run_cli(["export", str(sample(DDP)), "-o", str(out)])
    assert exists_code == 2
    assert "already exists" in capsys.readouterr().err


def test_summary_prints_overview_and_tables(capsys: pytest.CaptureFixture[str]) -> None:
    run_cli(["summary", str(sample("resnet50_train_amp.pt.trace.json.gz")), "--top", "3"])
    out = capsys.readouterr().out
    assert "NVIDIA H100 80GB HBM3" in out
    assert "3 steps" in out
    assert "aten::convolution_backward" in out or "ProfilerStep*" in out


def test_python_api_views() -> None:
    profile = profview.load(sample(DDP), use_cache=False)
    assert list(profile.kernels().columns[:9]) == [
        "name",
        "calls",
        "total_us",
        "mean_us",
        "median_us",
        "min_us",
        "max_us",
        "std_us",
        "pct",
    ]
    assert list(profile.ops().columns) == [
        "name",
        "kind",
        "calls",
        "host_self_us",
        "host_total_us",
        "device_self_us",
        "device_total_us",
    ]
    assert profile.steps().height == 3
    op = profile.ops().filter(pl.col("device_self_us") > 0)["name"][0]
    assert profile.launches(op)["total_us"].sum() > 0


def test_version_and_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    done_code = run_cli(["--version"])
    assert done_code == 0
    assert profview.__version__ in capsys.readouterr().out
    missing_code = run_cli(["summary", "/no/such/trace.json"])
    assert missing_code == 2
    assert capsys.readouterr().err.strip() == "profview: error: /no/such/trace.json: no such file"
