"""One Nsight Systems export of several processes opened as a job (``--as-job``): each process that
launched GPU work is a rank, numbered by pid.  Every rank's kernels are counted again here with plain
``sqlite3`` (``GROUP BY globalPid``), never with profview."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parsers" / "nsys"))
from nsys_witness import connect, export_for_test
from pilot import screen_text, wait_until
from support import SAMPLES, run_cli

from profview.jobs.process_job import open_process_job

#: The shared exports that hold two processes, one per GPU.
TWO_PROCESS_EXPORTS = ("nsysai__h100_2gpu_1s.sqlite", "nsysai__mfu_2gpu_before.sqlite", "nsysai__mfu_2gpu_after.sqlite")


def kernels_per_process(path: Path) -> dict[int, tuple[int, int, int]]:
    """Per OS process (``(globalPid >> 24) & 0xFFFFFF``): kernels, their ns, and NCCL kernels."""
    with connect(path) as db:
        rows = db.execute(
            """SELECT (k.globalPid >> 24) & 16777215, count(*), sum(k."end" - k.start),
                      sum(CASE WHEN s.value LIKE 'nccl%' THEN 1 ELSE 0 END)
               FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName
               GROUP BY k.globalPid ORDER BY 1"""
        ).fetchall()
    return {int(pid): (int(count), int(ns), int(nccl)) for pid, count, ns, nccl in rows}


@pytest.fixture(scope="module", params=TWO_PROCESS_EXPORTS)
def export(request: pytest.FixtureRequest) -> Path:
    return export_for_test(request.param, request)


def test_each_rank_is_one_process_and_its_kernels(export: Path) -> None:
    witness = kernels_per_process(export)
    assert len(witness) == 2
    job = open_process_job(str(export), use_cache=False)
    assert job.ranks == [0, 1] and job.world_size == 2
    ranks = job.ranks_view()
    assert ranks["pid"].to_list() == sorted(witness)  # rank i: the i-th process by pid
    assert any(note.startswith("ranks numbered by pid") for note in job.notes)
    for rank, pid in enumerate(sorted(witness)):
        count, ns, _nccl = witness[pid]
        kernels = job.summary(rank).kernels
        assert int(kernels["calls"].sum()) == count
        assert round(float(kernels["total_us"].sum()) * 1000) == ns
        assert job.summary(rank).path == f"{export}:pid {pid}"
    # the job's kernels view: every kernel of both processes, the whole export's
    assert int(job.kernels()["calls"].sum()) == sum(count for count, _ns, _n in witness.values())


def test_the_rank_table_and_collectives_refuse_what_is_not_certain(export: Path) -> None:
    witness = kernels_per_process(export)
    job = open_process_job(str(export), use_cache=False)
    ranks = job.ranks_view()
    assert ranks.columns[:2] == ["rank", "pid"] and ranks.height == 2
    # one capture, one clock: no offset estimated; nothing matched on evidence, so no straggler
    assert ranks["clock_offset_us"].to_list() == [0.0, 0.0]
    assert job.stragglers() == [] and ranks["wait_us"].null_count() == 2
    view = job.collectives()
    nccl = {rank: witness[pid][2] for rank, pid in enumerate(sorted(witness))}
    per_rank = dict(view.group_by("rank").len().iter_rows())
    assert {rank: per_rank.get(rank, 0) for rank in nccl} == nccl  # one call per NCCL kernel of its process
    # NCCL SendRecv kernels name no peer (and the NVTX ncclSend/ncclRecv ranges carry no payload):
    # every call is left unmatched, none paired by guess
    assert set(view["match"].to_list()) <= {"no_peer"} and (view["ranks"] == 1).all()
    assert job.collective_instances().height == 0


def test_summary_export_and_query_as_job(export: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    witness = kernels_per_process(export)
    pids = sorted(witness)
    assert run_cli(["summary", str(export), "--as-job", "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # the lines as words, wherever the terminal folds them
    assert "(distributed job: the processes of one Nsight Systems export)" in out
    assert f"ranks numbered by pid (the export names no rank): rank 0 = pid {pids[0]}, rank 1 = pid {pids[1]}" in out
    assert "rank pid steps" in out and f" 0 {pids[0]} 1 " in out and f" 1 {pids[1]} 1 " in out
    target = tmp_path / "ranks.csv"
    assert run_cli(["export", str(export), "--as-job", "--view", "ranks", "-o", str(target)]) == 0
    with target.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(int(r["rank"]), int(r["pid"])) for r in rows] == [(0, pids[0]), (1, pids[1])]
    capsys.readouterr()
    sql = "SELECT rank, sum(calls) AS n, sum(total_us) AS us FROM rank_kernels GROUP BY rank ORDER BY rank"
    answer = tmp_path / "answer.csv"
    assert run_cli(["query", str(export), "--as-job", "-q", sql, "-o", str(answer)]) == 0
    with answer.open() as fh:
        got = [(int(r["rank"]), int(r["n"]), round(float(r["us"]) * 1000)) for r in csv.DictReader(fh)]
    assert got == [(rank, witness[pid][0], witness[pid][1]) for rank, pid in enumerate(pids)]


def test_the_json_summary_gives_each_ranks_pid(export: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``summary X --as-job --format json``: each rank's row has its pid (sqlite3's processes, in
    order), and the document validates against docs/schemas/job-summary.schema.json."""
    import jsonschema

    pids = sorted(kernels_per_process(export))
    capsys.readouterr()
    assert run_cli(["summary", str(export), "--as-job", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(r["rank"], r["pid"]) for r in document["ranks"]] == [(0, pids[0]), (1, pids[1])]
    schema = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "job-summary.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


def test_a_reopen_reads_the_saved_job(export: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    first = open_process_job(str(export))
    ranks, kernels = first.ranks_view(), first.kernels()
    import profview.jobs.processes as processes

    def no_read(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a re-open read a rank")

    monkeypatch.setattr(processes.ExportProcesses, "load", no_read)
    again = open_process_job(str(export))
    assert again.ranks_view().equals(ranks) and again.kernels().equals(kernels)


def test_the_single_profile_summary_points_at_as_job(export: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["summary", str(export), "--no-cache", "-n", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"hint: 2 processes launched kernels: profview summary {export} --as-job shows them" in out


def test_what_is_no_job_of_processes_is_one_line(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    one = export_for_test("pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite", request)
    assert run_cli(["summary", str(one), "--as-job"]) == 2
    err = capsys.readouterr().err
    assert "--as-job: one process (pid 1230493) of this export launched GPU work" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert run_cli(["summary", str(one), "--no-cache", "-n", "1"]) == 0
    assert "--as-job" not in capsys.readouterr().out  # one process: no hint
    chrome = SAMPLES / "gloo_2rank" / "rank0.pt.trace.json.gz"
    assert run_cli(["summary", str(chrome), "--as-job"]) == 2
    assert "this is no export" in capsys.readouterr().err
    two = export_for_test("nsysai__mfu_2gpu_before.sqlite", request)
    assert run_cli(["summary", str(two), "--as-job", "-j", "2"]) == 2
    assert "--workers: the processes of one export are read here" in capsys.readouterr().err
    assert run_cli(["summary", str(two), str(two), "--as-job"]) == 2
    assert "name one" in capsys.readouterr().err


async def test_the_job_screen_at_80x24(request: pytest.FixtureRequest) -> None:
    """The job screen of an export's processes: each rank named with its pid, Enter opens that
    process alone (its kernels those of its pid), q comes back, the Collectives tab says why it is empty."""
    from profview.tui.job.app import JobApp
    from profview.tui.job.screen import JobScreen
    from profview.tui.main.screen import MainScreen

    path = export_for_test("nsysai__mfu_2gpu_before.sqlite", request)
    witness = kernels_per_process(path)
    job = open_process_job(str(path), use_cache=False)
    app = JobApp(job, path.name)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, JobScreen) and "pid 145" in screen_text(app), 30)
        screen = app.screen
        assert isinstance(screen, JobScreen)
        text = screen_text(app)
        assert "ranks numbered by pid" in text
        assert "rank 0 · pid 144" in text and "rank 1 · pid 145" in text
        await pilot.press("j", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), 60)
        assert isinstance(app.screen, MainScreen)
        profile = app.screen.profile
        assert profile.metadata["nsys"]["process"] == 145
        kernels = profile.events.filter(pl.col("kind") == "kernel")
        assert kernels.height == witness[145][0]
        assert f"{path.name} › rank 1 (pid 145)" in screen_text(app)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.screen is screen, 30)
        assert app.screen is screen
        await pilot.press("2")
        await wait_until(pilot, lambda: "calls left unmatched" in " ".join(screen_text(app).split()), 30)
        text = " ".join(screen_text(app).split())
        assert f"calls left unmatched: {witness[144][2] + witness[145][2]} point-to-point without a known peer" in text
