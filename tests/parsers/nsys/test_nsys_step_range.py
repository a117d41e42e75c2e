"""``--step-range REGEX``: the NVTX ranges a regex names are an export's steps (a loop's ``saxpy``
iterations here), their figures recomputed with plain ``sqlite3``; the regex is part of what a cache
entry was parsed with; a bad regex, or one given for another format, is one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from nsys_witness import export_path, saxpy_steps
from support import run_cli

import profview

SAXPY = export_path("nsys_saxpy_mpi_a100_2022.sqlite")


def test_the_ranges_a_regex_names_are_the_steps() -> None:
    witness = saxpy_steps(SAXPY)
    assert len(witness) == 5
    profile = profview.load(SAXPY, use_cache=False, step_range="^saxpy$")
    steps = profile.steps()
    assert profile.step_numbers() == list(range(len(witness)))
    assert steps["name"].to_list() == [f"ProfilerStep#{n}" for n in range(len(witness))]
    first = steps["start_us"][0]
    for row, (start, end) in zip(steps.iter_rows(named=True), witness, strict=True):
        assert row["start_us"] - first == pytest.approx((start - witness[0][0]) / 1000, abs=1e-3)
        assert row["duration_us"] == pytest.approx((end - start) / 1000, abs=1e-3)
    # Without the option the export has no steps: the whole trace is one row.
    assert profview.load(SAXPY, use_cache=False).steps()["step"].to_list() == [-1]


def test_the_regex_is_part_of_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "saxpy.sqlite"
    shutil.copy(SAXPY, copy)
    from profview.parsers.nsys import reader

    parsed: list[str | None] = []
    read = reader.read_nsys
    monkeypatch.setattr(
        reader,
        "read_nsys",
        lambda path, step_range=None, process=None: parsed.append(step_range) or read(path, step_range, process),
    )
    counts = []
    for pattern in (None, "^saxpy$", "^saxpy$", "^MPI_(Send|Recv)$", None, None):
        counts.append(len(profview.load(copy, step_range=pattern).step_numbers()))
    assert counts == [0, 5, 5, 15, 0, 0]
    assert parsed == [None, "^saxpy$", "^MPI_(Send|Recv)$", None]  # a repeated regex is a cache hit


def test_a_regex_that_names_nothing_is_said() -> None:
    profile = profview.load(SAXPY, use_cache=False, step_range="^train_step$")
    assert profile.step_numbers() == []
    assert any("--step-range '^train_step$' names no NVTX" in warning for warning in profile.warnings)


def test_a_bad_regex_and_another_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(SAXPY), "--step-range", "(?=saxpy)"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--step-range '(?=saxpy)' is not a valid regular expression" in err
    trace = export_path("nsys_mock_rtx3080.sqlite").parent / "ddp_nccl_streams.pt.trace.json.gz"
    profile = profview.load(trace, use_cache=False, step_range="^saxpy$")
    assert any(warning.startswith("--step-range names NVTX ranges") for warning in profile.warnings)
