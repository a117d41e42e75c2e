"""Serving and decode loops from the command line: ``export --view iterations|phases [--iteration REGEX]``, the
summary's per-phase line, one-line errors, and a re-opened trace's line read from the cache.

Witnesses: the raw JSON read with the standard library (``tests/serving_witness.py``), and the
recording's facts file."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from serving_witness import EAGER, GRAPH, VLLM, raw_iterations
from support import SAMPLES, run_cli, sample


def test_export_iterations_and_phases(tmp_path: Path) -> None:
    out = tmp_path / "it.csv"
    assert run_cli(["export", str(sample(EAGER)), "-v", "iterations", "-o", str(out), "--no-cache"]) == 0
    written = pl.read_csv(out)
    raw = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))
    assert written["gpu_us"].to_list() == pytest.approx([r["gpu_us"] for r in raw], abs=1e-3)
    assert written.columns[:6] == ["iteration", "name", "step", "phase", "requests", "tokens"]
    phases = tmp_path / "ph.csv"
    assert run_cli(["export", str(sample(EAGER)), "-v", "phases", "-o", str(phases), "--no-cache"]) == 0
    decode = pl.read_csv(phases).filter(pl.col("phase") == "decode").row(0, named=True)
    assert decode["gpu_us_per_token"] == pytest.approx(sum(r["gpu_us"] for r in raw[1:]) / 48, abs=1e-3)


def test_iteration_regex_names_the_ranges(tmp_path: Path) -> None:
    """``--iteration '^decode$'``: only the decode ranges, found by the regex, their phase read from the name."""
    out = tmp_path / "it.csv"
    args = ["export", str(sample(EAGER)), "-v", "iterations", "--iteration", "^decode$", "-o", str(out), "--no-cache"]
    assert run_cli(args) == 0
    written = pl.read_csv(out)
    raw = raw_iterations(EAGER, lambda n: n == "decode")
    assert written.height == len(raw) == 12 and set(written["found_by"].to_list()) == {"regex"}
    assert set(written["phase"].to_list()) == {"decode"} and written["tokens"].to_list() == [r["tokens"] for r in raw]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-v", "iterations", "--iteration", "("], "bad --iteration regex"),
        (["-v", "iterations", "--iteration", "zzz"], "no host range matches --iteration"),
        (["-v", "kernels", "--iteration", "decode"], "--iteration goes with --view iterations or phases"),
        (["-v", "phases", "--step", "1"], "--step does not narrow phases"),
    ],
)
def test_bad_requests_are_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["export", str(sample(EAGER)), *args, "-o", "-", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_no_iterations_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """A trace with no annotation and no ProfilerStep (HTA's alexnet) has no iterations, and says so."""
    assert run_cli(["export", str(sample("hta_critical_path_alexnet.json.gz")), "-v", "iterations", "-o", "-"]) == 2
    assert "no iterations: no serving annotation" in capsys.readouterr().err


def test_summary_prints_one_line_per_serving_phase(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(EAGER)), "--no-cache", "--top", "1"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    raw = raw_iterations(EAGER, lambda n: n == "decode")
    per_token = sum(r["gpu_us"] for r in raw) / 48
    decode = next(line for line in lines if line.startswith("decode:"))
    assert decode.startswith(f"decode: 12 iterations × 4 tokens, {per_token:.1f} us GPU/token, busy ")
    assert decode.endswith("→ host-bound")
    assert any(line.startswith("prefill: 1 iteration × 128 tokens") for line in lines)


def test_summary_of_a_graph_loop_and_of_training(capsys: pytest.CaptureFixture[str]) -> None:
    """Graph-replayed decode: tokens unknown, GPU µs per iteration instead; training: no phase line."""
    assert run_cli(["summary", str(sample(GRAPH)), "--no-cache", "--top", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # an 80-column console folds the line
    assert "decode: 12 iterations, " in out and "→ host-bound (tokens unknown)" in out
    assert run_cli(["summary", str(sample("gpt2_train_bf16.pt.trace.json.gz")), "--no-cache", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert not any(line.strip().startswith(("unknown:", "decode:", "prefill:")) for line in out.splitlines())


def test_reopened_summary_reads_the_phase_line_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A re-opened trace's summary prints the same line without linking the model again."""
    import profview

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    trace = tmp_path / "vllm.json.gz"
    shutil.copy(SAMPLES / VLLM, trace)
    first = profview.load(str(trace))
    lines = first.phase_lines()
    from profview.profiles.loading import remember_views

    remember_views(first)
    again = profview.load(str(trace))
    assert again.phase_lines() == lines and lines[0].startswith("decode: 1 iteration × 32 tokens, 334.9 us GPU/token")
    assert "model" not in vars(again)  # read from the cache entry, not linked again


def test_a_reopened_training_trace_knows_it_has_no_phases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search runs once: a re-opened training trace's summary has no phase line and links no model."""
    import profview
    from profview.profiles.loading import remember_views

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    trace = tmp_path / "gpt2.json.gz"
    shutil.copy(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz", trace)
    first = profview.load(str(trace))
    assert first.phase_lines() == [] and not first.has_serving_iterations()
    remember_views(first)
    again = profview.load(str(trace))
    assert again.serving_known() and again.phase_lines() == []
    assert "model" not in vars(again)
