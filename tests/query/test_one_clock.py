"""Every table's times on one clock: µs from ``meta.trace_origin_us``; ``events.ts`` absolute as
written, ``events.start_us`` on the tables' clock; ``events.step`` and ``events.iteration`` by the
rules the narrowed views use.  docs/query.md's "top kernels per step" and "kernels under an
operator" give the exports' answers.

Witnesses: the raw JSON read with the standard library (the origin, the ProfilerStep ranges, the
kernels under an operator found by time containment, ``tests/witness.py``), and the exports
(``export --view kernels --step N``, ``export --view launches --op NAME``, ``memory``, ``gaps``)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from support import ROOT, run_cli, sample
from witness import kernels_under, raw

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
VIT = "tracelens_h100_vit_falconsai.json.gz"
DOC = ROOT / "docs" / "query.md"


def query(tmp_path: Path, sql: str, *names: str) -> pl.DataFrame:
    out = tmp_path / f"q{len(list(tmp_path.iterdir()))}.parquet"
    assert run_cli(["query", *(str(sample(n)) for n in names), "-q", sql, "-o", str(out)]) == 0
    return pl.read_parquet(out)


def export(tmp_path: Path, name: str, *args: str) -> pl.DataFrame:
    out = tmp_path / f"e{len(list(tmp_path.iterdir()))}.parquet"
    assert run_cli(["export", str(sample(name)), *args, "-o", str(out)]) == 0
    return pl.read_parquet(out)


def doc_sql(title: str) -> str:
    """The SQL of the worked example under the heading ``title`` in docs/query.md."""
    section = DOC.read_text().split(f"#### {title}", 1)[1]
    return re.search(r"```sql\n(.*?)```", section, re.DOTALL).group(1).strip()  # type: ignore[union-attr]


def test_the_origin_is_the_first_timed_event(tmp_path: Path) -> None:
    """``trace_origin_us``: the start of the first complete event that is not an ``other`` or
    overhead range (Kineto's ``Trace`` span), found in the raw JSON; 131.8 µs after MIN(ts)."""
    events = raw(sample(GPT2))
    timed = [e for e in events if e.get("ph") == "X" and "dur" in e and e.get("cat") not in ("Trace", "overhead")]
    origin = min(float(e["ts"]) for e in timed)
    meta = query(tmp_path, "SELECT trace_origin_us, span_us FROM meta", GPT2)
    assert meta["trace_origin_us"][0] == pytest.approx(origin, abs=1e-3)
    first = min(float(e["ts"]) for e in events if "ts" in e)
    assert origin - first == pytest.approx(131.765, abs=1e-3)
    clock = query(tmp_path, "SELECT MIN(start_us) AS low, MIN(ts) AS first FROM events", GPT2)
    assert clock["first"][0] == pytest.approx(first) and clock["low"][0] == pytest.approx(first - origin, abs=1e-3)


def test_steps_are_on_the_events_clock(tmp_path: Path) -> None:
    """Each ProfilerStep annotation's ``start_us`` in events is its step's host range start; the
    steps table's window starts there or where the previous step's GPU work ended (later)."""
    sql = (
        "SELECT s.step, s.start_us AS window_us, e.start_us AS annotation_us, e.ts - m.trace_origin_us AS recomputed "
        "FROM steps s JOIN events e ON e.name = s.name CROSS JOIN meta m WHERE e.ph = 'X' ORDER BY s.step"
    )
    rows = query(tmp_path, sql, GPT2).to_dicts()
    raw_starts = {
        e["name"]: float(e["ts"]) for e in raw(sample(GPT2)) if str(e.get("name", "")).startswith("ProfilerStep#")
    }
    origin = query(tmp_path, "SELECT trace_origin_us FROM meta", GPT2)["trace_origin_us"][0]
    assert [r["step"] for r in rows] == [2, 3, 4]
    steps = export(tmp_path, GPT2, "--view", "steps")
    for row in rows:
        assert row["annotation_us"] == pytest.approx(raw_starts[f"ProfilerStep#{row['step']}"] - origin, abs=1e-3)
        assert row["annotation_us"] == pytest.approx(row["recomputed"], abs=1e-6)
        assert row["window_us"] >= row["annotation_us"] - 1e-3
    assert rows[0]["window_us"] == pytest.approx(rows[0]["annotation_us"], abs=1e-3)
    ends = (steps["start_us"] + steps["duration_us"]).to_list()
    for before, row in zip(ends, rows[1:], strict=False):  # the window: max(annotation, previous GPU end)
        assert row["window_us"] == pytest.approx(max(row["annotation_us"], before), abs=2e-3)


def test_memory_and_gaps_share_the_clock(tmp_path: Path) -> None:
    """The memory table's ``ts_us`` are its ``[memory]`` events' ``start_us``; every GPU idle gap
    lies inside its step's window."""
    sql = (
        "SELECT COUNT(*) AS n, MAX(ABS(m.ts_us - e.start_us)) AS off FROM "
        "(SELECT ts_us, ROW_NUMBER() OVER (ORDER BY ts_us) AS i FROM memory) m JOIN "
        "(SELECT start_us, ROW_NUMBER() OVER (ORDER BY start_us) AS i FROM events WHERE name = '[memory]') e "
        "ON m.i = e.i"
    )
    answer = query(tmp_path, sql, GPT2)
    count = sum(1 for e in raw(sample(GPT2)) if e.get("name") == "[memory]")
    assert answer["n"][0] == count > 1000 and answer["off"][0] < 1e-3
    outside = query(
        tmp_path,
        "SELECT COUNT(*) AS n FROM gaps g JOIN steps s ON g.step = s.step "
        "WHERE g.start_us < s.start_us - 0.001 OR g.end_us > s.start_us + s.duration_us + 0.001",
        GPT2,
    )
    assert outside["n"][0] == 0 and query(tmp_path, "SELECT COUNT(*) AS n FROM gaps", GPT2)["n"][0] > 0


def test_top_kernels_per_step_is_the_step_export(tmp_path: Path) -> None:
    """docs/query.md's example: each step's kernels (calls, µs) from events.step are
    ``export --view kernels --step N``'s, for every step."""
    answer = query(tmp_path, doc_sql("Top kernels per step"), GPT2)
    assert answer.columns[:4] == ["step", "name", "calls", "total_us"]
    assert sorted(answer["step"].unique().to_list()) == [2, 3, 4]
    every = query(tmp_path, doc_sql("Top kernels per step").replace("WHERE rank <= 5", "WHERE rank > 0"), GPT2)
    for step in (2, 3, 4):
        exported = export(tmp_path, GPT2, "--view", "kernels", "--step", str(step)).sort("total_us", "name",
                                                                                    descending=[True, False])
        mine = every.filter(pl.col("step") == step).sort("total_us", "name", descending=[True, False])
        assert mine["name"].to_list() == exported["name"].to_list()
        assert mine["calls"].to_list() == exported["calls"].to_list()
        assert mine["total_us"].to_list() == pytest.approx(exported["total_us"].to_list(), abs=1e-3)
        top = answer.filter(pl.col("step") == step)
        assert top["name"].to_list() == exported["name"].head(5).to_list()


def test_events_step_counts_the_views_rule(tmp_path: Path) -> None:
    """GPU work with a launching call belongs to the step whose ProfilerStep host range holds the
    call (counted here from the raw JSON by correlation); host events by their own start."""
    events = raw(sample(GPT2))
    ranges = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
              if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") == "user_annotation"}
    launch = {e["args"]["correlation"]: e["ts"] for e in events
              if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    origin = query(tmp_path, "SELECT trace_origin_us FROM meta", GPT2)["trace_origin_us"][0]
    windows = {r["step"]: (origin + r["start_us"], origin + r["start_us"] + r["duration_us"])
               for r in export(tmp_path, GPT2, "--view", "steps").to_dicts()}
    expected: dict[int, int] = {}
    unlaunched = 0
    for e in events:
        if e.get("cat") == "kernel" and e.get("ph") == "X":
            at = launch.get(e["args"].get("correlation"))
            if at is None:  # no launching call in the trace: the window that holds its start
                unlaunched += 1
                step = next((s for s, (lo, hi) in windows.items() if lo <= e["ts"] < hi), None)
            else:
                step = next((s for s, (lo, hi) in ranges.items() if lo <= at <= hi), None)
            if step is not None:
                expected[step] = expected.get(step, 0) + 1
    assert unlaunched > 300  # the 314 kernels of step 2 whose launch the trace lacks
    counted = query(tmp_path, "SELECT step, COUNT(*) AS n FROM events WHERE kind = 'kernel' GROUP BY step", GPT2)
    got = {r["step"]: r["n"] for r in counted.to_dicts() if r["step"] is not None}
    assert got == expected and sum(expected.values()) > 3000
    ops = query(tmp_path, "SELECT step, COUNT(*) AS n FROM events WHERE kind = 'cpu_op' GROUP BY step", GPT2)
    host = {
        s: sum(1 for e in events if e.get("cat") == "cpu_op" and lo <= e["ts"] <= hi) for s, (lo, hi) in ranges.items()
    }
    assert {r["step"]: r["n"] for r in ops.to_dicts() if r["step"] is not None} == host


def test_iterations_follow_the_iteration_view(tmp_path: Path) -> None:
    """The decode trace: each iteration's kernels from events.iteration are its GPU µs in the
    iterations view (GPU work by its launching call)."""
    name = "h100_decode_eager_kv.json.gz"
    sql = (
        "SELECT i.iteration, i.gpu_us, SUM(e.dur) AS summed FROM iterations i "
        "JOIN events e ON e.iteration = i.iteration WHERE e.kind IN ('kernel', 'memcpy', 'memset') "
        "GROUP BY i.iteration, i.gpu_us ORDER BY i.iteration"
    )
    rows = query(tmp_path, sql, name).to_dicts()
    assert len(rows) == 13
    for row in rows:
        assert row["summed"] == pytest.approx(row["gpu_us"], abs=0.01)


def test_kernels_under_an_operator_is_the_drill_down(tmp_path: Path) -> None:
    """docs/query.md's example: the GPU work launched from inside aten::linear (nested addmm
    included) is ``export --view launches --op aten::linear``, and the raw JSON's containment."""
    answer = query(tmp_path, doc_sql("Kernels under an operator"), VIT)
    answer = answer.sort("total_us", "name", descending=[True, False])
    exported = export(tmp_path, VIT, "--view", "launches", "--op", "aten::linear").sort("total_us", "name",
                                                                                      descending=[True, False])
    assert answer["name"].to_list() == exported["name"].to_list() and answer.height == 4
    assert answer["calls"].to_list() == exported["calls"].to_list()
    assert answer["total_us"].to_list() == pytest.approx(exported["total_us"].to_list(), abs=1e-3)
    witnessed = sum(us for _call, us in kernels_under(raw(sample(VIT)), "aten::linear"))
    assert float(answer["total_us"].sum()) == pytest.approx(witnessed, abs=1e-3)


def test_a_job_has_its_ranks_clocks(tmp_path: Path) -> None:
    """A job's meta: one row per rank, each rank's own origin (ranks' clocks differ)."""
    meta = query(tmp_path, "SELECT rank, trace_origin_us FROM meta ORDER BY rank", "gloo_2rank")
    assert meta["rank"].to_list() == [0, 1] and meta["trace_origin_us"].null_count() == 0
