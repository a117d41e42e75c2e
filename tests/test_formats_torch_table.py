"""key_averages tables and kernel-count lists: figures read by hand from the seed files, and
the tables of the H100 runs checked against the same runs' traces."""

from __future__ import annotations

import re

import polars as pl
import profview
import pytest
from conftest import loaded, sample
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
    assert stack.splitlines()[:3] == [
        "yolov5/val.py(586): main",
        "site-packages/torch/autograd/grad_mode.py(27): decorate_context",
        "yolov5/val.py(331): run",
    ]
    ops = profile.ops()
    select = ops.filter(pl.col("name") == "aten::select").row(0, named=True)
    assert select["device_self_us"] == pytest.approx(-688.540e3)  # written as -688.540ms
    assert select["negative"]
    assert ops["negative"].sum() == 7
    counts = profile.kernels()
    assert counts.row(0, named=True)["name"] == "copy_" and counts.row(0, named=True)["calls"] == 6150
    assert counts.height == 35


@pytest.mark.parametrize("run", ["resnet50_train_amp", "gpt2_train_bf16", "ddp_nccl_streams"])
def test_tables_agree_with_the_same_runs_trace(run: str) -> None:
    """Where both measure the same thing: Self CUDA (device_self_us) for every operator row, and
    CPU total and # of Calls on the ResNet run, to the printed precision (3 decimals in ms or µs:
    0.5 µs + 0.05%); Self CPU within 1% (torch's bookkeeping of a call's CPU-side children differs
    by a few µs).  Rows whose names torch truncated ("...") cannot be matched and are skipped."""
    table = profview.load(sample(f"{run}.tables.txt"), use_cache=False).ops()
    trace = loaded(f"{run}.pt.trace.json.gz").ops()
    rows = table.filter((pl.col("host_total_us") > 0) & ~pl.col("name").str.ends_with("..."))
    rows = rows.unique("name", keep="first", maintain_order=True)
    joined = rows.join(trace, on="name", suffix="_trace")
    assert joined.height >= 30
    columns = ["device_self_us", "host_self_us"] + (["host_total_us", "calls"] if run == "resnet50_train_amp" else [])
    for column in columns:
        for row in joined.iter_rows(named=True):
            if column == "host_self_us" and row["name"] == "ProfilerStep*":
                continue  # torch also subtracts Python-side children here
            if column == "host_self_us" and run == "ddp_nccl_streams":
                continue
            expected = row[f"{column}_trace"]
            rel = 1e-2 if column == "host_self_us" else 5e-4
            assert row[column] == pytest.approx(expected, abs=0.5, rel=rel), (column, row["name"])


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
