"""Figures of an Nsight Systems export computed with plain ``sqlite3`` and the standard library, never
with profview: the second witness of the nsys reader's tests."""

from __future__ import annotations

import sqlite3
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from support import SAMPLES, SHARED

#: The exports every test runs on: the samples in the checkout, and the shared corpus where present.
SAMPLE_EXPORTS = ("nsys_mock_rtx3080.sqlite", "nsys_saxpy_mpi_a100_2022.sqlite")
SHARED_EXPORTS = (
    "nsysai__h100_2gpu_1s.sqlite",
    "nsysai__mfu_2gpu_before.sqlite",
    "nsysai__mfu_2gpu_after.sqlite",
    "nsysai__mock.sqlite",
    "nsysai__healthy_1pct.SYNTHETIC.sqlite",
    "flameox__nsight-2025.5.2.sqlite",
    "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
)
#: The two exports recorded with PyTorch's emit_nvtx ranges.
PYTORCH_EXPORTS = ("nsysai__h100_2gpu_1s.sqlite", "nsysai__mfu_2gpu_before.sqlite")


def export_path(name: str) -> Path:
    """Where an export named in the lists above lives."""
    return SAMPLES / name if name in SAMPLE_EXPORTS else SHARED / "formats" / "nsys" / name


def export_for_test(name: str, request: pytest.FixtureRequest) -> Path:
    """The export ``name`` for a test: a shared one needs ``../shared`` (the test skips without it)."""
    if name not in SAMPLE_EXPORTS:
        request.getfixturevalue("shared_dir")
    path = export_path(name)
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def connect(path: Path) -> sqlite3.Connection:
    """The export, read-only."""
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def cuda_gpu_kern_sum(path: Path) -> dict[str, tuple[int, int, float, float, int, int]]:
    """nsys's ``cuda_gpu_kern_sum`` report: per demangled name (count, total, mean, median, min,
    max), in ns."""
    with connect(path) as db:
        rows = db.execute(
            "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS s ON s.id = k.demangledName"
        ).fetchall()
    durations: dict[str, list[int]] = defaultdict(list)
    for name, duration in rows:
        durations[name].append(duration)
    return {
        name: (len(d), sum(d), sum(d) / len(d), float(statistics.median(d)), min(d), max(d))
        for name, d in durations.items()
    }


def emit_nvtx_name(text: str) -> str:
    """An emit_nvtx range's operator name: the text before its first ``, seq = `` / ``, op_id = ``."""
    for field in (", seq = ", ", op_id = ", ", sizes = "):
        text = text.split(field)[0]
    return text


def device_self_by_containment(path: Path) -> dict[str, float]:
    """Per range name, the GPU time (kernels, memcpy, memset; ns) whose launching call's innermost
    enclosing push/pop range on the launching thread has that name (the launching call: the runtime
    row of the same process and correlation id)."""
    with connect(path) as db:
        calls = {}
        for tid, correlation, start, end in db.execute(
            "SELECT globalTid, correlationId, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME"
        ):
            calls.setdefault(((tid >> 24) & 0xFFFFFF, correlation), (tid, start, end))
        ranges: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        for tid, start, end, text, registered in db.execute(
            "SELECT n.globalTid, n.start, n.end, n.text, s.value FROM NVTX_EVENTS AS n "
            "LEFT JOIN StringIds AS s ON s.id = n.textId WHERE n.eventType = 59 AND n.end IS NOT NULL"
        ):
            ranges[tid].append((start, end, emit_nvtx_name(text if text is not None else registered)))
        work = []
        for table in ("KERNEL", "MEMCPY", "MEMSET"):
            work += db.execute(
                f"SELECT globalPid, correlationId, end - start FROM CUPTI_ACTIVITY_KIND_{table}"
            ).fetchall()
    totals: dict[str, float] = defaultdict(float)
    for pid, correlation, duration in work:
        call = calls.get(((pid >> 24) & 0xFFFFFF, correlation))
        if call is None:
            continue
        tid, start, end = call
        enclosing = [r for r in ranges.get(tid, []) if r[0] <= start and end <= r[1]]
        if enclosing:
            innermost = max(enclosing, key=lambda r: (r[0], -r[1]))
            totals[innermost[2]] += duration
    return dict(totals)


def saxpy_steps(path: Path) -> list[tuple[int, int]]:
    """Per ``saxpy`` push/pop range, in start order: (start, end) in ns, its end being the later of
    the range's own end and the end of the GPU work whose launch call starts inside it on its thread."""
    with connect(path) as db:
        ranges = db.execute(
            "SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
            "WHERE e.eventType = 59 AND coalesce(e.text, s.value) = 'saxpy' ORDER BY e.start"
        ).fetchall()
        calls = db.execute("SELECT start, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
        work = {}
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            for correlation, end in db.execute(f"SELECT correlationId, end FROM {table}"):
                work[correlation] = max(work.get(correlation, end), end)
    steps = []
    for start, end, thread in ranges:
        launched = [work[c] for s, t, c in calls if t == thread and start <= s <= end and c in work]
        steps.append((start, max([end, *launched])))
    return steps


def short_names(path: Path) -> dict[str, str | None]:
    """Per demangled name, the ``shortName`` most of its kernels have (ties: the first in text
    order; None where none has one), read with ``sqlite3``."""
    with connect(path) as db:
        rows = db.execute(
            "SELECT d.value, s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
            "JOIN StringIds AS d ON d.id = k.demangledName LEFT JOIN StringIds AS s ON s.id = k.shortName "
            "GROUP BY d.value, s.value"
        ).fetchall()
    counted: dict[str, dict[str, int]] = defaultdict(dict)
    for name, short, count in rows:
        if short is not None:
            counted[name][short] = count
        else:
            counted.setdefault(name, {})
    return {
        name: min(shorts, key=lambda short: (-shorts[short], short)) if shorts else None
        for name, shorts in counted.items()
    }
