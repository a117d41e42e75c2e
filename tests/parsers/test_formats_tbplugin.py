"""TensorBoard-plugin JSON views (seed 001: two runs, one JSON document per line)."""

from __future__ import annotations

import json
import re

import pytest
from support import sample

import profview
from profview.errors import ProfviewError

PLUGIN = "seed_tbplugin_views_two_runs.jsonl"


def overview_docs() -> list[dict]:
    docs = [json.loads(line) for line in sample(PLUGIN).read_text().splitlines() if line.strip()]
    return [d for d in docs if isinstance(d, dict) and "steps" in d]


def test_runs_are_separate_and_selectable() -> None:
    first = profview.load(sample(PLUGIN), use_cache=False)
    assert first.runs == ["run1", "run2"] and first.run == "run1"
    second = profview.load(sample(PLUGIN), use_cache=False, run="2")
    assert second.run == "run2"
    assert first.ops().height == 74 and second.ops().height == 66
    with pytest.raises(ProfviewError, match="no run 'run9'"):
        profview.load(sample(PLUGIN), use_cache=False, run="run9")


def test_step_5_of_the_first_run() -> None:
    """Read by hand from the file: step 5 of run 1 (µs)."""
    step = profview.load(sample(PLUGIN), use_cache=False).steps().row(0, named=True)
    assert step["step"] == 5
    assert step["duration_us"] == 129983
    assert (step["kernel_us"], step["memcpy_us"], step["memset_us"], step["communication_us"]) == (100863, 1948, 69, 0)
    assert (step["runtime_us"], step["dataloader_us"], step["cpu_exec_us"], step["other_us"]) == (
        3346,
        10023,
        12460,
        1274,
    )
    parts = [step[c] for c in step if c.endswith("_us") and c not in ("start_us", "duration_us")]
    assert sum(parts) == step["duration_us"]


def test_the_step_headers_swap_memset_and_communication() -> None:
    """The step table's headers list Communication before Memset, but each value's tooltip names
    its category, and the run's average breakdown agrees with the tooltips, not the headers."""
    for index, doc in enumerate(overview_docs()):
        headers = [c.get("name") for c in doc["steps"]["columns"]]
        comm_col, memset_col = headers.index("Communication"), headers.index("Memset")
        assert comm_col < memset_col
        rows = doc["steps"]["rows"]
        # the tooltip after the value under "Communication" says Memset, and vice versa
        assert all(re.search(r"<b>Memset:", row[comm_col + 1]) for row in rows)
        assert all(re.search(r"<b>Communication:", row[memset_col + 1]) for row in rows)
        average = {c["name"]: c["value"] for c in doc["performance"][0]["children"]}
        under_comm = sum(row[comm_col] for row in rows) / len(rows)
        assert under_comm == pytest.approx(average["Memset"], abs=1)  # values under "Communication" are Memset
        profile = profview.load(sample(PLUGIN), use_cache=False, run=f"run{index + 1}")
        assert profile.steps()["memset_us"].mean() == pytest.approx(average["Memset"], abs=1)
        assert profile.steps()["communication_us"].sum() == average["Communication"] == 0


def test_operator_and_kernel_tables() -> None:
    profile = profview.load(sample(PLUGIN), use_cache=False)
    op = profile.ops().row(0, named=True)
    assert op["name"] == "aten::cudnn_convolution_backward_weight"
    assert (op["calls"], op["device_self_us"], op["host_self_us"], op["host_total_us"]) == (318, 149670, 22973, 39006)
    kernel = profile.kernels().row(0, named=True)
    assert kernel["name"].startswith("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>")
    assert (kernel["calls"], kernel["total_us"], kernel["mean_us"]) == (167, 86835, 520)
    assert "DataLoader" in profile.metadata["hints"][0]
    assert not profile.available("launches")
