"""The nsys reader's figures against plain ``sqlite3`` (:mod:`nsys_witness`): the kernel table is nsys's
``cuda_gpu_kern_sum`` per demangled name to the ns, and operators' device self time on the PyTorch
exports is the GPU time whose launch their range innermost encloses, found by containment."""

from __future__ import annotations

import pytest
from nsys_witness import (
    PYTORCH_EXPORTS,
    SAMPLE_EXPORTS,
    SHARED_EXPORTS,
    cuda_gpu_kern_sum,
    device_self_by_containment,
    export_for_test,
)

import profview

ALL = (*SAMPLE_EXPORTS, *SHARED_EXPORTS)


_path = export_for_test


@pytest.mark.parametrize("name", ALL)
def test_kernel_table_is_cuda_gpu_kern_sum(name: str, request: pytest.FixtureRequest) -> None:
    path = _path(name, request)
    witness = cuda_gpu_kern_sum(path)
    table = profview.load(path, use_cache=False).kernels()
    assert table.height == len(witness) > 0
    for row in table.iter_rows(named=True):
        count, total, mean, median, low, high = witness[row["name"]]
        assert row["calls"] == count
        assert round(row["total_us"] * 1000) == total
        assert round(row["min_us"] * 1000) == low and round(row["max_us"] * 1000) == high
        assert row["mean_us"] * 1000 == pytest.approx(mean, abs=1e-3)
        assert row["median_us"] * 1000 == pytest.approx(median, abs=1e-3)


@pytest.mark.parametrize("name", PYTORCH_EXPORTS)
def test_operator_device_self_is_the_innermost_enclosing_range(name: str, request: pytest.FixtureRequest) -> None:
    path = _path(name, request)
    witness = device_self_by_containment(path)
    ops = profview.load(path, use_cache=False).ops()
    ranges = ops.filter(ops["kind"].is_in(["cpu_op", "user_annotation"]))
    got = {row["name"]: row["device_self_us"] * 1000 for row in ranges.iter_rows(named=True) if row["device_self_us"]}
    assert set(got) == set(witness) and len(got) > 10
    for op, total in witness.items():
        assert got[op] == pytest.approx(total, abs=1e-3 * max(1, len(witness))), op


@pytest.mark.parametrize("name", PYTORCH_EXPORTS)
def test_a_kernel_links_to_the_call_of_its_own_process_only(name: str, request: pytest.FixtureRequest) -> None:
    """Correlation ids repeat across the two processes: the kernels linked to a launching call are
    those the join on correlation id and process finds, fewer than a join on the id alone."""
    from nsys_witness import connect

    path = _path(name, request)
    join = (
        "SELECT COUNT(*) FROM (SELECT DISTINCT k.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId{})"
    )
    with connect(path) as db:
        by_process = db.execute(join.format(" AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215"))
        linked_by_process = by_process.fetchone()[0]
        plain = db.execute(join.format("")).fetchone()[0]
    model = profview.load(path, use_cache=False).model
    kernels = model.gpu.filter(model.gpu["kind"] == "kernel")
    assert kernels["launch_row"].is_not_null().sum() == linked_by_process < plain
