"""key_averages tables and kernel-count lists: figures read by hand from the seed files, and
the tables of the H100 runs checked against the same runs' traces."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from support import loaded, sample

import profview
from profview.cli import main

GAUSSIAN = "seed_torch_table_gaussian_splatting.txt"
TWO_SORTS = "seed_torch_tables_two_sorts_russian.txt"
README = "seed_readme_kernel_counts_stacks.md"


def data_rows(text: str) -> list[str]:
    """Rows of every key_averages table, read line by line (between the header's separator
    and the closing separator), with no column parsing: the independent count."""
    rows, state = [], 0
    for line in text.splitlines():
        if re.fullmatch(r"-{3,}(  -{3,})+\s*", line):
            state = {0: 1, 1: 2, 2: 0}[state]
            continue
        if state == 2 and line.strip() and line[:55].strip():
            rows.append(line.rstrip())
    return rows


def test_gaussian_splatting_table() -> None:
    profile = loaded(GAUSSIAN)
    assert profile.format == "PyTorch key_averages table"
    ops = profile.ops()
    row = ops.filter(pl.col("name") == "_RasterizeGaussiansBackward").row(0, named=True)
    assert row["calls"] == 30000
    assert row["device_self_us"] == pytest.approx(473.880e6)  # "473.880s" in the Self CUDA column
    assert row["host_total_us"] == pytest.approx(32.888e6)
    assert row["self_device_mem_bytes"] == pytest.approx(-763.92 * 2**30)  # negative memory kept
    text = sample(GAUSSIAN).read_text()
    assert ops.height == len(data_rows(text)) == 100
    # distinct rows sharing one truncated name are not merged
    names = [r[:55].strip() for r in data_rows(text)]
    repeated = {n for n in names if names.count(n) > 1}
    assert repeated
    for name in repeated:
        assert ops.filter(pl.col("name") == name).height == names.count(name)
    assert profile.metadata["self_time_total_us"] == {
        "CPU": pytest.approx(1905.440e6),
        "CUDA": pytest.approx(1002.922e6),
    }
    kernels = profile.kernels()
    assert kernels.row(0, named=True)["name"].startswith("void renderCUDA<3u>")
    assert kernels.row(0, named=True)["total_us"] == pytest.approx(454.340e6)


def test_flops_columns_gpu_activity_kinds_and_footers() -> None:
    """``Total GFLOPs`` values are GFLOPs (the frame holds FLOPs); device-only rows are labelled
    by what they are; the ``Self ... time total`` footers are kept."""
    gpt2 = loaded("gpt2_train_bf16.tables.txt")
    mm = gpt2.ops().filter(pl.col("name") == "aten::mm").row(0, named=True)
    assert mm["flops"] == pytest.approx(14040.831e9)  # "14040.831" under "Total GFLOPs"
    resnet = loaded("resnet50_train_amp.tables.txt")
    conv = resnet.ops().filter(pl.col("name") == "aten::conv2d").row(0, named=True)
    assert conv["flops"] == pytest.approx(3138920644608.0)  # under "Total FLOPs"
    kinds = dict(resnet.ops().select("name", "kind").unique("name", keep="first").iter_rows())
    assert kinds["aten::conv2d"] == "operator"
    assert kinds["Memcpy HtoD (Pinned -> Device)"] == "memcpy"
    assert kinds["void cudnn::batchnorm_bwtr_nhwc_semiPersist<__half, ..."] == "kernel"
    steps = resnet.ops().filter(pl.col("name") == "ProfilerStep*")
    assert sorted(steps["kind"]) == ["gpu_annotation", "operator"]  # the GPU-side range and the host one
    assert "ProfilerStep*" not in resnet.kernels()["name"]
    assert resnet.metadata["self_time_total_us"] == {"CPU": pytest.approx(386902), "CUDA": pytest.approx(44939)}
    gaussian = loaded(GAUSSIAN).ops()
    assert gaussian.filter(pl.col("name") == "Memset (Device)")["kind"].to_list() == ["memset"]


def test_same_run_sorted_two_ways_counts_each_row_once() -> None:
    text = sample(TWO_SORTS).read_text()
    rows = data_rows(text)
    unique = list(dict.fromkeys(r.strip() for r in rows))
    profile = loaded(TWO_SORTS)
    assert len(rows) > len(unique)
    assert profile.ops().height == len(unique) == 43
    assert any("counted once" in w for w in profile.warnings)


def test_readme_stack_table_negative_times_and_kernel_counts() -> None:
    profile = loaded(README)
    grouped = profile.ops(by_shapes=True)
    stack = grouped.filter(pl.col("name") == "aten::_slow_conv2d_forward")["source_location"][0]
    assert stack.splitlines() == [  # the five frames printed under the row, read by hand
        "yolov5/val.py(586): main",
        "site-packages/torch/autograd/grad_mode.py(27): decorate_context",
        "yolov5/val.py(331): run",
        "nn.Module: DetectMultiBackend",
        "models/common.py(679): forward",
    ]
    row = grouped.filter(pl.col("name") == "aten::_slow_conv2d_forward").row(0, named=True)
    assert (row["calls"], row["host_self_us"], row["host_total_us"]) == (240, 131534.0, 234796.0)
    assert row["device_mem_bytes"] == pytest.approx(11.31 * 2**30)  # "11.31 Gb"
    ops = profile.ops()
    select = ops.filter(pl.col("name") == "aten::select").row(0, named=True)
    assert select["device_self_us"] == pytest.approx(-688.540e3)  # written as -688.540ms
    assert select["negative"]
    assert ops["negative"].sum() == 7
    counts = profile.kernels()
    assert counts.row(0, named=True)["name"] == "copy_" and counts.row(0, named=True)["calls"] == 6150
    assert counts.height == 35


def tables_and_trace(run: str, shared: Path | None) -> tuple[pl.DataFrame, profview.Profile, profview.Profile]:
    folder = shared / "traces" if shared else sample("x").parent
    table = profview.load(folder / f"{run}.tables.txt", use_cache=False)
    trace = profview.load(folder / f"{run}.pt.trace.json.gz", use_cache=False)
    return table.ops(), table, trace


def close(a: float, b: float) -> bool:
    """Equal to the printed precision: 3 decimals in ms or us (0.5 us), or 0.05%."""
    return a == pytest.approx(b, abs=0.5, rel=5e-4)


@pytest.mark.parametrize("run", ["resnet50_train_amp", "gpt2_train_bf16", "ddp_nccl_streams", "gpt2_train_big"])
def test_tables_agree_with_the_same_runs_trace(run: str, request: pytest.FixtureRequest) -> None:
    """Each run's key_averages tables (all of them, read as one profile) against
    ``profview.load(trace).ops()`` of the same run, by operator name (rows with CPU time; names
    torch truncated with "..." cannot be matched and are skipped): ``# of Calls`` exactly, and
    ``Self CPU``, ``CPU total`` and ``Self CUDA`` to the printed precision (0.5 us or 0.05%), now
    that the ops view follows torch's rules (docs/figures.md; tests/test_torch_tables.py compares
    every column of the first table, CUDA total included).  Kernels: calls exactly and Self CUDA
    to the printed precision."""
    shared = request.getfixturevalue("shared_dir") if run == "gpt2_train_big" else None
    ops, table, trace = tables_and_trace(run, shared)
    trace_ops = trace.ops()
    rows = ops.filter((pl.col("host_total_us") > 0) & ~pl.col("name").str.ends_with("..."))
    rows = rows.unique("name", keep="first", maintain_order=True)
    joined = rows.join(trace_ops, on="name", suffix="_trace")
    assert joined.height >= 30
    for row in joined.iter_rows(named=True):
        name = row["name"]
        assert row["calls"] == row["calls_trace"], name
        for column in ("host_self_us", "host_total_us", "device_self_us"):
            assert close(row[column], row[f"{column}_trace"]), (name, column)
    # Kernel rows: torch cuts names of 52 characters or more to 52 + "..."; each row is one kernel
    # of the trace (several may share a cut name, as in seed 000).
    trace_kernels = trace.kernels().with_columns(
        pl.when(pl.col("name").str.len_chars() >= 52)
        .then(pl.col("name").str.slice(0, 52) + "...")
        .otherwise(pl.col("name"))
        .alias("printed")
    )
    table_kernels = table.kernels().filter(pl.col("name").is_in(trace_kernels["printed"].implode()))
    assert table_kernels.height >= 10
    for row in table_kernels.iter_rows(named=True):
        same = trace_kernels.filter(pl.col("printed") == row["name"], pl.col("calls") == row["calls"])
        assert any(close(row["total_us"], total) for total in same["total_us"]), row["name"]


def test_text_profiles_explain_missing_views(capsys: pytest.CaptureFixture[str]) -> None:
    profile = loaded(TWO_SORTS)
    assert not profile.available("steps") and "no per-step timeline" in profile.missing["steps"]
    try:
        main(["summary", str(sample(TWO_SORTS))])
    except SystemExit as exc:
        assert not exc.code
    out = capsys.readouterr().out
    assert "no steps view: a key_averages table has no per-step timeline" in out


def test_kernel_count_list_alone(tmp_path) -> None:  # type: ignore[no-untyped-def]
    counts = [line for line in sample(README).read_text().splitlines() if '" : ' in line]
    target = tmp_path / "counts.txt"
    target.write_text("dispatch counts:\n" + "\n".join(counts) + "\n")
    profile = profview.load(target, use_cache=False)
    assert profile.format == "kernel-count list"
    assert profile.kernels()["calls"].sum() == sum(int(line.rsplit(":", 1)[1]) for line in counts)
    assert not profile.available("ops")
