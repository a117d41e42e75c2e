"""An export of several processes (one per GPU of a job) is said to be one, with each process's GPUs,
kernels and kernel time, recomputed here with plain ``sqlite3``; a one-process export says nothing."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from nsys_witness import SAMPLE_EXPORTS, SHARED_EXPORTS, connect, export_path
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
