"""Every seed file and every key_averages table file through the CLI: `summary` prints, each view
either exports exactly the frame profview.load gives or fails with the reason the profile names,
and `--run` picks a run (TensorBoard-plugin JSON) or is refused where a file holds one run."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample

import profview
from profview.errors import ProfviewError

FILES = [
    "seed_torch_table_gaussian_splatting.txt",  # seeds/000
    "seed_tbplugin_views_two_runs.jsonl",  # seeds/001
    "seed_paddle_profiler_summary_log.txt",  # seeds/002
    "seed_torch_tables_two_sorts_russian.txt",  # seeds/003
    "seed_readme_kernel_counts_stacks.md",  # seeds/004
    "resnet50_train_amp.tables.txt",
    "gpt2_train_bf16.tables.txt",
    "ddp_nccl_streams.tables.txt",
    "xla_style_trace.json",
    "paddle_style_trace.json",
]


def busiest_op(profile: profview.Profile) -> str:
    """An operator that launched GPU work in this profile (or one no profile has, when there are none)."""
    launches = profile.tables.get("launches")
    if launches is not None:
        return launches["op"][0]
    if profile.available("ops"):
        return profile.ops().sort("device_total_us", descending=True)["name"][0]
    return "aten::mm"


def check_file(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(path), "--top", "5", "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # as one line: Rich wraps at the console width
    profile = profview.load(path, use_cache=False)
    assert profile.format in out
    for view, reason in profile.missing.items():
        assert f"no {view} view: {reason}" in out
    for view in ("kernels", "ops", "steps", "launches"):
        target = tmp_path / f"{path.name}.{view}.csv"
        args = ["export", str(path), "-v", view, "-o", str(target), "--no-cache"]
        if view == "launches":
            args += ["--op", busiest_op(profile)]
        code = run_cli(args)
        err = capsys.readouterr().err
        if profile.available(view):
            assert code == 0, err
            expected = profile.launches(args[-1]) if view == "launches" else getattr(profile, view)()
            assert pl.read_csv(target, infer_schema_length=0).height == expected.height > 0
        else:
            assert code == 2 and not target.exists()
            assert profile.missing[view] in err and err.count("\n") == err.count("warning") + 1


@pytest.mark.parametrize("name", FILES)
def test_every_format_file_through_the_cli(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    check_file(sample(name), tmp_path, capsys)


def test_the_shared_seeds_and_tables(shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The originals in ../shared (samples/ holds copies), and the large run's tables."""
    paths = sorted((shared_dir / "seeds").glob("*.txt")) + sorted((shared_dir / "traces").glob("*.tables.txt"))
    assert len(paths) >= 9
    for path in paths:
        check_file(path, tmp_path, capsys)


def test_run_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plugin = str(sample("seed_tbplugin_views_two_runs.jsonl"))
    target = tmp_path / "steps.csv"
    assert run_cli(["export", plugin, "-v", "steps", "--run", "2", "-o", str(target)]) == 0
    assert (
        pl.read_csv(target)["duration_us"].to_list()
        == profview.load(plugin, run="run2").steps()["duration_us"].to_list()
    )
    assert run_cli(["summary", plugin, "--run", "run2"]) == 0
    assert "TensorBoard-plugin JSON, run2 of 2" in " ".join(capsys.readouterr().out.split())
    # a file that holds one run refuses any other
    table = str(sample("resnet50_train_amp.tables.txt"))
    assert run_cli(["summary", table, "--run", "2"]) == 2
    assert "holds a single run" in capsys.readouterr().err
    assert run_cli(["summary", table, "--run", "1"]) == 0
    with pytest.raises(ProfviewError, match="holds a single run"):
        profview.load(sample("xla_style_trace.json"), run="run3")


def test_a_file_of_no_known_format_names_what_was_tried(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("epoch 1 loss 0.3\n-----  -----\n Name  Value\n-----  -----\n a  1\n")
    assert run_cli(["summary", str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not a recognised profile" in err
    for tried in ("Chrome-trace", "TensorBoard-plugin", "Paddle", "key_averages", "kernel-count"):
        assert tried in err
