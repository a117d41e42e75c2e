"""``profview diff JOB_A JOB_B``: two distributed jobs compared.

Witnesses: the raw rank traces read with tarfile + json in the test (ProfilerStep durations,
kernel durations summed by name), ``statistics.median`` over each side's own ranks view, and
the two jobs' own views; the modified jobs are built here from the DLRM archive (one rank
removed; one rank's timeline stretched twice as long).
"""

from __future__ import annotations

import io
import json
import statistics
import tarfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from support import run_cli

from profview.analysis.diff.jobs import RANK_FIGURES, diff_rank_medians
from profview.diff.job_comparison import JobComparison, diff_kind, load_job_comparison

SAMPLES = Path(__file__).resolve().parent.parent.parent / "samples"
DLRM = SAMPLES / "param_dlrm_8rank_v100.tar.gz"
GLOO = SAMPLES / "gloo_2rank"
STRETCHED_RANK = 2
REMOVED_RANK = 3


@cache
def dlrm_members() -> dict[int, tuple[str, bytes]]:
    """rank → (member name, raw bytes) of the DLRM archive."""
    found = {}
    with tarfile.open(DLRM) as archive:
        for member in archive.getmembers():
            if member.isfile() and member.name.endswith(".json"):
                data = archive.extractfile(member).read()  # type: ignore[union-attr]
                found[json.loads(data)["distributedInfo"]["rank"]] = (member.name, data)
    return found


def stretch(doc: dict, factor: float) -> dict:
    """Every timestamp of the trace moved ``factor`` times as far from its first, every duration × factor."""
    events = doc["traceEvents"]
    first = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    for e in events:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = first + (e["ts"] - first) * factor
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = e["dur"] * factor
    return doc


def write_job(path: Path, docs: dict[int, tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in docs.values():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def raw_docs(docs: dict[int, tuple[str, bytes]]) -> dict[int, dict]:
    return {rank: json.loads(data) for rank, (_name, data) in docs.items()}


def raw_step_us(doc: dict) -> float:
    steps = [e["dur"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 1  # one ProfilerStep#10 per DLRM rank
    return float(steps[0])


def raw_kernel_totals(docs: dict[int, dict]) -> dict[str, tuple[int, float, int]]:
    """kernel name → (calls, total µs, ranks) over every rank, from the raw events."""
    calls: dict[str, int] = {}
    totals: dict[str, float] = {}
    ranks: dict[str, set[int]] = {}
    for rank, doc in docs.items():
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e.get("ph") == "X":
                calls[e["name"]] = calls.get(e["name"], 0) + 1
                totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
                ranks.setdefault(e["name"], set()).add(rank)
    return {name: (calls[name], totals[name], len(ranks[name])) for name in calls}


@pytest.fixture(scope="module")
def modified(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("jobs")
    members = dlrm_members()
    fewer = {r: m for r, m in members.items() if r != REMOVED_RANK}
    stretched = dict(members)
    name, data = members[STRETCHED_RANK]
    stretched[STRETCHED_RANK] = (name, json.dumps(stretch(json.loads(data), 2.0)).encode())
    return {
        "fewer": write_job(folder / "dlrm_7_of_8.tar.gz", fewer),
        "stretched": write_job(folder / "dlrm_rank2_stretched.tar.gz", stretched),
    }


@pytest.fixture(scope="module")
def same() -> Iterator[JobComparison]:
    with load_job_comparison(str(DLRM), str(DLRM), workers=2, use_cache=False) as comparison:
        yield comparison


@pytest.fixture(scope="module")
def stretched(modified: dict[str, Path]) -> Iterator[JobComparison]:
    with load_job_comparison(str(DLRM), str(modified["stretched"]), workers=2, use_cache=False) as comparison:
        yield comparison


@pytest.fixture(scope="module")
def fewer(modified: dict[str, Path]) -> Iterator[JobComparison]:
    with load_job_comparison(str(DLRM), str(modified["fewer"]), workers=2, use_cache=False) as comparison:
        yield comparison


# -- the DLRM job against itself ---------------------------------------------------------------


def test_a_job_against_itself_changes_nothing(same: JobComparison) -> None:
    for name in ("ranks", "stragglers", "kernels"):
        frame = same.view(name)
        assert frame.height > 0
        assert frame["delta_us"].to_list() == [0.0] * frame.height, name
        assert set(frame["status"]) == {"unchanged"}, name
    kernels = same.kernels()
    raw = raw_kernel_totals(raw_docs(dlrm_members()))
    assert kernels.height == len(raw) == 76
    for row in kernels.iter_rows(named=True):
        calls, total, ranks = raw[row["name"]]
        assert (row["calls_before"], row["calls_after"]) == (calls, calls)
        assert row["total_us_before"] == pytest.approx(total) and row["total_us_after"] == pytest.approx(total)
        assert row["ranks_before"] == row["ranks_after"] == ranks


def test_the_medians_are_the_raw_step_medians_and_each_ranks_views(same: JobComparison) -> None:
    ranks = same.ranks()
    docs = raw_docs(dlrm_members())
    step = ranks.filter(pl.col("figure") == "step_us").row(0, named=True)
    raw_median = statistics.median(raw_step_us(d) for d in docs.values())
    assert step["median_us_before"] == step["median_us_after"] == pytest.approx(raw_median) == 16126.0
    own = same.before.ranks_view()
    for row in ranks.iter_rows(named=True):
        assert row["median_us_before"] == pytest.approx(statistics.median(own[row["figure"]].to_list()))
        assert row["ranks_before"] == row["ranks_after"] == 8
    assert ranks["figure"].to_list() == [c for c, _ in RANK_FIGURES]


def test_the_straggler_tables_are_both_ranks_views(same: JobComparison) -> None:
    table = same.stragglers()
    own = same.before.ranks_view()
    assert table["rank"].to_list() == own["rank"].to_list() == list(range(8))
    assert table["wait_us_before"].to_list() == own["wait_us"].to_list()
    # the 3 AllReduces alone are matched (tests/jobs/test_jobs.py)
    assert table.filter(pl.col("straggler_before"))["rank"].to_list() == same.before.stragglers() == [5]
    assert table.filter(pl.col("straggler_after"))["rank"].to_list() == [5]


# -- one rank stretched twice as long -----------------------------------------------------------


def test_a_stretched_rank_moves_the_step_median_by_the_raw_figure(stretched: JobComparison) -> None:
    docs = raw_docs(dlrm_members())
    before = statistics.median(raw_step_us(d) for d in docs.values())
    after = statistics.median(
        raw_step_us(d) * (2.0 if rank == STRETCHED_RANK else 1.0) for rank, d in docs.items()
    )
    assert (before, after) == (16126.0, 17888.0)  # rank 2's 13.017 ms step becomes 26.034 ms: the middle moves up
    step = stretched.ranks().filter(pl.col("figure") == "step_us").row(0, named=True)
    assert step["median_us_before"] == pytest.approx(before)
    assert step["median_us_after"] == pytest.approx(after)
    assert step["delta_us"] == pytest.approx(after - before)
    assert step["delta_pct"] == pytest.approx(100 * (after - before) / before)
    assert step["status"] == "increased"
    assert stretched.after.ranks_view().filter(pl.col("rank") == STRETCHED_RANK)["step_us"][0] == 2 * 13017.0
    # within a 20% tolerance the same change is "unchanged"
    loose = diff_rank_medians(stretched.before.ranks_view(), stretched.after.ranks_view(), tolerance_pct=20.0)
    assert loose.filter(pl.col("figure") == "step_us")["status"][0] == "unchanged"


def test_a_stretched_rank_doubles_its_share_of_every_kernel(stretched: JobComparison) -> None:
    docs = raw_docs(dlrm_members())
    doubled = dict(docs)
    doubled[STRETCHED_RANK] = stretch(json.loads(dlrm_members()[STRETCHED_RANK][1]), 2.0)
    raw_before, raw_after = raw_kernel_totals(docs), raw_kernel_totals(doubled)
    kernels = stretched.kernels()
    assert kernels.height == len(raw_before)
    for row in kernels.iter_rows(named=True):
        assert row["total_us_before"] == pytest.approx(raw_before[row["name"]][1])
        assert row["total_us_after"] == pytest.approx(raw_after[row["name"]][1])
        assert row["calls_before"] == row["calls_after"] == raw_before[row["name"]][0]
        assert row["delta_us"] == pytest.approx(row["total_us_after"] - row["total_us_before"])
    assert kernels["delta_us"].min() >= 0.0
    # rows come biggest change first
    assert kernels["delta_us"].abs().to_list() == sorted(kernels["delta_us"].abs().to_list(), reverse=True)


def test_stragglers_after_stretching_are_the_after_jobs_own(stretched: JobComparison) -> None:
    table = stretched.stragglers()
    own = stretched.after.ranks_view()
    assert table["wait_us_after"].to_list() == own["wait_us"].fill_null(0).to_list()
    assert table.filter(pl.col("straggler_after"))["rank"].to_list() == stretched.after.stragglers()
    lowest = min(own["wait_us"].drop_nulls().to_list())
    assert stretched.after.stragglers() == [r for r, w in zip(own["rank"], own["wait_us"], strict=True) if w == lowest]


# -- one rank removed ----------------------------------------------------------------------------


def test_a_removed_rank_is_said_and_left_out_of_the_medians(fewer: JobComparison) -> None:
    assert fewer.ranks_line("before") == "8 of 8 ranks"
    assert fewer.ranks_line("after") == f"7 of 8 ranks (missing: {REMOVED_RANK})"
    assert "7 of 8 ranks" in fewer.header("after")
    docs = raw_docs(dlrm_members())
    after = statistics.median(raw_step_us(d) for r, d in docs.items() if r != REMOVED_RANK)
    assert after == 14455.0  # 7 ranks: the middle one, rank 0
    ranks = fewer.ranks()
    step = ranks.filter(pl.col("figure") == "step_us").row(0, named=True)
    assert (step["ranks_before"], step["ranks_after"]) == (8, 7)
    assert step["median_us_after"] == pytest.approx(after)
    own = fewer.after.ranks_view()
    for row in ranks.iter_rows(named=True):
        values = own[row["figure"]].drop_nulls().to_list()
        assert row["median_us_after"] == pytest.approx(statistics.median(values))
    table = fewer.stragglers()
    gone = table.filter(pl.col("rank") == REMOVED_RANK).row(0, named=True)
    assert gone["status"] == "removed" and gone["straggler_after"] is None and gone["wait_us_after"] == 0.0
    assert table.filter(pl.col("status") == "removed").height == 1


def test_a_removed_rank_takes_its_kernels_out_of_the_totals(fewer: JobComparison) -> None:
    docs = raw_docs(dlrm_members())
    raw_after = raw_kernel_totals({r: d for r, d in docs.items() if r != REMOVED_RANK})
    kernels = fewer.kernels()
    for row in kernels.iter_rows(named=True):
        calls, total, ranks = raw_after.get(row["name"], (0, 0.0, 0))
        assert row["calls_after"] == calls
        assert row["total_us_after"] == pytest.approx(total)
        assert row["ranks_after"] == ranks


# -- another job, mixed inputs, the CLI -------------------------------------------------------------


def test_gloo_against_dlrm_keeps_every_rank(tmp_path: Path) -> None:
    with load_job_comparison(str(GLOO), str(DLRM), workers=2, use_cache=False) as comparison:
        table = comparison.stragglers()
        assert table["rank"].to_list() == list(range(8))
        assert table.filter(pl.col("status") == "added")["rank"].to_list() == list(range(2, 8))
        assert comparison.before.stragglers() == [1]  # gloo: rank 0 waits for rank 1 (tests/test_jobs.py)
        assert table.filter(pl.col("straggler_before"))["rank"].to_list() == [1]
        assert table.filter(pl.col("straggler_after"))["rank"].to_list() == [5]
        assert comparison.header("before").endswith("2 of 2 ranks · straggler rank 1")
        kernels = comparison.kernels()
        assert set(kernels["status"]) == {"added"}  # gloo runs on the CPU: every DLRM kernel is new


def test_a_job_and_a_trace_is_a_one_line_error(capsys: pytest.CaptureFixture) -> None:
    trace = str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")
    assert diff_kind(str(DLRM), str(GLOO)) == "jobs" and diff_kind(trace, trace) == "profiles"
    for args in ([str(DLRM), trace], [trace, str(GLOO)]):
        assert run_cli(["diff", *args, "--summary"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot compare a job" in err and "single profile" in err


def run(args: list[str]) -> int:
    return run_cli(args)


def test_cli_summary_says_the_missing_rank_and_the_stragglers(
    modified: dict[str, Path], capsys: pytest.CaptureFixture
) -> None:
    code = run(["diff", str(DLRM), str(modified["fewer"]), "--summary", "--no-cache", "-j", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    flat = " ".join(out.split())  # Rich wraps the header at 80 columns
    assert "AFTER" in flat and "7 of 8 ranks (missing: 3)" in flat and "7 of 8 ranks (missing: 3)" in err
    assert "Median across ranks" in out and "Stragglers" in out and "Kernels across ranks" in out
    gone = [line.split() for line in out.splitlines() if line.startswith("▼ gone")]
    assert gone == [["▼", "gone", "3", "1.602", "ms", "-", "-1.602", "ms", "-100.0%", "0→0"]]
    both = [line.split()[1] for line in out.splitlines() if line.rstrip().endswith("both")]
    assert both == ["5"]  # rank 5 is the straggler on both sides (of the 3 matched AllReduces)


def test_cli_export_applies_filter_sort_top(modified: dict[str, Path], tmp_path: Path, capsys) -> None:
    target = tmp_path / "k.csv"
    args = ["diff", str(DLRM), str(modified["stretched"]), "--view", "kernels", "-o", str(target), "--no-cache"]
    assert run([*args, "--filter", "sgemm", "--sort", "total_us_after", "--asc", "--top", "2", "-j", "2"]) == 0
    capsys.readouterr()
    frame = pl.read_csv(target)
    docs = raw_docs(dlrm_members())
    docs[STRETCHED_RANK] = stretch(docs[STRETCHED_RANK], 2.0)
    raw = raw_kernel_totals(docs)
    sgemm = sorted((t, n) for n, (_c, t, _r) in raw.items() if "sgemm" in n.lower())
    assert len(sgemm) > 2 and frame.height == 2
    assert frame["name"].to_list() == [n for _t, n in sgemm[:2]]
    assert frame["total_us_after"].to_list() == pytest.approx([t for t, _n in sgemm[:2]])
    for view, rows in (("ranks", len(RANK_FIGURES)), ("stragglers", 8)):
        out = tmp_path / f"{view}.parquet"
        assert run(["diff", str(DLRM), str(DLRM), "--view", view, "-o", str(out), "-j", "2"]) == 0
        assert pl.read_parquet(out).height == rows


def test_cli_jobs_refuse_trace_options_in_one_line(capsys: pytest.CaptureFixture) -> None:
    for extra, said in ((["--view", "ranks"], "--view needs -o OUT"), (["--per-step", "--summary"], "--per-step"),
                        (["--view", "ops", "-o", "x.csv"], "no 'ops' diff view")):
        assert run(["diff", str(GLOO), str(GLOO), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, err
