"""A directory of per-rank Nsight Systems exports (and of rocprofv3 documents) opened as a job, and
two exports (or two such directories) compared as jobs.  Every figure is counted again here with
plain ``sqlite3`` (or ``json`` for rocprofv3), never with profview; the exports are copied into
``tmp_path`` (../shared is never written)."""

from __future__ import annotations

import csv
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parsers" / "nsys"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "parsers" / "rocprof"))
from nsys_witness import connect, export_for_test
from pilot import screen_text, wait_until
from rocprof_witness import SAMPLE, kernel_witness
from support import run_cli, sample

from profview.diff.job_comparison import load_job_comparison
from profview.jobs.job import open_job

#: Exports of one process each (two of them) and of two processes (one), none naming a rank.
DIRECTORY = (
    "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
    "nsysai__mfu_2gpu_before.sqlite",
    "flameox__nsight-2025.5.2.sqlite",
    "nsysai__mock.sqlite",
)
BEFORE, AFTER = "nsysai__mfu_2gpu_before.sqlite", "nsysai__mfu_2gpu_after.sqlite"


def kernels_of(path: Path) -> tuple[int, int]:
    """The export's kernels and their ns, all processes together."""
    with connect(path) as db:
        count, ns = db.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    return int(count), int(ns)


def pids_of(path: Path) -> list[int]:
    """The processes (pid order) that launched kernels in the export."""
    with connect(path) as db:
        rows = db.execute(
            "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1"
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def calls_by_name(path: Path, pid: int | None = None) -> dict[str, int]:
    """Kernel calls per demangled name (of process ``pid`` alone, when given)."""
    where = "" if pid is None else f"WHERE ((k.globalPid >> 24) & 16777215) = {int(pid)}"
    with connect(path) as db:
        rows = db.execute(
            "SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
            f"{where} GROUP BY s.value"
        ).fetchall()
    return {str(name): int(n) for name, n in rows}


def copied(request: pytest.FixtureRequest, folder: Path, names: dict[str, str]) -> Path:
    """``folder`` holding a copy of each shared export (``{file name: export}``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, export in names.items():
        shutil.copyfile(export_for_test(export, request), folder / name)
    return folder


@pytest.fixture
def export_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return copied(request, tmp_path / "nsys_job", {name: name for name in DIRECTORY})


def test_a_directory_of_exports_is_a_job_of_one_rank_per_file(export_dir: Path) -> None:
    files = sorted(export_dir.iterdir(), key=lambda p: p.name)  # no rank in the names: file-name order
    with open_job(str(export_dir), workers=1, use_cache=False) as job:
        assert job.ranks == list(range(len(DIRECTORY))) and job.world_size == len(DIRECTORY)
        expected = ", ".join(f"rank {i} = {p.name}" for i, p in enumerate(files))
        numbered = "ranks numbered by file name order (no rank in the files' names or contents)"
        assert job.notes[0] == f"{numbered}: {expected}"
        for rank, path in enumerate(files):
            count, ns = kernels_of(path)
            kernels = job.summary(rank).kernels
            assert int(kernels["calls"].sum()) == count, path.name
            assert round(float(kernels["total_us"].sum()) * 1000) == ns, path.name
            assert job.summary(rank).path == str(path)
        assert int(job.kernels()["calls"].sum()) == sum(kernels_of(p)[0] for p in files)
        two = files.index(export_dir / BEFORE)  # the export of two processes: one rank, said so
        pids = pids_of(export_dir / BEFORE)
        assert len(pids) == 2
        warned = [w for w in job.summary(two).warnings if "processes of this export launched kernels" in w]
        assert warned == [
            f"2 processes of this export launched kernels (pids {pids[0]}, {pids[1]}): read as one rank, their work "
            f"together; `profview {export_dir / BEFORE} --as-job` makes each process a rank"
        ]
        assert all(not any("processes of this" in w for w in job.summary(r).warnings) for r in job.ranks if r != two)


def test_rank_numbers_in_the_file_names_are_used(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    folder = copied(request, tmp_path / "named", {"rank1.sqlite": "nsysai__mock.sqlite",
                                                  "rank0.sqlite": "pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"})
    with open_job(str(folder), workers=1, use_cache=False) as job:
        assert job.ranks == [0, 1] and job.notes == []  # named: nothing numbered by place
        for rank in (0, 1):
            assert int(job.summary(rank).kernels["calls"].sum()) == kernels_of(folder / f"rank{rank}.sqlite")[0]


def test_a_cut_export_leaves_its_rank_missing(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As a bad rank trace in a Kineto job folder: the job opens without it (its rank said missing,
    the ranks after it not moved), one warning names it; ``--strict`` fails with one line."""
    folder = copied(request, tmp_path / "cut", {"a.sqlite": "nsysai__mock.sqlite",
                                                "c.sqlite": "flameox__nsight-2025.5.2.sqlite"})
    whole = (folder / "a.sqlite").read_bytes()
    (folder / "b.sqlite").write_bytes(whole[: len(whole) // 4])  # an export cut short
    with open_job(str(folder), workers=1, use_cache=False) as job:
        assert job.ranks == [0, 2] and job.world_size == 3
        assert job.notes[0] == "2 of 3 ranks (missing: 1)"
        assert job.notes[1] == ("ranks numbered by file name order (no rank in the files' names or contents): "
                                "rank 0 = a.sqlite, rank 1 = b.sqlite (unreadable), rank 2 = c.sqlite")
        assert job.notes[2].startswith("rank 1 unreadable: b.sqlite: ")
        assert int(job.summary(2).kernels["calls"].sum()) == kernels_of(folder / "c.sqlite")[0]
    capsys.readouterr()
    assert run_cli(["summary", str(folder), "--no-cache"]) == 0
    err = capsys.readouterr().err
    left_out = [line for line in err.splitlines() if "left out of the job" in line]
    assert len(left_out) == 1 and str(folder / "b.sqlite") in left_out[0] and "Traceback" not in err
    assert run_cli(["summary", str(folder), "--no-cache", "--strict"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(folder / "b.sqlite") in err and "Traceback" not in err


def test_raw_reports_in_the_folder_are_skipped_with_how_to_convert(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request.getfixturevalue("shared_dir")
    report = Path(export_for_test("nsysai__mock.sqlite", request)).parent / "halfemptydrum__myrun.nsys-rep"
    folder = copied(request, tmp_path / "with_report", {"run.sqlite": "nsysai__mock.sqlite"})
    shutil.copyfile(report, folder / "run.nsys-rep")
    with open_job(str(folder), workers=1, use_cache=False) as job:
        assert job.ranks == [0] and job.failures == []
        assert any(n.startswith("skipped 1 raw Nsight Systems report(s) (.nsys-rep)") and "run.nsys-rep" in n
                   and "nsys export --type sqlite" in n for n in job.notes)
    (folder / "run.sqlite").unlink()
    capsys.readouterr()
    assert run_cli(["summary", str(folder), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no trace files" in err and "run.nsys-rep" in err


def test_a_directory_of_rocprofv3_documents_is_a_job(tmp_path: Path) -> None:
    folder = tmp_path / "rocprof_job"
    folder.mkdir()
    for name in ("node_a.json.gz", "node_b.json.gz"):
        shutil.copyfile(sample(SAMPLE), folder / name)
    witness = kernel_witness(sample(SAMPLE))
    with open_job(str(folder), workers=1, use_cache=False) as job:
        assert job.ranks == [0, 1]
        assert job.notes[0].endswith("rank 0 = node_a.json.gz, rank 1 = node_b.json.gz")
        for rank in job.ranks:
            kernels = job.summary(rank).kernels
            assert int(kernels["calls"].sum()) == sum(n for n, _ns, _lo, _hi in witness.values())
            assert round(float(kernels["total_us"].sum()) * 1000) == sum(ns for _n, ns, _lo, _hi in witness.values())


def test_summary_of_the_directory_says_how_ranks_are_numbered(
    export_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert run_cli(["summary", str(export_dir), "--no-cache"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ranks numbered by file name order (no rank in the files' names or contents): rank 0 = " in out
    assert f"{len(DIRECTORY)} of {len(DIRECTORY)} ranks" in out


async def test_the_job_screen_of_a_directory_of_exports(export_dir: Path) -> None:
    """The job screen's header says the ranks are numbered by file name; Enter on a rank opens that file."""
    from profview.tui.job.app import JobApp
    from profview.tui.job.screen import JobScreen
    from profview.tui.main.screen import MainScreen

    job = open_job(str(export_dir), workers=1, use_cache=False)
    files = sorted(export_dir.iterdir(), key=lambda p: p.name)
    app = JobApp(job, export_dir.name)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, JobScreen), 30)
        await wait_until(pilot, lambda: "ranks numbered by file" in screen_text(app), 30)
        await pilot.press("j", "enter")  # rank 1
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), 60)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.profile.path == str(files[1])


def test_diff_as_job_compares_the_processes_of_two_exports(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = export_for_test(BEFORE, request), export_for_test(AFTER, request)
    with load_job_comparison(str(before), str(after), use_cache=False, as_job=True) as comparison:
        for which, path in (("before", before), ("after", after)):
            job = comparison.side(which)
            pids = pids_of(path)
            assert job.ranks == [0, 1] and job.ranks_view()["pid"].to_list() == pids
        for rank in (0, 1):  # each rank's kernels, before and after: its process's, by sqlite3
            per_rank = comparison.rank_kernels(rank)
            want_b = calls_by_name(before, pids_of(before)[rank])
            want_a = calls_by_name(after, pids_of(after)[rank])
            got_b = {n: c for n, c in zip(per_rank["name"], per_rank["calls_before"], strict=True) if c}
            got_a = {n: c for n, c in zip(per_rank["name"], per_rank["calls_after"], strict=True) if c}
            assert got_b == want_b and got_a == want_a
    out = tmp_path / "kernels.csv"
    capsys.readouterr()
    command = ["diff", "--as-job", str(before), str(after), "--view", "kernels", "-o", str(out), "--no-cache"]
    assert run_cli(command) == 0
    err = capsys.readouterr().err
    assert "BEFORE" in err and "ranks numbered by pid" in err
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    want_b, want_a = calls_by_name(before), calls_by_name(after)
    assert {r["name"]: int(r["calls_before"]) for r in rows if int(r["calls_before"])} == want_b
    assert {r["name"]: int(r["calls_after"]) for r in rows if int(r["calls_after"])} == want_a
    per_pid = {p: calls_by_name(before, p) for p in pids_of(before)}
    ranks_b = {r["name"]: int(r["ranks_before"]) for r in rows}
    assert all(ranks_b[name] == sum(name in c for c in per_pid.values()) for name in want_b)
    assert run_cli(["diff", "--as-job", str(before), str(after), "--summary", "--no-cache"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Kernels across ranks that moved most" in text


def test_diff_as_job_keeps_a_wait_that_cannot_be_measured_unknown(request: pytest.FixtureRequest) -> None:
    """The mfu pair's SendRecv calls name no peer, so no collective is matched across ranks and no
    rank's wait is measured: the stragglers diff says unknown (null, ``n/a``), not waits of 0
    reported as unchanged."""
    before, after = export_for_test(BEFORE, request), export_for_test(AFTER, request)
    with load_job_comparison(str(before), str(after), use_cache=False, as_job=True) as comparison:
        for which in ("before", "after"):
            assert comparison.side(which).ranks_view()["wait_us"].null_count() == 2
        table = comparison.stragglers()
    assert table["rank"].to_list() == [0, 1]
    assert table["wait_us_before"].null_count() == table["wait_us_after"].null_count() == 2
    assert table["delta_us"].null_count() == 2 and table["status"].to_list() == ["n/a", "n/a"]


def test_diff_as_job_refuses_what_it_cannot_do(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = export_for_test(BEFORE, request), export_for_test(AFTER, request)
    one = export_for_test("nsysai__mock.sqlite", request)
    for args, said in (
        (["--fail-if", "kernels.total_us > +5%"], "--fail-if: not with --as-job"),
        (["--per-step"], "--per-step: not with --as-job"),
        (["-j", "2", "--summary"], "--workers: the processes of one export are read here"),
    ):
        capsys.readouterr()
        assert run_cli(["diff", "--as-job", str(before), str(after), *args]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert run_cli(["diff", "--as-job", str(before), str(one), "--summary", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "one process" in err and str(one) in err and "Traceback" not in err


def test_diff_of_two_directories_of_exports(
    request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = copied(request, tmp_path / "before", {"rank0.sqlite": BEFORE, "rank1.sqlite": "nsysai__mock.sqlite"})
    second = copied(request, tmp_path / "after", {"rank0.sqlite": AFTER, "rank1.sqlite": "nsysai__mock.sqlite"})
    out = tmp_path / "kernels.csv"
    capsys.readouterr()
    assert run_cli(["diff", str(first), str(second), "--view", "kernels", "-o", str(out), "--no-cache", "-j", "1"]) == 0
    with out.open() as fh:
        rows = list(csv.DictReader(fh))

    def summed(folder: Path) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for path in folder.iterdir():
            for name, n in calls_by_name(path).items():
                total[name] += n
        return dict(total)

    assert {r["name"]: int(r["calls_before"]) for r in rows if int(r["calls_before"])} == summed(first)
    assert {r["name"]: int(r["calls_after"]) for r in rows if int(r["calls_after"])} == summed(second)
    with load_job_comparison(str(first), str(second), use_cache=False, workers=1) as comparison:
        mock = comparison.rank_kernels(1)  # the same export on both sides: every kernel unchanged
        assert set(mock["status"].to_list()) == {"unchanged"}
        assert int(mock["calls_before"].sum()) == kernels_of(first / "rank1.sqlite")[0]


def test_a_folder_of_nsys_table_files_is_named_with_the_conversion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder from ``nsys export --type parquetdir`` (one file per table) is not read: it is named
    in one line with the SQLite export to make instead (it said only "no trace files")."""
    for name in ("StringIds.parquet", "CUPTI_ACTIVITY_KIND_KERNEL.parquet", "notes.txt"):
        (tmp_path / name).write_bytes(b"PAR1")
    for command in (["summary", str(tmp_path)], ["export", str(tmp_path), "-o", str(tmp_path / "k.csv")]):
        assert run_cli(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "nsys export --type parquetdir" in err[0] and "--type sqlite" in err[0], err
    assert not (tmp_path / "k.csv").exists()
    (tmp_path / "StringIds.parquet").unlink()
    (tmp_path / "CUPTI_ACTIVITY_KIND_KERNEL.parquet").unlink()
    assert run_cli(["summary", str(tmp_path)]) == 2
    assert "no trace files" in capsys.readouterr().err


def test_a_rank_with_no_matched_collective_has_unknown_step_waits(request: pytest.FixtureRequest) -> None:
    """The mfu export's processes as a job: no SendRecv names its peer, so no rank's wait at
    collectives is measured; each step's wait is null and the grid marks it ``?``, not ``0``."""
    from profview.tui.job.grid import grid_text
    from profview.tui.job.screen import grid_steps

    before = export_for_test(BEFORE, request)
    from profview.jobs.process_job import open_process_job

    job = open_process_job(str(before), use_cache=False)
    waits = job.step_waits()
    assert waits.height >= 2 and waits["wait_us"].null_count() == waits.height
    text = grid_text(grid_steps(job), job.stragglers(), "wait_us", 80).plain.splitlines()
    assert all("?" in line and "0.000 us" not in line for line in text[1:3])
    assert text[-1].endswith("? unknown")
