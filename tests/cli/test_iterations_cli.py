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
from support import SAMPLES, raw_events, run_cli, sample


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
        (["-v", "kernels", "--iteration", "decode"], "--iteration with --view kernels: an iteration's number"),
        (["-v", "gaps", "--iteration", "1"], "--iteration N narrows kernels, ops, launches, modules"),
        (["-v", "kernels", "--iteration", "99"], "no iteration 99"),
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
    """Graph-replayed decode: 4 tokens a replay, read from the capture's embedding, so µs per token
    as for eager decode (the raw GPU events each iteration launched, by correlation, over 12 × 4
    tokens); training: no phase line."""
    assert run_cli(["summary", str(sample(GRAPH)), "--no-cache", "--top", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # an 80-column console folds the line
    per_token = sum(r["gpu_us"] for r in raw_iterations(GRAPH, lambda n: n == "decode")) / 48
    assert f"decode: 12 iterations × 4 tokens, {per_token:.1f} us GPU/token, " in out and "→ host-bound" in out
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


@pytest.mark.parametrize("number", [0, 3])
def test_iteration_number_narrows_the_exports_as_a_step(tmp_path: Path, number: int) -> None:
    """Issue 40: ``--iteration N`` (its number in ``--view iterations``) narrows kernels, ops,
    categories, efficiency and launches to the work iteration N launched: the kernels export counts
    the iteration's kernel events and their µs, counted from the raw events by correlation."""
    raw = raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))[number]
    events = [e for e in raw_events(EAGER) if e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    lo, hi = raw["ts"], raw["ts"] + raw["host_us"]
    mine = [
        e
        for e in events
        if e.get("cat") == "kernel" and (c := calls.get(e["args"].get("correlation"))) and lo <= c["ts"] <= hi
    ]

    def export(view: str, *more: str) -> pl.DataFrame:
        out = tmp_path / f"{view}.csv"
        args = ["export", str(sample(EAGER)), "-v", view, "--iteration", str(number), *more, "-o", str(out)]
        assert run_cli([*args, "--no-cache"]) == 0
        return pl.read_csv(out)

    kernels = export("kernels")
    assert kernels["calls"].sum() == len(mine) == raw["kernels"]
    assert kernels["total_us"].sum() == pytest.approx(sum(e["dur"] for e in mine), abs=1e-3 * kernels.height)
    categories = export("categories")
    assert categories["total_us"].sum() == pytest.approx(raw["gpu_us"], abs=1e-3 * categories.height)
    ops = export("ops")
    names = {e["name"] for e in events if e.get("cat") == "cpu_op" and lo <= e["ts"] <= hi}
    assert set(ops.filter(pl.col("kind") == "cpu_op")["name"].to_list()) == names
    efficiency = export("efficiency")
    assert efficiency["calls"].sum() <= sum(1 for e in events if e.get("cat") == "cpu_op" and lo <= e["ts"] <= hi)
    launched = export("launches", "--op", "aten::embedding")
    assert launched.height >= 1  # the iteration's own embedding call launched its gather


def test_iteration_number_narrows_modules(tmp_path: Path) -> None:
    """The CUDA-graph loop (stacks and modules recorded): iteration 5's modules hold exactly the GPU
    work that iteration launched (raw), ``pct`` of it; ``calls`` left empty (host frames are not narrowed)."""
    raw = raw_iterations(GRAPH, lambda n: n in ("prefill", "decode"))[5]
    out = tmp_path / "m.csv"
    assert (
        run_cli(["export", str(sample(GRAPH)), "-v", "modules", "--iteration", "5", "-o", str(out), "--no-cache"]) == 0
    )
    modules = pl.read_csv(out)
    assert modules["self_us"].sum() == pytest.approx(raw["gpu_us"], abs=1e-3 * modules.height)
    assert modules["calls"].null_count() == modules.height


def test_step_narrows_modules_too(tmp_path: Path) -> None:
    """Issue 40: ``--step N`` narrows the modules export (the viewer's "step N only" Modules pane
    reads the same frame): ResNet-50's step 3 holds the GPU time its kernels, memcpy and memset
    exports hold for that step, less than the whole trace's."""
    trace = str(sample("resnet50_train_amp.pt.trace.json.gz"))

    def export(*args: str) -> pl.DataFrame:
        out = tmp_path / f"{'_'.join(args).replace('-', '')}.csv"
        assert run_cli(["export", trace, *args, "-o", str(out), "--no-cache"]) == 0
        return pl.read_csv(out)

    step, whole = export("-v", "modules", "--step", "3"), export("-v", "modules")
    categories = export("-v", "categories", "--step", "3")
    assert step["self_us"].sum() == pytest.approx(categories["total_us"].sum(), abs=1e-3 * step.height)
    assert step["self_us"].sum() < whole["self_us"].sum() and step["calls"].null_count() == step.height
