"""``summary --format json`` carries every figure the text prints as a typed number, each unit in
its key, and every sample's document validates against the JSON Schema in ``docs/schemas/``.

Witnesses: the text summary's own lines (each number the JSON holds, rounded as printed, is in
them), the raw memory events counted with the standard library (``tests/witness.py``
``raw_peaks``), the ``critical_path``, ``phases`` and ``steps`` exports, and the
graph replays' kernels summed from the raw JSON."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import jsonschema
import polars as pl
import pytest
from support import SAMPLES, run_cli, sample
from witness import raw, raw_peaks

from profview.report.profile_summary import SUMMARY_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
#: Files in samples/ that are not profiles: notes, and TraceLens' per-operator CSVs (their own tests read them).
NOT_PROFILES = (".md", ".csv")
#: Every sample profview summarises: each trace, table and job of samples/ (a job: a folder or archive of ranks).
SAMPLE_INPUTS = sorted(
    p.name for p in SAMPLES.iterdir() if not p.name.endswith(NOT_PROFILES) and p.name != "tracelens_live"
)
JOBS = ("gloo_2rank", "nccl_p2p_2rank", "param_dlrm_8rank_v100.tar.gz", "sglang_decode_capture_traces")


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@cache
def document(name: str) -> dict:
    """The ``summary --format json`` document of a sample (in-process, through the CLI)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_cli(["summary", str(sample(name)), "--format", "json", "--top", "5", "-j", "2"])
    assert code == 0, name
    return json.loads(out.getvalue())


def text(capsys: pytest.CaptureFixture[str], name: str) -> str:
    assert run_cli(["summary", str(sample(name)), "--top", "5", "--wide"]) == 0
    return re.sub(r"\s+", " ", capsys.readouterr().out)


def test_every_sample_is_a_profile_or_a_job() -> None:
    """The list below covers samples/: a new sample is validated too, or this fails."""
    assert len(SAMPLE_INPUTS) >= 40 and set(JOBS) <= set(SAMPLE_INPUTS)


@pytest.mark.parametrize("name", SAMPLE_INPUTS)
def test_every_sample_validates(name: str) -> None:
    doc = document(name)
    which = "job-summary" if name in JOBS else "summary"
    if doc.get("schema", "").startswith("profview.memory-snapshot/"):  # a snapshot is a profile of its own kind
        which = "memory-snapshot"
    errors = sorted(validator(which).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, f"{name}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    if which == "summary":
        assert doc["schema"] == SUMMARY_SCHEMA == "profview.summary/2"


def test_the_schema_refuses_a_zero_for_unknown_and_a_share_above_100() -> None:
    """The schema is not a rubber stamp: a text where a number goes, a share past 100%, a missing key."""
    doc = json.loads(json.dumps(document("gpt2_train_bf16.pt.trace.json.gz")))
    check = validator("summary")
    assert check.is_valid(doc)
    bad = json.loads(json.dumps(doc))
    bad["efficiency"]["mfu_pct"] = "8.2%"
    assert not check.is_valid(bad)
    bad = json.loads(json.dumps(doc))
    bad["categories"][0]["pct"] = 180.0
    assert not check.is_valid(bad)
    bad = json.loads(json.dumps(doc))
    del bad["critical_path"]
    assert not check.is_valid(bad)


def _share(value: float) -> str:
    return f"{value:.1f}%"


def test_efficiency_numbers_are_the_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """gpt2: MFU, TFLOP per step, TFLOP/s, the peak, the shares, as the text prints them; and the
    definitions recomputed from the steps export (FLOPs ÷ time, ÷ peak)."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    doc, printed = document(name), text(capsys, name)
    eff = doc["efficiency"]
    assert eff["scope"] == "average_step" and eff["steps"] == 3 and eff["precision"] == "bf16"
    assert f"model FLOPs per average step: {eff['model_tflops_per_step']:.3f} TFLOP" in printed
    assert f"{eff['model_tflops_per_s']:.1f} TFLOP/s, MFU {eff['mfu_pct']:.1f}% of the H100 SXM bf16 peak" in printed
    assert f"peak {eff['peak_tflops_per_s']:g} TFLOP/s" in printed
    assert f"rows size {_share(eff['sized_pct'])} of GPU time" in printed
    for category in doc["categories"][:6]:
        assert f"{category['category']} {_share(category['pct'])}" in printed
    rows = pl.DataFrame(_query(capsys, name, "SELECT step, model_tflop, duration_us FROM steps"))
    assert eff["model_tflops_per_step"] == pytest.approx(rows["model_tflop"].mean(), rel=1e-12)
    rate = rows["model_tflop"].sum() / (rows["duration_us"].sum() / 1e6)
    assert eff["model_tflops_per_s"] == pytest.approx(rate, rel=1e-12)
    assert eff["mfu_pct"] == pytest.approx(rate / eff["peak_tflops_per_s"] * 100, rel=1e-12)


def _query(capsys: pytest.CaptureFixture[str], name: str, sql: str) -> list[dict]:
    """The answer of ``profview query`` (written as Parquet: every figure at full precision)."""
    import tempfile

    capsys.readouterr()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "answer.parquet"
        assert run_cli(["query", str(sample(name)), "-q", sql, "-o", str(out)]) == 0
        return pl.read_parquet(out).to_dicts()


def test_peak_memory_bytes_are_the_raw_events() -> None:
    """gpt2 (profile_memory): the peak per device is the largest ``Total Allocated`` of its raw
    ``[memory]`` events, counted with the standard library."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    peaks = {row["device"]: row["peak_memory_bytes"] for row in document(name)["memory"]}
    assert peaks == raw_peaks(raw(sample(name)))
    assert peaks["cuda:0"] > 10 * 2**30  # 12.68 GiB, the line's figure


def test_graph_shares_are_the_raw_replays(capsys: pytest.CaptureFixture[str]) -> None:
    """The CUDA-graph decode trace: the replayed kernels' time (the raw kernels whose launch is a
    cudaGraphLaunch, by correlation) over all GPU events' time, and every replay attributed
    through the capture; the text prints both shares."""
    name = "h100_decode_cuda_graph.json.gz"
    events = raw(sample(name))
    graph_launches = {
        e["args"]["correlation"]
        for e in events
        if e.get("ph") == "X" and e.get("name") == "cudaGraphLaunch" and "correlation" in e.get("args", {})
    }
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    replayed = sum(e["dur"] for e in gpu if e.get("args", {}).get("correlation") in graph_launches)
    every = sum(e["dur"] for e in gpu)
    graphs = document(name)["graphs"]
    assert graphs["replayed_us"] == pytest.approx(replayed, abs=1e-3)
    assert graphs["graph_replay_pct"] == pytest.approx(replayed / every * 100, rel=1e-9)
    assert graphs["graph_attributed_pct"] == pytest.approx(100.0) and graphs["captures"] == ["capture_decode_bs4"]
    printed = text(capsys, name)
    assert f"{_share(graphs['graph_replay_pct'])} of GPU time (1 graph, 12 replays)" in printed
    assert f"attributed to operators: {_share(graphs['graph_attributed_pct'])} through" in printed


def test_graph_attribution_unknown_without_a_capture() -> None:
    """A graph trace without its capture: the attributed share is unknown (null), not 0%."""
    graphs = document("h100_compile_partial_window.json.gz")["graphs"]
    assert graphs is not None and graphs["graphs_without_capture"] == graphs["graphs"]
    assert graphs["graph_attributed_pct"] is None and graphs["attributed_us"] is None


def test_phases_per_token_and_unknown_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """Decode loops: µs GPU per token as the phases export has it, null where the tokens are not
    known; the line rounds the same figure."""
    for name, phase, tokens_known in (
        ("h100_decode_eager_kv.json.gz", "decode", True),
        ("h100_decode_cuda_graph.json.gz", "decode", True),  # tokens from the capture
        ("h100_decode_profiler_steps.json.gz", "unknown", False),
    ):
        phases = {p["phase"]: p for p in document(name)["phases"] or []}
        exported = {r["phase"]: r for r in _query(capsys, name, "SELECT phase, gpu_us_per_token FROM phases")}
        figure = phases.get(phase, {}).get("gpu_us_per_token")
        if tokens_known:
            assert figure == pytest.approx(exported[phase]["gpu_us_per_token"]) and figure > 0
            assert f"{figure:.1f} us GPU/token" in text(capsys, name)
        else:
            assert figure is None and exported[phase]["gpu_us_per_token"] is None


def test_critical_path_is_the_export(capsys: pytest.CaptureFixture[str]) -> None:
    """Per step: path_us, step_us and each bound kind's µs and share, as ``critical_path`` exports them."""
    name = "gpt2_train_bf16.pt.trace.json.gz"
    block = document(name)["critical_path"]
    assert block["unknown"] is None
    exported = _query(capsys, name, "SELECT step, bound_by, duration_us, pct, path_us, step_us FROM critical_path")
    by_step = {s["step"]: s for s in block["steps"]}
    assert sorted(by_step) == sorted({r["step"] for r in exported}) == [2, 3, 4]
    for row in exported:
        step = by_step[row["step"]]
        assert step["path_us"] == pytest.approx(row["path_us"]) and step["step_us"] == pytest.approx(row["step_us"])
        bound = next(b for b in step["bounds"] if b["bound_by"] == row["bound_by"])
        assert bound["duration_us"] == pytest.approx(row["duration_us"]) and bound["pct"] == pytest.approx(row["pct"])
    for step in block["steps"]:  # no impossible figure: the path is no longer than the step
        assert 0 < step["path_us"] <= step["step_us"]
        assert sum(b["duration_us"] for b in step["bounds"]) == pytest.approx(step["path_us"], abs=0.01)


def test_a_table_file_has_unknown_blocks() -> None:
    """A key_averages table: no timeline, so no efficiency, graphs, path: null, never 0."""
    doc = document("resnet50_train_amp.tables.txt")
    for key in ("overview", "communication", "categories", "efficiency", "graphs", "phases", "memory", "critical_path"):
        assert doc[key] is None, key


def test_communication_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    """The NCCL trace: communication µs and share of GPU busy time, per collective, as the line prints them."""
    name = "tracelens_b200_nccl_eager_no_steps.json.gz"
    block = document(name)["communication"]
    printed = text(capsys, name)
    if block["communication_us"]:
        assert f"{block['communication_pct_of_gpu_busy']:.1f}% of GPU busy time" in printed
        assert sum(c["calls"] for c in block["collectives"]) > 0
    assert block["communication_pct_of_gpu_busy"] is not None


def test_job_numbers_are_the_straggler_line() -> None:
    """The gloo job: the straggler's figures as numbers, and the line printed from them."""
    doc = document("gloo_2rank")
    found = doc["straggler_figures"]
    assert doc["rank_count"] == 2 and doc["world_size"] == 2 and found["ranks"] == [1]
    assert f"arrives last at {found['last_arrivals']} of {found['collectives_matched']} collectives" in doc["straggler"]
    straggler = next(r for r in doc["ranks"] if r["straggler"])
    assert found["wait_us"] == pytest.approx(straggler["wait_us"])
