"""``profview export T --view critical_path[_events|_names] [--step N] [--rules hta] [--what-if R=F]``
(issue 26): the figures of HTA 0.5.0 (see tests/analysis/test_critical_path.py for how they were
taken), one-line errors for what a trace lacks."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"


def _export(tmp_path: Path, *args: str) -> pl.DataFrame:
    out = tmp_path / "out.csv"
    assert run_cli(["export", str(sample(GPT2)), "-o", str(out), "--force", "--no-cache", *args]) == 0
    return pl.read_csv(out)


def test_critical_path_view_gives_htas_breakdown(tmp_path: Path) -> None:
    frame = _export(tmp_path, "-v", "critical_path", "--step", "3", "--rules", "hta")
    figures = dict(frame.select("bound_by", "duration_us").iter_rows())
    assert figures == {
        "cpu_bound": 24_893,
        "data_loading": 0,
        "gpu_compute_bound": 48_268,
        "gpu_communication_bound": 0,
        "gpu_kernel_kernel_overhead": 1_953,
        "gpu_kernel_launch_overhead": 12,
    }
    assert set(frame["path_us"].to_list()) == {75_126}


def test_what_if_is_labelled_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The three cutlass GEMMs launched in step 3 (15,414.366 µs in the raw events, all on the path)
    at half: the path loses 7,707 µs."""
    frame = _export(tmp_path, "-v", "critical_path", "--step", "3", "--what-if", "cutlass=0.5")
    assert "what-if is a model" in capsys.readouterr().err
    total = frame.filter(pl.col("bound_by") == "total").row(0, named=True)
    assert total["change_us"] == pytest.approx(-15_414.366 / 2, abs=0.01)


def test_events_and_names_views(tmp_path: Path) -> None:
    events = _export(tmp_path, "-v", "critical_path_events", "--step", "3")
    assert events["position"].to_list() == list(range(events.height))
    names = _export(tmp_path, "-v", "critical_path_names", "--step", "3")
    path = _export(tmp_path, "-v", "critical_path", "--step", "3")
    own = path.filter(~pl.col("bound_by").str.contains("overhead"))["duration_us"].sum()
    assert names["on_path_us"].sum() == pytest.approx(own, abs=0.01)
    assert events["on_path_us"].sum() == pytest.approx(path["path_us"][0], abs=0.01)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--what-if", "gemm"], "expected REGEX=FACTOR"),
        (["--step", "9"], "no step 9 (steps: [2, 3, 4])"),
        (["--rules", "fast"], "unknown rules 'fast'"),
    ],
)
def test_bad_options_are_one_line(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.csv"
    code = run_cli(["export", str(sample(GPT2)), "-v", "critical_path", "-o", str(out), "--no-cache", *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1 and not out.exists()


def test_trace_without_runtime_events_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """HTA's large-integer trace has kernels but no runtime calls to link them to the host."""
    out = tmp_path / "x.csv"
    code = run_cli(["export", str(sample("hta_large_integer_comms_id.json.gz")), "-v", "critical_path", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "no runtime launch events link the GPU work to the host" in err and err.count("\n") == 1
