"""Distributed jobs: rank traces opened together, checked against the raw events of each rank.

Witnesses: every figure here is recomputed in the test from the traces read with the standard
library (json, tarfile), by a plain-Python sweep; HTA's own per-rank overlap on the DLRM job
(``benchmarks/hta_overlap.py``, run in a separate venv) gave 4.50, 2.47, 7.88, 3.31, 0.56, 0.64,
7.56, 9.51 %.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
import zipfile
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES, run_cli

import profview
from profview.errors import ProfviewError
from profview.jobs import job as job_module
from profview.jobs.inputs import find_inputs, is_job, rank_from_name
from profview.jobs.job import Job, open_job
from profview.report.job_summary import straggler_line

DLRM = SAMPLES / "param_dlrm_8rank_v100.tar.gz"
GLOO = SAMPLES / "gloo_2rank"
HTA_PAIR = [str(SAMPLES / "hta_sampled_rank-0.json.gz"), str(SAMPLES / "hta_sampled_rank-1.json.gz")]


@cache
def dlrm_raw() -> dict[int, dict]:
    """rank → the trace document, read with tarfile + json."""
    docs = {}
    with tarfile.open(DLRM) as archive:
        for member in archive.getmembers():
            if member.name.endswith(".json"):
                doc = json.load(archive.extractfile(member))  # type: ignore[arg-type]
                docs[doc["distributedInfo"]["rank"]] = doc
    return docs


def nccl_kernels(doc: dict) -> list[dict]:
    events = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"].lower()]
    return sorted(events, key=lambda e: e["ts"])


@pytest.fixture(scope="module")
def dlrm() -> Job:
    job = open_job(DLRM, workers=2, use_cache=False)
    yield job
    job.close()


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def overlap_length(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


# -- inputs ------------------------------------------------------------------------------------


def test_the_dlrm_archive_opens_as_eight_ranks_and_its_folder_is_removed(dlrm: Job) -> None:
    assert dlrm.ranks == sorted(dlrm_raw()) == list(range(8))
    assert dlrm.world_size == 8 and dlrm.notes == []
    folder = dlrm.inputs.temp_dir
    assert folder and os.path.isdir(folder)
    job = open_job(DLRM, workers=1, use_cache=False)
    extracted = job.inputs.temp_dir
    job.close()
    assert not os.path.exists(extracted)


def test_an_archive_job_never_closed_leaves_no_extracted_traces() -> None:
    """A ``profview.load(ARCHIVE)`` that is dropped, or still open when Python exits, removes its
    extraction folder (it stayed in the temporary folder until the next profview swept it)."""
    import gc
    import subprocess
    import sys

    inputs = find_inputs([str(DLRM)])
    dropped = inputs.temp_dir
    assert dropped and os.path.isdir(dropped)
    del inputs
    gc.collect()
    assert not os.path.exists(dropped)
    code = "import sys, profview; j = profview.load(sys.argv[1], workers=1, use_cache=False); print(j.inputs.temp_dir)"
    done = subprocess.run([sys.executable, "-c", code, str(DLRM)], capture_output=True, text=True, check=True)
    at_exit = done.stdout.strip()
    assert at_exit.startswith(os.path.join(os.path.dirname(dropped), "profview-job-"))
    assert not os.path.exists(at_exit)


def test_directory_glob_files_and_zip_name_the_same_job(tmp_path: Path) -> None:
    names = sorted(p.name for p in GLOO.glob("*.json.gz"))
    with zipfile.ZipFile(tmp_path / "job.zip", "w") as z:
        for name in names:
            z.write(GLOO / name, f"traces/{name}")
    assert is_job([str(GLOO)]) and is_job([str(tmp_path / "job.zip")]) and is_job([str(GLOO / "rank*.json.gz")])
    assert not is_job([str(GLOO / names[0])])
    for args in (
        [str(GLOO)],
        [str(GLOO / "rank*.json.gz")],
        [str(GLOO / n) for n in names],
        [str(tmp_path / "job.zip")],
    ):
        found = find_inputs(args)
        assert [os.path.basename(p)[-len(n) :] for p, n in zip(found.paths, names, strict=True)] == names
        found.cleanup()


def test_rank_from_file_names() -> None:
    assert [rank_from_name(n) for n in ("a/rank-3.json", "rank3.json.gz", "x_worker12_step_4.json", "t.json")] == [
        3,
        3,
        12,
        None,
    ]


def _write(path: Path, doc: dict) -> str:
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return str(path)


def _gloo(rank: int) -> dict:
    with gzip.open(GLOO / f"rank{rank}.pt.trace.json.gz") as fh:
        return json.load(fh)


def test_duplicate_ranks_and_mixed_jobs_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a = _write(tmp_path / "a.json.gz", _gloo(0))
    b = _write(tmp_path / "b.json.gz", _gloo(0))
    with pytest.raises(ProfviewError, match=r"two traces of rank 0: a\.json\.gz, b\.json\.gz"):
        open_job([a, b], workers=1, use_cache=False)
    other = _gloo(1)
    other["distributedInfo"]["world_size"] = 4
    c = _write(tmp_path / "c.json.gz", other)
    with pytest.raises(ProfviewError, match=r"world sizes disagree \(2 in a\.json\.gz; 4 in c\.json\.gz\)"):
        open_job([a, c], workers=1, use_cache=False)
    assert run_cli(["summary", a, c]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "world sizes disagree" in err


def test_an_archive_without_traces_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with tarfile.open(tmp_path / "empty.tar.gz", "w:gz") as archive:
        data = b"not a trace"
        info = tarfile.TarInfo("notes.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    assert run_cli(["summary", str(tmp_path / "empty.tar.gz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no trace files" in err
    assert not [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("profview-job-*") if not any(p.iterdir())]


def test_ranks_missing_from_a_job_are_said() -> None:
    job = open_job(HTA_PAIR, workers=1, use_cache=False)
    assert job.ranks == [0, 1] and job.world_size == 128
    assert job.notes[0].startswith("2 of 128 ranks (missing: 2, 3,")


def test_a_rank_from_the_file_name_when_the_trace_has_none(tmp_path: Path) -> None:
    for rank in (0, 1):
        doc = _gloo(rank)
        del doc["distributedInfo"]
        _write(tmp_path / f"worker{rank}.json.gz", doc)
    job = open_job(tmp_path, workers=1, use_cache=False)
    assert job.ranks == [0, 1]
    # each rank is the trace the name says: its gloo:all_reduce ranges are those of that file
    for rank in (0, 1):
        raw = [e["ts"] for e in _gloo(rank)["traceEvents"] if e.get("name") == "gloo:all_reduce"]
        assert sorted(job.summary(rank).calls["start"].to_list()) == pytest.approx(sorted(raw))


# -- ranks, collectives, straggler ----------------------------------------------------------------


def test_dlrm_overlap_per_rank_equals_the_raw_sweep_and_hta(dlrm: Job) -> None:
    ranks = dlrm.ranks_view()
    hta = [4.50, 2.47, 7.88, 3.31, 0.56, 0.64, 7.56, 9.51]  # HTA 0.5 get_comm_comp_overlap, per rank
    for rank, doc in dlrm_raw().items():
        kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
        comm = union([(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" in e["name"].lower()])
        compute = union([(e["ts"], e["ts"] + e["dur"]) for e in kernels if "nccl" not in e["name"].lower()])
        raw_pct = 100 * overlap_length(comm, compute) / sum(b - a for a, b in comm)
        got = ranks.filter(pl.col("rank") == rank)["overlap_pct"][0]
        assert got == pytest.approx(raw_pct, abs=0.01)
        assert got == pytest.approx(hta[rank], abs=1.0)


def test_dlrm_collectives_waits_and_straggler_against_the_raw_kernels(dlrm: Job) -> None:
    """The trace names no peer of its SendRecvs and no Seq: the SendRecvs are left unmatched and
    counted; the AllReduces, in one order on every rank, are matched by that order."""
    from profview.analysis.distributed.collectives import anchor_count, match_counts

    raw = {rank: nccl_kernels(doc) for rank, doc in dlrm_raw().items()}
    assert {len(k) for k in raw.values()} == {8}
    reduces = {r: [k for k in kernels if "AllReduce" in k["name"]] for r, kernels in raw.items()}
    sends = {r: [k for k in kernels if "SendRecv" in k["name"]] for r, kernels in raw.items()}
    assert {len(k) for k in reduces.values()} == {3} and {len(k) for k in sends.values()} == {5}
    view = dlrm.collectives()
    assert view.height == 64 and not view["mismatch"].any()
    assert match_counts(view) == {"no_peer": 5 * 8, "stream_order": 3 * 8}
    matched = view.filter(pl.col("ranks") > 1)
    assert set(matched["name"]) == {"AllReduce"} and matched["collective"].n_unique() == 3
    assert view.filter(pl.col("name") == "SendRecv")["wait_us"].null_count() == 40
    assert anchor_count(view) == 3
    # waits: latest start − own start, raw (the estimated offsets are ≤ 3 µs on this one-host job)
    offsets = dlrm.clock_offsets()
    assert max(abs(v) for v in offsets.values()) <= 3.0
    last = dict.fromkeys(raw, 0)
    wait = dict.fromkeys(raw, 0.0)
    for i in range(3):
        starts = {r: k[i]["ts"] - offsets[r] for r, k in reduces.items()}
        latest = max(starts.values())
        last[max(starts, key=starts.get)] += 1
        for r, s in starts.items():
            assert latest - s <= reduces[r][i]["dur"] + 1.0  # no wait longer than the rank's call
            wait[r] += latest - s
    ranks = dlrm.ranks_view()
    assert ranks["last_arrivals"].to_list() == [last[r] for r in range(8)]
    assert ranks["wait_us"].to_list() == pytest.approx([wait[r] for r in range(8)], abs=0.01)
    assert dlrm.stragglers() == [min(wait, key=wait.get)] == [5]


def test_dlrm_ranks_view_means_are_the_steps_views(dlrm: Job) -> None:
    """``communication_us`` is the union of the rank's NCCL kernels in its step (the raw JSON's
    union: 5.798 ms on rank 0), the steps view's Communication category keeps its own column, and
    exposed communication is never above the communication."""
    ranks = dlrm.ranks_view()
    steps = dlrm.steps()
    assert steps["rank"].unique().sort().to_list() == list(range(8))
    for rank, doc in dlrm_raw().items():
        own = steps.filter(pl.col("rank") == rank)
        row = ranks.filter(pl.col("rank") == rank).row(0, named=True)
        assert row["steps"] == own.height == 1  # one ProfilerStep#10 in each raw trace
        assert row["step_us"] == pytest.approx(own["duration_us"].mean())
        assert row["step_communication_us"] == pytest.approx(own["communication_us"].mean())
        start = own["start_us"][0] + min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e
                                         and e.get("cat") not in ("overhead", None, "Trace"))
        window = (start, start + own["duration_us"][0])
        comm = union([(max(e["ts"], window[0]), min(e["ts"] + e["dur"], window[1])) for e in nccl_kernels(doc)
                      if e["ts"] < window[1] and e["ts"] + e["dur"] > window[0]])
        assert row["communication_us"] == pytest.approx(sum(b - a for a, b in comm), abs=0.01)
        assert row["exposed_communication_us"] <= row["communication_us"]
    assert ranks.filter(pl.col("rank") == 0)["communication_us"][0] == pytest.approx(5798.0)


def test_dlrm_kernels_across_ranks_equal_the_raw_sums(dlrm: Job) -> None:
    kernels = dlrm.kernels()
    per_rank: dict[str, dict[int, float]] = {}
    calls: dict[str, int] = {}
    for rank, doc in dlrm_raw().items():
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e.get("ph") == "X":
                per_rank.setdefault(e["name"], {}).setdefault(rank, 0.0)
                per_rank[e["name"]][rank] += e["dur"]
                calls[e["name"]] = calls.get(e["name"], 0) + 1
    assert kernels.height == len(per_rank)
    for row in kernels.head(5).iter_rows(named=True):
        totals = per_rank[row["name"]]
        assert row["calls"] == calls[row["name"]]
        assert row["total_us"] == pytest.approx(sum(totals.values()))
        assert row["max_rank_us"] == pytest.approx(max(totals.values()))
        assert row["max_rank"] == max(totals, key=totals.get)


def test_gloo_job_rank_zero_waits_for_rank_one() -> None:
    """The recording script makes rank 1 sleep 20 ms before each backward: rank 0 waits for it."""
    job = open_job(GLOO, workers=1, use_cache=False)
    raw = {r: sorted(e["ts"] for e in _gloo(r)["traceEvents"] if e.get("name") == "gloo:all_reduce") for r in (0, 1)}
    view = job.collectives()
    assert view["collective"].n_unique() == len(raw[0]) == len(raw[1]) == 9
    assert set(view["name"]) == {"AllReduce"} and job.clock_offsets() == {0: 0.0, 1: 0.0}
    wait0 = sum(max(a, b) - a for a, b in zip(raw[0], raw[1], strict=True))
    ranks = job.ranks_view()
    assert ranks["wait_us"][0] == pytest.approx(wait0, abs=0.01)
    assert job.stragglers() == [1]
    # gloo's input sizes: the first bucket is 1,049,088 floats (Input Dims), 4 bytes each
    first = view.filter((pl.col("rank") == 0) & (pl.col("bytes") > 0)).sort("start_us")["bytes"][0]
    dims = next(e for e in _gloo(0)["traceEvents"] if e.get("name") == "gloo:all_reduce")["args"]["Input Dims"]
    assert first == dims[0][0] * 4


def test_bytes_and_bus_bandwidth_from_kineto_collective_arguments(tmp_path: Path) -> None:
    """Two ranks made from the B200 trace (rank rewritten): its all-gather's arguments give the size."""
    with gzip.open(SAMPLES / "tracelens_b200_nccl_eager_no_steps.json.gz") as fh:
        doc = json.load(fh)
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "Collective name" in e.get("args", {}))
    paths = []
    for rank in (0, 1):
        doc.setdefault("distributedInfo", {})["rank"] = rank
        doc["distributedInfo"]["world_size"] = 8
        paths.append(_write(tmp_path / f"r{rank}.json.gz", doc))
    job = open_job(paths, workers=1, use_cache=False)
    row = job.collectives().filter(pl.col("bytes").is_not_null()).row(0, named=True)
    args = kernel["args"]
    assert row["bytes"] == args["Out msg nelems"] * 2 == 402176  # BFloat16
    assert row["process_group"] == args["Process Group Name"]
    assert row["duration_us"] == pytest.approx(kernel["dur"])
    algbw = args["Out msg nelems"] * 2 / kernel["dur"] / 1e3
    assert row["algbw_gbps"] == pytest.approx(algbw, abs=1e-3)
    assert row["busbw_gbps"] == pytest.approx(algbw * 7 / 8, abs=1e-3)  # all-gather in a group of 8


# -- engines, API, CLI ------------------------------------------------------------------------------


def _frames(job: Job) -> list[pl.DataFrame]:
    return [job.ranks_view(), job.collectives(), job.steps(), job.kernels()]


def test_pool_and_serial_give_identical_frames(dlrm: Job) -> None:
    serial = open_job(DLRM, workers=1, use_cache=False)
    for a, b in zip(_frames(serial), _frames(dlrm), strict=True):
        assert_frame_equal(a, b)
    serial.close()


def test_a_dask_local_cluster_gives_the_pool_frames(dlrm: Job, monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    from profview.jobs.executors import DASK_ENV

    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        job = open_job(DLRM, dask=cluster.scheduler_address, use_cache=False)
        monkeypatch.setenv(DASK_ENV, cluster.scheduler_address)  # the variable alone picks the cluster too
        gloo = open_job(GLOO, use_cache=False)
        tasks = list(cluster.scheduler.task_prefixes)  # the ranks ran there
    for a, b in zip(_frames(job), _frames(dlrm), strict=True):
        assert_frame_equal(a, b)
    monkeypatch.delenv(DASK_ENV)
    for a, b in zip(_frames(gloo), _frames(open_job(GLOO, workers=1, use_cache=False)), strict=True):
        assert_frame_equal(a, b)
    assert sum(1 for name in tasks if name.startswith("summarise_or_fail")) >= 1
    job.close()


def test_reopening_reads_the_cached_summaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "job"
    shutil.copytree(GLOO, folder)
    first = open_job(folder, workers=1)

    def no_parse(*_args: object) -> None:
        raise AssertionError("a rank was summarised again")

    monkeypatch.setattr(job_module, "summarise_or_fail", no_parse)
    monkeypatch.setattr(job_module, "map_ranks", lambda _f, paths, *_a, **_k: [no_parse() for _ in paths])
    second = open_job(folder, workers=2)
    for a, b in zip(_frames(first), _frames(second), strict=True):
        assert_frame_equal(a, b)


def test_profview_load_returns_a_job_for_a_directory() -> None:
    job = profview.load(GLOO)
    assert isinstance(job, Job) and job.ranks == [0, 1]
    assert isinstance(profview.load(GLOO / "rank0.pt.trace.json.gz"), profview.Profile)


def test_cli_summary_names_the_straggler_and_export_writes_job_views(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert run_cli(["summary", str(DLRM), "--no-cache", "-j", "1"]) == 0
    out = capsys.readouterr().out
    words = " ".join(out.split())
    line = words[words.index("straggler:") :]
    # the 3 AllReduces alone are matched (test_dlrm_collectives_waits_and_straggler_against_the_raw_kernels)
    assert line.startswith("straggler: rank 5,") and "arrives last at 1 of 3" in line
    assert "40 point-to-point without a known peer" in " ".join(out.split())
    for view, rows in (("collectives", 64), ("ranks", 8), ("steps", 8)):
        target = tmp_path / f"{view}.csv"
        assert run_cli(["export", str(DLRM), "--view", view, "-o", str(target), "--no-cache", "-j", "1"]) == 0
        assert pl.read_csv(target).height == rows
    assert run_cli(["export", str(DLRM), "--view", "ops", "-o", str(tmp_path / "x.csv"), "-j", "1"]) == 2


def test_an_unreadable_rank_is_left_out_loudly_and_strict_refuses_it(tmp_path: Path) -> None:
    shutil.copy(GLOO / "rank0.pt.trace.json.gz", tmp_path / "rank0.json.gz")
    shutil.copy(GLOO / "rank1.pt.trace.json.gz", tmp_path / "rank1.json.gz")
    shutil.copy(SAMPLES / "gpt2_train_bf16.tables.txt", tmp_path / "rank2.json")  # a table, not a trace
    with open_job(tmp_path, workers=2, use_cache=False) as job:
        assert job.ranks == [0, 1] and job.world_size == 2  # gloo's distributedInfo says 2
        assert [name for name, _ in job.failures] == [str(tmp_path / "rank2.json")]
        assert any(n.startswith("rank 2 unreadable: rank2.json: a ") and "not a rank trace" in n for n in job.notes)
    with pytest.raises(ProfviewError, match=r"rank2\.json: .*not a rank trace.*--strict"):
        open_job(tmp_path, workers=2, use_cache=False, strict=True)
    (tmp_path / "rank2.json").write_text('{"traceEvents": [')  # cut short before any event
    with open_job(tmp_path, workers=1, use_cache=False) as job:
        assert job.ranks == [0, 1] and any("rank 2 unreadable: rank2.json: the trace is cut" in n for n in job.notes)
    for rank in (0, 1):
        (tmp_path / f"rank{rank}.json.gz").unlink()
    with pytest.raises(ProfviewError, match=r"rank2\.json: the trace is cut"):  # nothing readable: an error
        open_job(tmp_path, workers=1, use_cache=False)


def test_a_job_without_collectives_has_an_empty_typed_view_and_no_straggler(tmp_path: Path) -> None:
    """Two ranks of GPT-2 (one GPU, no communication kernels: none named nccl in the raw trace)."""
    with gzip.open(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz") as fh:
        doc = json.load(fh)
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"].lower()]
    for rank in (0, 1):
        doc["distributedInfo"] = {"rank": rank, "world_size": 2}
        _write(tmp_path / f"r{rank}.json.gz", doc)
    job = open_job(tmp_path, workers=1, use_cache=False)
    assert job.collectives().height == 0 and job.collectives()["start_us"].dtype == pl.Float64
    assert job.stragglers() == [] and "none found" in straggler_line(job)
    steps = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert job.ranks_view()["steps"].to_list() == [len(steps)] * 2


def test_collective_argument_columns_equal_the_raw_args() -> None:
    """The scanner's new columns (both readers agree: tests/test_fast_scanner.py) hold the args as written."""
    profile = profview.load(SAMPLES / "tracelens_b200_nccl_eager_no_steps.json.gz", use_cache=False)
    with gzip.open(SAMPLES / "tracelens_b200_nccl_eager_no_steps.json.gz") as fh:
        raw = [e for e in json.load(fh)["traceEvents"] if "Collective name" in (e.get("args") or {})]
    got = profile.events.filter(pl.col("collective").is_not_null()).sort("ts")
    assert got.height == len(raw) == 2
    for row, event in zip(got.iter_rows(named=True), sorted(raw, key=lambda e: e["ts"]), strict=True):
        args = event["args"]
        assert (row["dtype"], row["in_nelems"], row["out_nelems"], row["group_size"]) == (
            args["dtype"],
            args["In msg nelems"],
            args["Out msg nelems"],
            args["Group size"],
        )
        assert (row["process_group"], row["process_group_ranks"]) == (
            args["Process Group Name"],
            args["Process Group Ranks"],
        )
        assert row["seq"] is None and row["comms_id"] is None  # this PyTorch wrote neither


def test_a_rank_whose_size_disagrees_is_flagged_and_the_others_are_kept(tmp_path: Path) -> None:
    docs = {r: _gloo(r) for r in (0, 1)}
    changed = sorted((e for e in docs[1]["traceEvents"] if e.get("name") == "gloo:all_reduce"), key=lambda e: e["ts"])
    changed[2]["args"]["Input Dims"] = [[7]]  # rank 1's third all-reduce now says 7 floats
    paths = [_write(tmp_path / f"rank{r}.json.gz", doc) for r, doc in docs.items()]
    view = open_job(paths, workers=1, use_cache=False).collectives()
    third = view.filter(pl.col("collective") == 2)
    assert third.filter(pl.col("mismatch"))["rank"].to_list() == [1]  # a tie: rank 0's size is the usual one
    assert view.filter(pl.col("collective") != 2)["mismatch"].sum() == 0
    assert view["collective"].n_unique() == 9 and (view["ranks"] == 2).all()


def test_calls_match_by_process_group_and_seq_before_their_order() -> None:
    """Rule 1 over rule 3: rank 1 issues seq 2 before seq 1 (two process groups interleaving)."""
    from profview.analysis.distributed.collectives import RANK_CALL_SCHEMA, match_collectives

    def calls(rows: list[tuple[int, float]]) -> pl.DataFrame:
        return pl.DataFrame(
            [
                {"name": "AllReduce", "backend": "nccl", "process_group": "0", "seq": seq, "stream": 7,
                 "start": start, "end": 100.0 * seq + 50, "dtype": "Float", "bytes": 4096, "group_size": 2}
                for seq, start in rows
            ],
            schema=RANK_CALL_SCHEMA,
        )  # fmt: skip

    view, offsets = match_collectives({0: calls([(1, 10.0), (2, 120.0)]), 1: calls([(2, 110.0), (1, 30.0)])})
    assert offsets == {0: 0.0, 1: 0.0}  # each instance ends at 100·seq + 50 on both ranks
    assert set(view["match"]) == {"seq"}
    first = view.filter(pl.col("collective") == 0).sort("rank")
    assert first["wait_us"].to_list() == [20.0, 0.0]  # seq 1: rank 0 at 10, rank 1 at 30


def test_rank_paths_are_computed_when_asked_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a job computes no critical path; the rank paths view computes each rank's
    once, keeps it in the rank store, and a later open reads it from there (the computation is
    made to fail the second time: it is not run); the straggler path needs the straggler's alone."""
    from profview.jobs import rank_summary

    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "gloo"
    shutil.copytree(SAMPLES / "gloo_2rank", folder)
    asked: list[str] = []
    compute = rank_summary._critical_path_facts

    def counted(profile):  # type: ignore[no-untyped-def]
        asked.append(profile.path)
        return compute(profile)

    monkeypatch.setattr(rank_summary, "_critical_path_facts", counted)
    with open_job([str(folder)], workers=1) as job:
        job.ranks_view()
        job.collectives()
        assert asked == []  # opening the job and its first views: no path
        assert job.stragglers() == [1]
        job.straggler_path()
        assert [Path(p).name for p in asked] == ["rank1.pt.trace.json.gz"]  # the straggler's alone
        first = job.view("rank_paths")
        assert len(asked) == 2  # then the other rank's; the straggler's is kept on its summary
    monkeypatch.setattr(rank_summary, "_critical_path_facts", lambda profile: pytest.fail("computed again"))
    with open_job([str(folder)], workers=1) as again:
        assert_frame_equal(again.view("rank_paths"), first)
    assert first["critical_path_us"].null_count() == 0


def test_sendrecvs_of_a_128_rank_job_are_not_paired_without_their_peer() -> None:
    """HTA's two sampled ranks of a 128-rank job: every NCCL kernel is a SendRecv whose peer the
    trace does not name, so none is matched (stream order paired them: a 35.4 ms "wait" for a
    SendRecv that had ended 4.7 ms before the other began), no wait, straggler or clock offset is
    said, and the summary counts them."""
    from profview.analysis.distributed.collectives import match_counts

    paths = [SAMPLES / f"hta_sampled_rank-{r}.json.gz" for r in (0, 1)]
    raw = {}
    for rank, path in enumerate(paths):
        with gzip.open(path) as fh:
            raw[rank] = [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"]]
    assert {e["name"].split("_")[1] for events in raw.values() for e in events} == {"SendRecv"}
    job = open_job([str(p) for p in paths], workers=1, use_cache=False)
    view = job.collectives()
    assert match_counts(view) == {"no_peer": sum(len(e) for e in raw.values())} == {"no_peer": 20}
    assert (view["ranks"] == 1).all() and view["wait_us"].null_count() == view.height
    assert job.stragglers() == [] and job.clock_offsets() == {0: 0.0, 1: 0.0}
    ranks = job.ranks_view()
    assert ranks["wait_us"].null_count() == 2
    assert (ranks["exposed_communication_us"] <= ranks["communication_us"]).all()
    from profview.report.job_summary import matching_line

    assert "20 point-to-point without a known peer" in (matching_line(job) or "")
    job.close()


def _calls(rows: list[dict]) -> pl.DataFrame:
    from profview.analysis.distributed.collectives import RANK_CALL_SCHEMA

    base = {"backend": "nccl", "stream": 7, "dtype": "Float", "bytes": 4096, "process_group": "0", "seq": None}
    return pl.DataFrame([base | row for row in rows], schema=RANK_CALL_SCHEMA)


def test_point_to_point_in_a_two_rank_group_with_seq_is_matched_by_its_peer() -> None:
    from profview.analysis.distributed.collectives import match_collectives, match_counts

    pair = {"name": "SendRecv", "process_group": "5", "group_ranks": "[0, 1]", "group_size": 2}
    view, _ = match_collectives({
        0: _calls([pair | {"seq": 1, "start": 10.0, "end": 60.0}]),
        1: _calls([pair | {"seq": 1, "start": 30.0, "end": 60.0}]),
        2: _calls([{"name": "SendRecv", "group_size": 4, "group_ranks": "[0, 1, 2, 3]", "seq": 1,
                    "start": 5.0, "end": 9.0}]),
    })  # fmt: skip
    assert match_counts(view) == {"no_peer": 1, "seq": 2}
    matched = view.filter(pl.col("ranks") == 2).sort("rank")
    assert matched["rank"].to_list() == [0, 1] and matched["wait_us"].to_list() == [20.0, 0.0]


def test_a_rank_outside_its_process_group_and_an_impossible_wait_are_left_unmatched() -> None:
    """Rank 2 names group "0" of ranks [0, 1]; the second all-reduce would have rank 0 wait 500 µs
    in a call of 50 µs (its kernel ended before rank 1's began): not a pairing the trace supports."""
    from profview.analysis.distributed.collectives import match_collectives, match_counts

    group = {"name": "AllReduce", "group_ranks": "[0, 1]", "group_size": 2}
    view, offsets = match_collectives({
        0: _calls([group | {"seq": 1, "start": 10.0, "end": 100.0}, group | {"seq": 2, "start": 200.0, "end": 250.0}]),
        1: _calls([group | {"seq": 1, "start": 40.0, "end": 100.0}, group | {"seq": 2, "start": 700.0, "end": 760.0}]),
        2: _calls([group | {"seq": 1, "start": 40.0, "end": 100.0}]),
    })  # fmt: skip
    assert match_counts(view) == {"implausible": 2, "not_member": 1, "seq": 2}
    matched = view.filter(pl.col("ranks") > 1).sort("rank")
    assert matched["wait_us"].to_list() == [30.0, 0.0]
    assert (view["wait_us"].fill_null(0.0) <= view["duration_us"] + 1.0).all()
    assert offsets == {0: 0.0, 1: 0.0, 2: 0.0}


def test_collectives_in_different_orders_without_seq_are_not_matched() -> None:
    """No Seq, and rank 1's window holds one all-reduce fewer: order is no evidence there."""
    from profview.analysis.distributed.collectives import match_collectives, match_counts

    call = {"name": "AllReduce", "process_group": None}
    view, _ = match_collectives({
        0: _calls([call | {"start": 10.0, "end": 50.0}, call | {"start": 100.0, "end": 150.0}]),
        1: _calls([call | {"start": 120.0, "end": 150.0}]),
    })  # fmt: skip
    assert match_counts(view) == {"order_differs": 3}
    assert (view["ranks"] == 1).all()
