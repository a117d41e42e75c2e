"""Which columns each view has (a view pays only for what it shows), and what the cold
kernel table does not compute: no linked model, no perf model, no NumPy.

The column lists are the views' contract (exports, the viewer and the API read the same frames):
a column added or dropped must change this file.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from support import loaded, sample

import profview
from profview.profiles.views import view_frame

KERNELS = [
    "name", "calls", "total_us", "mean_us", "median_us", "min_us", "max_us", "std_us", "pct", "grid", "block",
    "registers", "shared_mem", "occupancy", "shapes", "category",
]
OPS = ["name", "kind", "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us", "category"]
STEP_CATEGORIES = [
    "kernel_us", "memcpy_us", "memset_us", "communication_us", "prewindow_us", "runtime_us", "dataloader_us",
    "cpu_exec_us", "other_us",
]
#: (view, options) → columns, on resnet50 (every view has rows there).
COLUMNS: dict[tuple[str, str], list[str]] = {
    ("kernels", ""): KERNELS,
    ("kernels", "by_shape"): KERNELS,
    ("kernels", "on_path"): [*KERNELS[:3], "on_path_us", "path_pct", *KERNELS[3:]],
    ("ops", ""): OPS,
    ("ops", "by_shape"): [*OPS[:-1], "input_dims", "category"],
    ("ops", "on_path"): [*OPS[:4], "on_path_us", "path_pct", *OPS[4:]],
    ("steps", ""): [
        "step", "name", "start_us", "duration_us", *STEP_CATEGORIES, "outlier", "gpu_busy_us", "model_tflop",
        "tflops_s", "mfu_pct",
    ],
    ("categories", ""): ["category", "coarse", "kernels", "calls", "total_us", "pct"],
    ("efficiency", ""): [  # issue 33: figures first, the model's parameters and spread, dims last
        "name", "calls", "kernel_us", "tflops_s", "tb_s", "pct_of_roofline", "bound", "gflops", "data_mb",
        "flops_per_byte", "precision", "category", "params", "kernel_layout", "us_median", "us_min", "us_max",
        "tflops_s_median", "tflops_s_min", "tflops_s_max", "peak_tflops", "peak_tb_s", "input_dims", "input_types",
        "kineto_gflops", "note",
    ],
    ("critical_path", ""): ["step", "bound_by", "duration_us", "pct", "path_us", "step_us"],
    ("critical_path_events", ""): [
        "step", "position", "kind", "name", "bound_by", "start_us", "dur_us", "on_path_us", "name_on_path_us",
        "name_total_us",
    ],
    ("critical_path_names", ""): ["kind", "name", "calls", "on_path_us", "path_pct", "total_us", "on_path_share_pct"],
    ("gpu_idle", ""): [
        "step", "name", "start_us", "duration_us", "gpu_busy_us", "compute_us", "comm_us", "overlap_us",
        "overlap_pct", "idle_us", "gaps", "idle_data_us", "idle_sync_us", "idle_host_us", "idle_other_us",
    ],
    ("gaps", ""): ["step", "start_us", "end_us", "idle_us", "cause"],
    ("memory", ""): ["ts_us", "device", "bytes", "allocated_bytes", "reserved_bytes", "op", "python_stack", "addr"],
    ("memory_ops", ""): [
        "op", "device", "allocs", "allocated_bytes", "frees", "freed_bytes", "net_bytes", "retained_bytes",
    ],
    ("memory_peaks", ""): [
        "device", "peak_allocated_bytes", "peak_reserved_bytes", "ts_us", "op", "python_stack", "events",
    ],
    ("modules", ""): [
        "path", "module", "depth", "calls", "kernels", "self_us", "total_us", "pct", "fwd_self_us", "fwd_total_us",
        "bwd_self_us", "bwd_total_us",
    ],
    ("sources", ""): ["name", "kernels", "self_us", "total_us", "pct"],
    ("launches", "op"): ["name", "kind", "calls", "direct_calls", "total_us", "mean_us", "min_us", "max_us", "pct"],
    ("launches", "kernel"): [
        "op", "op_chain", "python_stack", "calls", "total_us", "mean_us", "min_us", "max_us", "pct",
    ],
}
RESNET = "resnet50_train_amp.pt.trace.json.gz"


@pytest.mark.parametrize(("view", "option"), sorted(COLUMNS))
def test_each_view_has_its_columns(view: str, option: str) -> None:
    profile = loaded(RESNET)
    options: dict[str, object] = {"by_shape": True} if option == "by_shape" else {}
    options |= {"on_path": True} if option == "on_path" else {}
    options |= {"op": "aten::convolution_backward"} if option == "op" else {}
    options |= {"kernel": str(profile.kernels()["name"][0])} if option == "kernel" else {}
    frame = view_frame(profile, view, **options)  # type: ignore[arg-type]
    assert frame.height > 0
    assert frame.columns == COLUMNS[(view, option)]


def test_job_views_have_their_columns() -> None:
    from profview.jobs.job import JOB_KERNEL_COLUMNS, STRAGGLER_PATH_COLUMNS, open_job

    ranks = [
        "rank", "steps", "step_us", *(c for c in STEP_CATEGORIES if c != "communication_us"),
        "step_communication_us", "communication_us", "exposed_communication_us", "overlap_pct", "wait_us",
        "last_arrivals", "clock_offset_us", "straggler",
    ]
    bounds = ["cpu_bound", "data_loading", "gpu_compute_bound", "gpu_communication_bound",
              "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead"]  # fmt: skip
    with open_job([str(sample("gloo_2rank"))], workers=1, use_cache=False) as job:
        assert job.view("ranks").columns == ranks  # issue 32: no critical path (its own view)
        assert job.view("rank_paths").columns == ["rank", "critical_path_us", *(f"path_{b}_pct" for b in bounds)]
        assert job.view("kernels").columns == list(JOB_KERNEL_COLUMNS)
        assert job.view("straggler_path").columns == list(STRAGGLER_PATH_COLUMNS)


@pytest.mark.parametrize("view", ["kernels", "ops"])
def test_category_and_on_path_are_the_only_columns_added(view: str) -> None:
    """The kernel and operator views are their analysis table plus ``category`` (and the on-path
    pair when asked for): nothing else is computed for them."""
    profile = profview.load(sample(RESNET), use_cache=False)
    base = profile.kernels() if view == "kernels" else profile.ops()
    assert view_frame(profile, view).columns == [*base.columns, "category"]


def test_a_cold_kernel_table_links_no_model() -> None:
    """The kernel view of a freshly parsed trace: no linked model, no perf model (issue 32)."""
    profile = profview.load(sample("gpt2_train_bf16.pt.trace.json.gz"), use_cache=False)
    frame = view_frame(profile, "kernels")
    assert frame.height == 69
    assert "model" not in vars(profile)
    assert "_categorized" not in vars(profile) and "_call_work" not in vars(profile)


PROBE = """
import sys
from profview.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = (
    "numpy", "profview.analysis.trace.model", "profview.analysis.efficiency.perf_model",
    "profview.analysis.tables.operators",
)
print("LOADED:", ",".join(m for m in heavy if m in sys.modules) or "none", file=sys.stderr)
"""


def test_a_cold_kernel_export_imports_neither_numpy_nor_the_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """In a fresh interpreter, ``export --view kernels --no-cache`` writes the table with its
    category, and never imports NumPy, the model, the operator table or the perf model."""
    out = tmp_path / "k.csv"
    args = ["export", str(sample("gpt2_train_bf16.pt.trace.json.gz")), "-v", "kernels", "-o", str(out), "--no-cache"]
    run = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert "LOADED: none" in run.stderr, run.stderr[-2000:]
    header = out.read_text().splitlines()[0]
    assert header.split(",") == KERNELS
