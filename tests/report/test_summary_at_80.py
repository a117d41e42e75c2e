"""``profview summary`` at 80 columns: figures whole with their units (a ``replayed`` column puts each
name on its own line), a job's kernel headers whole, ``-n`` bounding the step rows with the outlier
steps kept.  Witnesses: the raw events of the traces (step annotations counted with ``json``), the
profile's own frames for the figures printed."""

from __future__ import annotations

import gzip
import io
import json
import re

from support import SAMPLES, loaded

import profview
from profview.frames import fmt_us
from profview.report.console import ReportConsole
from profview.report.profile_summary import print_summary, summary_figures

REPLAY = "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz"
CAPTURE = SAMPLES / "sglang_decode_capture_traces"
STEPS = "hta_diff_control_a100.json.gz"


def printed(profile, top: int = 10, width: int = 80) -> str:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    print_summary(profile, top, ReportConsole(file=out, width=width, force_terminal=False))
    return out.getvalue()


def test_replayed_column_keeps_device_figures_whole() -> None:
    profile = profview.load(SAMPLES / REPLAY, use_cache=False)  # its own: the capture changes it
    profile.use_capture([str(CAPTURE)], use_cache=False)
    text = printed(profile)
    assert max(len(line) for line in text.splitlines()) <= 80
    ops = summary_figures(profile, 10).ops
    assert ops is not None and "graph_device_us" in ops.columns
    lines = text.split("Top 10 operators", 1)[1].splitlines()
    for row in ops.iter_rows(named=True):
        figures = [fmt_us(row[c]) for c in ("graph_device_us", "host_self_us", "host_total_us",
                                            "device_self_us", "device_total_us")]
        assert any(all(f in line for f in figures) for line in lines), figures  # every figure whole, with its unit


def test_job_kernel_headers_are_whole() -> None:
    from profview.jobs.job import open_job
    from profview.report.job_summary import job_summary_figures, print_job_figures

    job = open_job(SAMPLES / "param_dlrm_8rank_v100.tar.gz", workers=1, use_cache=False)
    try:
        out = io.StringIO()
        print_job_figures(job_summary_figures(job, 10), ReportConsole(file=out, width=80, force_terminal=False))
    finally:
        job.close()
    section = out.getvalue().split("Top 10 kernels (all ranks)", 1)[1]
    header = section.splitlines()[1].split()
    assert header == ["kernel", "calls", "total", "median/rank", "max/rank", "max", "rank"]
    assert "…" not in section.splitlines()[1]


def raw_step_count(name: str) -> int:
    with gzip.open(SAMPLES / name) as handle:
        events = json.load(handle)["traceEvents"]
    return len({e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")})


def test_top_bounds_the_step_rows_and_keeps_outliers() -> None:
    profile = loaded(STEPS)
    steps = profile.steps()
    assert steps.height == raw_step_count(STEPS) > 3
    figures = summary_figures(profile, 2)
    assert figures.outliers is not None
    late = [s for s, _ in figures.outliers.steps if s not in steps["step"].head(2).to_list()]
    assert late  # an outlier past the first two rows: the case -n must keep
    text = printed(profile, top=2).split("Steps (ms)", 1)[1].split("Top 2 kernels", 1)[0]
    rows = [int(m) for m in re.findall(r"(?m)^(\d+) +\d+\.\d +\d", text)]
    assert rows == sorted([*steps["step"].head(2).to_list(), *late])
    left = steps.height - len(rows)
    assert f"… {left} more step" in text
    assert printed(profile, top=50).count("more step") == 0
    assert set(rows) <= set(steps["step"].to_list())
