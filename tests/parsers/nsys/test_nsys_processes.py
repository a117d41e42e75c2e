"""An export of several processes (one per GPU of a job) is said to be one, with each process's GPUs,
kernels and kernel time, recomputed here with plain ``sqlite3``; a one-process export says nothing."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from nsys_witness import SAMPLE_EXPORTS, SHARED_EXPORTS, connect, export_for_test, export_path
from support import run_cli

import profview


def per_process(path: Path) -> dict[int, tuple[list[int], int, int]]:
    """Per OS process of the kernels' ``globalPid``: (devices, kernels, kernel ns)."""
    found: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    devices: dict[int, set[int]] = defaultdict(set)
    with connect(path) as db:
        for global_pid, device, start, end in db.execute(
            'SELECT globalPid, deviceId, start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL'
        ):
            pid = (global_pid >> 24) & 0xFFFFFF
            found[pid][0] += 1
            found[pid][1] += end - start
            devices[pid].add(device)
    return {pid: (sorted(devices[pid]), count, ns) for pid, (count, ns) in found.items()}


@pytest.mark.parametrize("name", ("nsysai__h100_2gpu_1s.sqlite", "nsysai__mfu_2gpu_before.sqlite"))
def test_each_process_of_an_export(
    name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    request.getfixturevalue("shared_dir")
    path = export_path(name)
    witness = per_process(path)
    assert len(witness) == 2
    listed = profview.load(path, use_cache=False).metadata["nsys"]["processes"]
    assert [p["pid"] for p in listed] == sorted(witness)
    for process in listed:
        devices, count, ns = witness[process["pid"]]
        assert process["devices"] == devices and process["kernels"] == count
        assert round(process["kernel_us"] * 1000) == ns
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 processes in this export; every figure below sums them:" in out
    for pid, (devices, count, _ns) in witness.items():
        assert f"pid {pid} (python3) on GPU {devices[0]}: {count:,} kernels" in out


@pytest.mark.parametrize("name", (*SAMPLE_EXPORTS, "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"))
def test_one_process_says_nothing(
    name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    if name in SHARED_EXPORTS:
        request.getfixturevalue("shared_dir")
    path = export_path(name)
    assert len(per_process(path)) == 1
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    assert "processes in this export" not in capsys.readouterr().out


def summary_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """``summary --format json`` of ``path``, read afresh."""
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1", "--format", "json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.parametrize("name", ("nsysai__h100_2gpu_1s.sqlite", "nsysai__mfu_2gpu_before.sqlite"))
def test_the_json_carries_each_process_as_numbers(
    name: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    request.getfixturevalue("shared_dir")
    path = export_path(name)
    witness = per_process(path)
    document = summary_json(path, capsys)
    schema = json.loads((Path(__file__).resolve().parents[3] / "docs/schemas/summary.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    processes = document["processes"]
    assert [process["pid"] for process in processes] == sorted(witness)
    with connect(path) as db:
        names = dict(db.execute("SELECT pid, name FROM PROCESSES"))
    for process in processes:
        gpus, count, ns = witness[process["pid"]]
        assert process["gpus"] == gpus and process["kernels"] == count and process["name"] == names[process["pid"]]
        assert process["kernel_us"] == pytest.approx(ns / 1000, abs=1e-3)
    assert len(document["lines"]["processes"]) == len(witness) + 1


@pytest.mark.parametrize("name", SAMPLE_EXPORTS)
def test_one_process_is_null_in_the_json(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = export_path(name)
    assert len(per_process(path)) == 1
    document = summary_json(path, capsys)
    assert document["processes"] is None and document["lines"]["processes"] == []


def test_kernels_naming_no_process_are_counted(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export whose kernel table has no ``globalPid`` (a stripped schema): its kernels are the
    entry naming no process, with their count and time, not a row of zero kernels."""
    path = export_for_test("nsysai__healthy_1pct.SYNTHETIC.sqlite", request)
    with connect(path) as db:
        count, ns = db.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
        devices = [row[0] for row in db.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")]
    listed = profview.load(path, use_cache=False).metadata["nsys"]["processes"]
    nameless = [p for p in listed if p["pid"] is None]
    assert len(nameless) == 1 and nameless[0]["kernels"] == count > 0
    assert round(nameless[0]["kernel_us"] * 1000) == ns and nameless[0]["devices"] == devices
    assert run_cli(["summary", str(path), "--no-cache", "-n", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 process and kernels naming no process in this export" in out
    assert f"kernels naming no process on GPU {devices[0]}: {count:,} kernels" in out
