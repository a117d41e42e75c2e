"""The launch statistics and queue length against Holistic Trace Analysis 0.5 itself, run live.

HTA runs in its own Python (``PROFVIEW_HTA_PYTHON``, else ``/tmp/hta/bin/python`` where it is
installed: ``python3 -m venv /tmp/hta && /tmp/hta/bin/pip install 'HolisticTraceAnalysis==0.5.*'
'pandas<3'``); without one the test is skipped with that reason.  HTA rounds timestamps to whole
microseconds unless ``HTA_DISABLE_NS_ROUNDING=1``, which the run sets so both read the same
times.  HTA drops the host events from the last ``ProfilerStep``'s start on (and the GPU work they
launched): profview's rows are narrowed the same way before the comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from profview.analysis.tables.launch_stats import (
    HTA_LAUNCH_STATS_CALLS,
    HTA_QUEUE_CALLS,
    launch_stats,
    queue_length_series,
    queue_length_summary,
)
from profview.profiles.loading import load

TRACES = ("traces/ddp_nccl_streams.pt.trace.json.gz", "traces/gpt2_train_bf16.pt.trace.json.gz")

HTA_SCRIPT = r"""
import json, sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
stats = next(iter(a.get_cuda_kernel_launch_stats(visualize=False).values()))
queue = a.get_queue_length_summary()
queue.columns = [c[1] for c in queue.columns]
print(json.dumps({
    "stats": stats.to_dict(orient="records"),
    "queue": queue.reset_index().to_dict(orient="records"),
}))
"""


def hta_python() -> str:
    """The Python that has HTA 0.5, or skip saying where it was looked for."""
    candidate = os.environ.get("PROFVIEW_HTA_PYTHON") or "/tmp/hta/bin/python"
    if not Path(candidate).is_file():
        pytest.skip(f"HTA is not installed ({candidate} is absent; set PROFVIEW_HTA_PYTHON)")
    found = subprocess.run([candidate, "-c", "import hta"], capture_output=True, check=False)
    if found.returncode != 0:
        pytest.skip(f"{candidate} has no hta module")
    return candidate


def run_hta(python: str, trace: Path, tmp_path: Path) -> dict:
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / trace.name).symlink_to(trace)
    env = {**os.environ, "HTA_DISABLE_NS_ROUNDING": "1"}
    done = subprocess.run(
        [python, "-c", HTA_SCRIPT, str(folder)], capture_output=True, text=True, env=env, check=True, timeout=600
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def last_step_start(trace: Path) -> float:
    """The last ``ProfilerStep#N``'s start, absolute µs, read from the raw events."""
    import gzip

    import orjson

    with gzip.open(trace) as fh:
        events = orjson.loads(fh.read())["traceEvents"]
    return max(
        float(e["ts"]) for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
    )


@pytest.mark.parametrize("name", TRACES)
def test_launch_stats_and_queue_length_equal_hta(shared_dir: Path, tmp_path: Path, name: str) -> None:
    python = hta_python()
    trace = shared_dir / name
    hta = run_hta(python, trace, tmp_path)
    profile = load(trace, use_cache=False)
    origin = profile.span_start
    cut = last_step_start(trace) - origin
    mine = launch_stats(profile.model.host, profile.model.gpu, origin).filter(pl.col("launch_us") < cut)

    theirs = pl.DataFrame(hta["stats"]).sort("correlation")
    ours = mine.filter(pl.col("launch_call").is_in(HTA_LAUNCH_STATS_CALLS)).sort("correlation")
    assert theirs.height > 100
    assert ours["correlation"].to_list() == theirs["correlation"].to_list()
    for column, hta_column in (
        ("cpu_duration_us", "cpu_duration"),
        ("gpu_duration_us", "gpu_duration"),
        ("launch_delay_us", "launch_delay"),
    ):
        gap = (ours[column] - theirs[hta_column]).abs().max()
        assert gap is not None and float(gap) < 1e-6, column  # type: ignore[arg-type]
    # HTA's short kernels (its histogram's filter) and long delays, counted on its own rows.
    hta_short = theirs.filter((pl.col("cpu_duration") <= 50) & (pl.col("gpu_duration") < pl.col("cpu_duration")))
    assert int(ours["short_kernel"].sum()) == hta_short.height
    assert int(ours["long_delay"].sum()) == theirs.filter(pl.col("launch_delay") > 100).height

    counted = mine.filter(pl.col("launch_call").is_in(HTA_QUEUE_CALLS))  # HTA's calls
    summary = queue_length_summary(queue_length_series(counted)).sort("stream")
    queue = pl.DataFrame(hta["queue"]).sort("stream")
    assert summary["stream"].to_list() == queue["stream"].to_list()
    assert summary["changes"].to_list() == [int(c) for c in queue["count"]]
    assert summary["max"].to_list() == [int(c) for c in queue["max"]]
    assert summary["min"].to_list() == [int(c) for c in queue["min"]]
    for column, hta_column in (("mean", "mean"), ("std", "std"), ("median", "50%"), ("p25", "25%"), ("p75", "75%")):
        gap = (summary[column] - queue[hta_column]).abs().max()
        assert gap is not None and float(gap) < 1e-9, column  # type: ignore[arg-type]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
