"""``profview summary --format json`` (issue 41, item 5): the text summary's figures as one JSON
document with a schema version.

Witnesses: the text summary of the same trace (each figure the JSON holds is printed there), the
kernel table export, and the raw JSON read with the standard library (``tests/witness.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from support import run_cli, sample
from witness import dlrm_kernels, raw_kernels

from profview.frames import fmt_us
from profview.report.job_summary import JOB_SUMMARY_SCHEMA, RANK_COLUMNS
from profview.report.profile_summary import SUMMARY_SCHEMA

EAGER = "h100_decode_eager_kv.json.gz"


def _bare(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _summary(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> str:
    assert run_cli(["summary", str(path), "--no-cache", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", ["resnet50_train_amp.pt.trace.json.gz", EAGER])
def test_json_holds_the_text_figures(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # every name whole on its line
    path = sample(name)
    doc = json.loads(_summary(capsys, path, "--format", "json", "--top", "5"))
    # Rich folds lines at the test console's width: compared without whitespace.
    text = re.sub(r"\s+", "", _summary(capsys, path, "--top", "5", "--wide"))
    assert doc["schema"] == SUMMARY_SCHEMA and doc["path"] == str(path) and doc["top"] == 5
    view = doc["overview"]
    assert _bare(f"span {fmt_us(view['span_us'])}") in text and _bare(f"GPU busy {view['gpu_busy_pct']:.1f}%") in text
    assert _bare(f"({view['gpu_events']:,} GPU events)") in text
    for key in ("communication", "efficiency", "graphs", "phases", "memory", "hints"):
        for line in doc["lines"][key]:
            assert _bare(line) in text
    # The top kernels: the kernel table's first rows (the export), and the JSON's own counts.
    out = tmp_path / "k.parquet"
    assert run_cli(["export", str(path), "-v", "kernels", "--top", "5", "-o", str(out), "--no-cache"]) == 0
    exported = pl.read_parquet(out).select("name", "calls", "total_us", "mean_us", "pct").to_dicts()
    assert doc["kernels"] == exported
    raw = raw_kernels(path)
    for row in doc["kernels"]:
        assert _bare(row["name"]) in text and row["calls"] == raw[row["name"]][0]
        assert row["total_us"] == pytest.approx(raw[row["name"]][1], abs=1e-3)
    assert len(doc["ops"]) == 5 and all(_bare(r["name"]) in text for r in doc["ops"])
    assert len(doc["steps"]) >= 1 and set(doc["steps"][0]) >= {"step", "duration_us", "kernel_us"}


def test_outliers_and_phases_say_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    """The decode trace's per-phase lines are the text's, word for word."""
    doc = json.loads(_summary(capsys, sample(EAGER), "--format", "json"))
    assert [line.split(":")[0] for line in doc["lines"]["phases"]] == ["prefill", "decode"]
    assert "12 iterations × 4 tokens" in doc["lines"]["phases"][1]


def test_a_profiler_table_has_no_overview(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(_summary(capsys, sample("resnet50_train_amp.tables.txt"), "--format", "json", "--top", "3"))
    assert doc["overview"] is None and doc["steps"] is None and len(doc["kernels"]) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--format", "xml"], "--format 'xml': choose text or json")],
)
def test_bad_format_is_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(sample(EAGER)), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_job(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The DLRM job: the straggler line as printed, the ranks as exported, the kernels' calls from the JSON."""
    monkeypatch.setenv("COLUMNS", "1000")
    job = sample("param_dlrm_8rank_v100.tar.gz")
    doc = json.loads(_summary(capsys, job, "--format", "json", "-j", "2"))
    text = _summary(capsys, job, "-j", "2")
    assert doc["schema"] == JOB_SUMMARY_SCHEMA and doc["lines"][0] == "8 of 8 ranks" and doc["backends"] == ["nccl"]
    assert doc["lines"][1].startswith("collectives: 3 matched across ranks")  # the AllReduces (tests/jobs)
    assert doc["straggler"].startswith("straggler: rank 5, ") and doc["straggler"] in text
    out = tmp_path / "ranks.parquet"
    assert run_cli(["export", str(job), "-v", "ranks", "-o", str(out), "-j", "2"]) == 0
    exported = pl.read_parquet(out).select(*RANK_COLUMNS, "straggler").to_dicts()
    assert doc["ranks"] == exported  # 8 ranks, at most --top 10: all of them
    assert len(doc["kernels"]) == 10
    for row in doc["kernels"]:  # calls over all ranks, counted in the JSON
        assert row["calls"] == sum(names[row["name"]] for names in dlrm_kernels().values())
    assert [r["name"] for r in doc["collectives"]][:1] == ["AllReduce"] and "AllReduce" in text


def test_trace_text_is_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel name with an escape sequence reaches stdout as ``\\u001b``, never the byte."""
    import gzip

    events = [
        {"ph": "X", "cat": "kernel", "name": "k\x1b[31m\u202e", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
         "args": {"stream": 7, "device": 0, "correlation": 1}},
    ]
    trace = tmp_path / "t.json.gz"
    with gzip.open(trace, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    out = _summary(capsys, trace, "--format", "json")
    assert "\x1b" not in out and "\u202e" not in out and "\\u001b" in out
    assert json.loads(out)["kernels"][0]["name"] == "k\x1b[31m\u202e"
