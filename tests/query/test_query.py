"""``profview query``: SQL over the tables every view exports (issue 41, item 4).

Witnesses: ``profview export`` of the same view (the query must answer with that frame, less its
``trace`` column), the raw JSON counted with the standard library (``tests/witness.py``, tarfile +
json for the job), and a trace written here whose kernels overlap partially on one stream."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from support import SAMPLES, run_cli, sample
from witness import dlrm_kernel_calls, raw_kernels

from profview.errors import ProfviewError
from profview.profiles.loading import load
from profview.query.engine import named_tables, run_sql
from profview.query.tables import TRACE_TABLES, stacked, trace_tables

RESNET = "resnet50_train_amp.pt.trace.json.gz"
GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
DLRM = SAMPLES / "param_dlrm_8rank_v100.tar.gz"


def _query(tmp_path: Path, paths: list[str], sql: str, name: str = "q.parquet") -> pl.DataFrame:
    out = tmp_path / name
    assert run_cli(["query", *paths, "-q", sql, "-o", str(out), "--force"]) == 0
    return pl.read_parquet(out)


def _export(tmp_path: Path, path: str, view: str) -> pl.DataFrame:
    out = tmp_path / f"{view}.parquet"
    assert run_cli(["export", path, "--view", view, "-o", str(out), "--force"]) == 0
    return pl.read_parquet(out)


@pytest.mark.parametrize(
    "view", ["kernels", "ops", "steps", "categories", "efficiency", "modules", "gaps", "gpu_idle", "critical_path",
             "iterations", "phases"],
)
def test_select_star_equals_the_export(tmp_path: Path, view: str) -> None:
    """``SELECT * FROM VIEW`` is ``export --view VIEW``, row for row, with ``trace`` in front."""
    path = str(sample(RESNET))
    answer = _query(tmp_path, [path], f"SELECT * FROM {view}")
    assert answer.columns[0] == "trace" and set(answer["trace"].to_list()) == {path}
    assert_frame_equal(answer.drop("trace"), _export(tmp_path, path, view))


@pytest.mark.parametrize(
    ("name", "views"),
    [
        (GPT2, ["memory", "memory_ops", "memory_peaks", "critical_path_names", "critical_path_events"]),
        ("h100_compile_reduce_overhead.json.gz", ["graphs", "graph_nodes", "graph_ops", "ops"]),
    ],
)
def test_memory_and_graph_tables_equal_their_exports(tmp_path: Path, name: str, views: list[str]) -> None:
    path = str(sample(name))
    for view in views:
        answer = _query(tmp_path, [path], f"SELECT * FROM {view}", f"{view}-q.parquet")
        assert answer.height > 0
        assert_frame_equal(answer.drop("trace"), _export(tmp_path, path, view))


def test_group_by_over_events_equals_the_kernel_table_and_the_json(tmp_path: Path) -> None:
    """Per kernel name, calls and total from the raw events (SQL), from the kernel table, and from
    the JSON read with the standard library: three counts, one answer."""
    path = str(sample(RESNET))
    sql = (
        "SELECT e.name, COUNT(*) AS calls, SUM(e.dur) AS total_us, MAX(k.calls) AS table_calls, "
        "MAX(k.total_us) AS table_total_us FROM events e JOIN kernels k ON e.name = k.name "
        "WHERE e.kind = 'kernel' AND e.ph = 'X' GROUP BY e.name"
    )
    answer = _query(tmp_path, [path], sql)
    raw = raw_kernels(sample(RESNET))
    assert answer.height == len(raw) == 78
    for name, calls, total, table_calls, table_total in answer.iter_rows():
        assert calls == table_calls == raw[name][0]
        assert total == pytest.approx(table_total, abs=1e-6) and total == pytest.approx(raw[name][1], abs=1e-3)


def test_two_traces_at_once(tmp_path: Path) -> None:
    """Each table holds the rows of both traces, told apart by ``trace``; each trace's rows are its export."""
    paths = [str(sample(RESNET)), str(sample(GPT2))]
    answer = _query(tmp_path, paths, "SELECT * FROM kernels")
    assert answer["trace"].unique(maintain_order=True).to_list() == paths
    for path in paths:
        assert_frame_equal(answer.filter(pl.col("trace") == path).drop("trace"), _export(tmp_path, path, "kernels"))
    totals = _query(tmp_path, paths, "SELECT trace, SUM(calls) AS calls FROM kernels GROUP BY trace", "t.parquet")
    for path in paths:
        raw = raw_kernels(Path(path))
        calls = totals.filter(pl.col("trace") == path)["calls"].item()
        assert calls == sum(c for c, _ in raw.values())


def test_a_job(tmp_path: Path) -> None:
    """A job's own tables equal its exports; its per-rank tables carry ``rank`` and each rank's kernels."""
    job = str(DLRM)
    for view in ("ranks", "collectives", "kernels"):
        answer = _query(tmp_path, [job, "-j", "2"], f"SELECT * FROM {view}", f"{view}-q.parquet")
        assert_frame_equal(answer.drop("trace"), _export(tmp_path, job, view))
    per_rank = _query(tmp_path, [job, "-j", "2"], "SELECT rank, SUM(calls) AS calls FROM rank_kernels GROUP BY rank "
                      "ORDER BY rank", "rk.parquet")
    assert dict(per_rank.iter_rows()) == dlrm_kernel_calls()
    events = _query(tmp_path, [job, "-j", "2"], "SELECT rank, COUNT(*) AS n FROM events WHERE kind = 'kernel' "
                    "GROUP BY rank ORDER BY rank", "ev.parquet")
    assert dict(events.iter_rows()) == dlrm_kernel_calls()


def _pdl_trace(path: Path) -> list[dict]:
    """A trace whose kernels overlap partially on one stream (programmatic dependent launch: the next
    kernel starts before the last ends), the case Perfetto's JSON importer drops slices on."""
    launches, kernels = [], []
    spans = [("gemm_a", 10.0, 10.0), ("gemm_b", 15.0, 10.0), ("gemm_a", 22.0, 8.0), ("gemm_c", 29.0, 5.0)]
    for i, (name, ts, dur) in enumerate(spans):
        corr = 100 + i
        launches.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1,
                         "ts": 1.0 + i, "dur": 0.5, "args": {"correlation": corr, "External id": 1}})
        kernels.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                        "args": {"correlation": corr, "External id": 1, "stream": 7, "device": 0}})
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0.0, "dur": 6.0,
         "args": {"External id": 1}},
        *launches, *kernels,
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
    ]
    with gzip.open(path, "wt") as fh:
        json.dump({"traceEvents": events}, fh)
    return events


def test_no_event_dropped_where_kernels_overlap_on_one_stream(tmp_path: Path) -> None:
    trace = tmp_path / "pdl.json.gz"
    raw = _pdl_trace(trace)
    counted = _query(tmp_path, [str(trace)], "SELECT COUNT(*) AS n FROM events")
    assert counted["n"].item() == len(raw) == 10
    per_name = _query(tmp_path, [str(trace)], "SELECT name, calls, total_us FROM kernels ORDER BY name", "k.parquet")
    witness: dict[str, list[float]] = {}
    for e in raw:
        if e.get("cat") == "kernel":
            witness.setdefault(e["name"], []).append(e["dur"])
    assert [(n, c, t) for n, c, t in per_name.iter_rows()] == [
        (n, len(d), pytest.approx(sum(d))) for n, d in sorted(witness.items())
    ]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM kernels WHERE", "bad query: sql parser error"),
        ("SELEC * FROM kernels", "only SELECT (or WITH ... SELECT) is answered, not 'SELEC'"),
        ("SELECT * FROM kernals", "unknown table 'kernals' in the query: the tables are events, kernels"),
        ("SELECT nope FROM kernels", "unknown column 'nope' in the query (kernels: trace, name, calls"),
        ("   ", "empty query"),
        ("DROP TABLE kernels", "bad query: only SELECT (or WITH ... SELECT) is answered, not 'DROP'"),
        ("SELECT * FROM kernels; SELECT * FROM ops", "bad query: one (and only one) statement"),
    ],
)
def test_bad_sql_is_one_line_and_exit_2(sql: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["query", str(sample(RESNET)), "-q", sql]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and len(captured.err.strip().splitlines()) == 1


def test_a_table_the_trace_cannot_give_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    """resnet50 replays no graph: naming ``graphs`` is refused with the reason, not an empty answer."""
    assert run_cli(["query", str(sample(RESNET)), "-q", "SELECT * FROM graphs"]) == 2
    assert "no graph replays in this trace" in capsys.readouterr().err


def test_only_the_named_tables_are_built() -> None:
    """A view pays only for what it shows: a query over kernels builds the kernel table alone."""
    tables = trace_tables(load(sample(RESNET), use_cache=False))
    answer = run_sql(tables, "SELECT COUNT(*) AS n FROM kernels -- not steps, nor 'ops'")
    assert answer["n"].item() == len(raw_kernels(sample(RESNET)))
    assert tables.built() == ["kernels"]
    two = stacked([tables, trace_tables(load(sample(RESNET), use_cache=False), label="again")])
    assert "ops" in two and two.built() == [] and tables.built() == ["kernels"]  # asking is not building
    assert named_tables("SELECT \"ops\".name FROM ops JOIN steps ON 1=1 WHERE name = 'events'", list(TRACE_TABLES)) == [
        "ops", "steps"
    ]


def test_a_cached_query_reads_no_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second query on a trace reads its kernel table from the cache: the events stay unread."""
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "t.json.gz"
    path.write_bytes(sample(RESNET).read_bytes())
    first = _query(tmp_path, [str(path)], "SELECT name, total_us FROM kernels", "a.parquet")
    profile = load(path)
    tables = trace_tables(profile, label=str(path))
    again = run_sql(tables, "SELECT name, total_us FROM kernels")
    assert_frame_equal(again, first)
    assert "events" not in vars(profile) and "model" not in vars(profile)


def test_tables_lists_columns_with_units(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["query", str(sample(RESNET)), "--tables"]) == 0
    out = capsys.readouterr().out
    assert "kernels: one per GPU kernel name" in out and "total_us  Float64  [µs]" in out
    assert "graphs: one per CUDA/HIP graph replayed\n  (not in these inputs: no graph replays" in out


def test_terminal_table_is_sanitised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A name with an escape sequence is printed inert in the aligned table."""
    trace = tmp_path / "pdl.json.gz"
    raw = _pdl_trace(trace)
    for e in raw:
        if e.get("name") == "gemm_c":
            e["name"] = "gemm_\x1b[31mred"
    with gzip.open(trace, "wt") as fh:
        json.dump({"traceEvents": raw}, fh)
    assert run_cli(["query", str(trace), "-q", "SELECT name, calls FROM kernels ORDER BY name"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.splitlines()[0].split() == ["name", "calls"] and "(3 rows)" in out


def test_no_output_over_an_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = tmp_path / "pdl.json"  # a file name an export could take
    trace.write_text(json.dumps({"traceEvents": _pdl_trace(tmp_path / "pdl.json.gz")}))
    before = trace.read_bytes()
    assert run_cli(["query", str(trace), "-q", "SELECT * FROM kernels", "-o", str(trace), "--force"]) == 2
    assert trace.read_bytes() == before and "refusing to overwrite the input" in capsys.readouterr().err


def test_run_sql_raises_profview_error() -> None:
    with pytest.raises(ProfviewError, match="unknown table 'x'"):
        run_sql({"kernels": pl.DataFrame({"a": [1]})}, "SELECT * FROM x")


def test_capture_as_export_takes_it(tmp_path: Path) -> None:
    """``--capture``: the graph tables attributed through a capture folder, as the export has them."""
    replay = str(SAMPLES / "tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz")
    folder = str(SAMPLES / "sglang_decode_capture_traces")
    for view in ("graphs", "graph_ops"):
        answer = _query(tmp_path, [replay, "--capture", folder], f"SELECT * FROM {view}", f"{view}-q.parquet")
        out = tmp_path / f"{view}.parquet"
        assert run_cli(["export", replay, "-v", view, "--capture", folder, "-o", str(out), "--force"]) == 0
        assert answer.height > 0
        assert_frame_equal(answer.drop("trace"), pl.read_parquet(out))


def test_a_jobs_tables_list_its_own_and_each_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["query", str(DLRM), "--tables", "-j", "2"]) == 0
    out = capsys.readouterr().out
    for line in ("ranks: one per rank", "collectives: one per collective call", "rank_kernels: one per rank",
                 "events: per rank: one per trace event"):
        assert line in out
    rank_kernels = out.split("rank_kernels:", 1)[1].split("\n", 2)[1:]
    assert rank_kernels[0].split()[0] == "trace" and rank_kernels[1].split()[:2] == ["rank", "Int64"]


def test_table_names_ignore_case(tmp_path: Path) -> None:
    answer = _query(tmp_path, [str(sample(RESNET))], "SELECT COUNT(*) AS n FROM KERNELS")
    assert answer["n"].item() == len(raw_kernels(sample(RESNET)))
