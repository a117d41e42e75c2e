"""profview diff: two traces compared, every figure checked against the raw events of both traces.

The witness: each trace read again with orjson, kernels grouped by name, operators counted by
name, steps rebuilt from the ProfilerStep annotations and the GPU work their runtime calls
launched (linked by ``correlation``) — none of it through profview's parser or model.
"""

from __future__ import annotations

import collections
import csv
import gzip
import re
from pathlib import Path

import polars as pl
import pytest
from support import SAMPLES, run_cli
from witness import AFTER, BEFORE, GPU_CATS, raw, raw_kernels

from profview.analysis.diff.compare import normalized_name, pair_names
from profview.diff.comparison import Comparison, load_comparison

HOST_ROW_CATEGORIES = ("cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "overhead")


def raw_op_calls(path: Path) -> collections.Counter[str]:
    calls: collections.Counter[str] = collections.Counter()
    for e in raw(path):
        # operators, and (as in torch's table) runtime/driver calls and profiler overhead ranges
        if e.get("cat") in HOST_ROW_CATEGORIES and e.get("ph") == "X":
            calls[re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", e["name"])] += 1
    return calls


def raw_self_nested(path: Path) -> set[str]:
    """Names with a call inside a call of the same name on one thread: torch folds some of those
    (a same-name only child) into one call, so their raw count is not the table's."""
    spans: dict[tuple, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in raw(path):
        if e.get("cat") in HOST_ROW_CATEGORIES and e.get("ph") == "X":
            spans[(e["name"], e.get("pid"), e.get("tid"))].append((e["ts"], e["ts"] + e.get("dur", 0)))
    nested = set()
    for (name, _pid, _tid), intervals in spans.items():
        intervals.sort(key=lambda span: (span[0], -span[1]))
        reach = -1.0
        for _start, end in intervals:
            if end <= reach:
                nested.add(name)
                break
            reach = max(reach, end)
    return nested


def raw_mean_step(path: Path) -> float:
    """Each step: from its annotation (no earlier than the previous step's end) to the later of
    the annotation's end and the end of the GPU work whose runtime call ran inside it."""
    events = raw(path)
    steps = sorted(
        (e for e in events if e.get("cat") == "user_annotation" and re.match(r"^ProfilerStep#\d+$", e["name"])),
        key=lambda e: e["ts"],
    )
    launch_ts = {e["args"]["correlation"]: e["ts"] for e in events if e.get("cat") == "cuda_runtime"}
    gpu = [e for e in events if e.get("cat") in GPU_CATS and e.get("ph") == "X"]
    durations, previous_end = [], None
    for step in steps:
        lo, hi = step["ts"], step["ts"] + step["dur"]
        ends = [g["ts"] + g["dur"] for g in gpu if lo <= launch_ts.get(g["args"].get("correlation"), -1) <= hi]
        start = lo if previous_end is None else max(lo, previous_end)
        end = max([hi, *ends, start])
        durations.append(end - start)
        previous_end = end
    return sum(durations) / len(durations)


@pytest.fixture(scope="module")
def hta() -> Comparison:
    return load_comparison(str(BEFORE), str(AFTER), use_cache=False)


def expected_status(before: float, after: float, present_before: bool, present_after: bool) -> str:
    if not present_before:
        return "added"
    if not present_after:
        return "removed"
    if abs(after - before) <= abs(before) * 0.05:
        return "unchanged"
    return "increased" if after > before else "decreased"


def test_kernel_rows_equal_the_raw_events_of_both_traces(hta: Comparison) -> None:
    frame = hta.kernels()
    before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
    assert frame["name"].n_unique() == frame.height == len(before.keys() | after.keys()) == 197
    for row in frame.iter_rows(named=True):
        calls_b, total_b = before.get(row["name"], (0, 0))
        calls_a, total_a = after.get(row["name"], (0, 0))
        assert (row["calls_before"], row["calls_after"]) == (calls_b, calls_a), row["name"]
        assert (row["total_us_before"], row["total_us_after"]) == (total_b, total_a), row["name"]
        assert row["delta_us"] == row["total_us_after"] - row["total_us_before"]
        assert row["status"] == expected_status(total_b, total_a, row["name"] in before, row["name"] in after)
    added = set(frame.filter(pl.col("status") == "added")["name"])
    removed = set(frame.filter(pl.col("status") == "removed")["name"])
    assert added == after.keys() - before.keys() and len(added) == 27
    assert removed == before.keys() - after.keys() and len(removed) == 66
    assert "volta_sgemm_128x32_nt" in added and "ampere_sgemm_128x64_nn" in removed


def test_kernels_sorted_by_the_size_of_the_change(hta: Comparison) -> None:
    deltas = hta.kernels()["delta_us"].abs().to_list()
    assert deltas == sorted(deltas, reverse=True)
    top = hta.kernels().row(0, named=True)  # the biggest mover, found independently
    before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
    moved = {n: after.get(n, (0, 0))[1] - before.get(n, (0, 0))[1] for n in before.keys() | after.keys()}
    assert top["name"] == max(moved, key=lambda n: abs(moved[n]))
    assert top["delta_us"] == moved[top["name"]] == 60134


def test_operator_rows(hta: Comparison) -> None:
    frame = hta.ops()
    calls_b, calls_a = raw_op_calls(BEFORE), raw_op_calls(AFTER)
    folded = raw_self_nested(BEFORE) | raw_self_nested(AFTER)
    ops_b = {r["name"]: r for r in hta.before.ops().iter_rows(named=True)}
    ops_a = {r["name"]: r for r in hta.after.ops().iter_rows(named=True)}
    checked_raw = 0
    for row in frame.iter_rows(named=True):
        name = row["name"]
        own = (ops_b.get(name, {}).get("calls", 0), ops_a.get(name, {}).get("calls", 0))
        assert (row["calls_before"], row["calls_after"]) == own, name
        if name != "(unattributed)" and name not in folded:  # no torch folding can apply: raw counts
            assert own == (calls_b.get(name, 0), calls_a.get(name, 0)), name
            checked_raw += 1
        zero = dict.fromkeys(("host_self_us", "device_self_us", "device_total_us"), 0.0)
        b, a = ops_b.get(name, zero), ops_a.get(name, zero)
        for value in ("host_self", "device_self", "device_total"):
            assert row[f"{value}_us_before"] == b[f"{value}_us"] and row[f"{value}_us_after"] == a[f"{value}_us"]
            pair = (row[f"{value}_us_before"], row[f"{value}_us_after"])
            expected = None if None in pair else pair[1] - pair[0]  # unknown on a side: the change is unknown
            assert row[f"{value}_delta_us"] == expected, (name, value)
        if name == "(unattributed)":  # no operator ran on the host for it: host times unknown, own time on the GPU
            assert None in (a["host_self_us"], b["host_self_us"])
        own_a = (a["host_self_us"] or 0.0) + a["device_self_us"]
        own_b = (b["host_self_us"] or 0.0) + b["device_self_us"]
        assert row["delta_us"] == own_a - own_b
    assert checked_raw > 0.9 * frame.height
    # device self time adds up to all GPU time of each trace (counted from the raw events)
    for side, path in (("before", BEFORE), ("after", AFTER)):
        gpu = sum(max(e["dur"], 0) for e in raw(path) if e.get("cat") in GPU_CATS and e.get("ph") == "X")
        assert frame[f"device_self_us_{side}"].sum() == pytest.approx(gpu, abs=1e-6)
    assert set(frame.filter(pl.col("status") == "added")["name"]) == (set(ops_a) - set(ops_b))


def test_mean_step(hta: Comparison) -> None:
    steps = hta.steps()
    step = steps.row(0, named=True)
    assert step["name"] == "Step"
    assert step["mean_us_before"] == pytest.approx(raw_mean_step(BEFORE), abs=1e-6)
    assert step["mean_us_after"] == pytest.approx(raw_mean_step(AFTER), abs=1e-6)
    assert round(step["mean_us_before"] / 1e3, 1) == 77.5 and round(step["mean_us_after"] / 1e3, 1) == 124.2
    # the categories add up to the step, on both sides and in the delta
    rest = steps.filter(pl.col("name") != "Step")
    for column in ("mean_us_before", "mean_us_after", "delta_us"):
        assert rest[column].sum() == pytest.approx(step[column], abs=1e-6)
    assert hta.header("before").endswith("6 steps · span 465.275 ms")


def test_normalized_matching_pairs_renamed_kernels(hta: Comparison) -> None:
    frame = Comparison(hta.before, hta.after, match="normalized").kernels()
    before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
    rules = dict(zip(frame["name"], frame["match_rule"], strict=True))
    row = frame.filter(pl.col("name") == "ampere_sgemm_128x128_tn").row(0, named=True)
    assert (row["name_after"], row["match_rule"]) == ("volta_sgemm_128x128_tn", "arch")
    assert (row["calls_before"], row["total_us_before"]) == before["ampere_sgemm_128x128_tn"]
    assert (row["calls_after"], row["total_us_after"]) == after["volta_sgemm_128x128_tn"]
    for r in frame.iter_rows(named=True):  # every row: the figures of the names it pairs
        name_before = r["name"] if r["status"] != "added" else ""
        assert (r["calls_before"], r["total_us_before"]) == before.get(name_before, (0, 0))
        assert (r["calls_after"], r["total_us_after"]) == after.get(r["name_after"] or "", (0, 0))
    paired = frame.filter(~pl.col("match_rule").is_in(["exact", "unmatched"]))
    # each side's names appear once: pairs + unmatched cover both traces exactly
    assert frame.height == len(before.keys() | after.keys()) - paired.height
    assert sorted(frame.filter(pl.col("status") != "added")["name"]) == sorted(before)
    assert sorted(frame.filter(pl.col("status") != "removed")["name_after"]) == sorted(after)
    assert rules["volta_sgemm_128x32_nt"] == "unmatched"  # never hidden
    assert paired.height == 12 and set(paired["match_rule"]) == {"arch", "tile", "template"}


def test_normalization_rules() -> None:
    assert normalized_name("sm80_xmma_gemm_f16f16_tilesize128x128x32_stage4_kernel", 1) == normalized_name(
        "sm90_xmma_gemm_f16f16_tilesize128x128x32_stage4_kernel", 1
    )
    assert normalized_name("ampere_sgemm_128x64_nn", 2) == normalized_name("volta_sgemm_64x32_nn", 2)
    assert normalized_name("void f<float, 4>(float*)") == normalized_name("void f<half, 8>(half*)")
    pairs = pair_names(["sm80_gemm_128x64", "a", "x_sm80"], ["sm90_gemm_128x64", "a", "x_sm90"], "normalized")
    assert pairs.rows() == [
        ("a", "a", "exact"),
        ("sm80_gemm_128x64", "sm90_gemm_128x64", "arch"),
        ("x_sm80", None, "unmatched"),
        (None, "x_sm90", "unmatched"),
    ]
    # a normalised name shared by two kernels on one side pairs nothing
    ambiguous = pair_names(["volta_k_32x32"], ["ampere_k_64x64", "ampere_k_128x64"], "normalized")
    assert ambiguous["match_rule"].to_list() == ["unmatched"] * 3


def test_same_trace_is_unchanged() -> None:
    path = str(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")
    comparison = load_comparison(path, path, use_cache=False)
    frame = comparison.kernels()
    expected = raw_kernels(SAMPLES / "gpt2_train_bf16.pt.trace.json.gz")
    assert frame.height == len(expected)
    assert set(frame["status"]) == {"unchanged"} and frame["delta_us"].abs().max() == 0
    assert dict(zip(frame["name"], frame["calls_after"], strict=True)) == {n: c for n, (c, _) in expected.items()}


def test_per_step_gpt2_pair(shared_dir: Path) -> None:
    """gpt2_train_bf16 vs gpt2_train_big (the same model, more steps): per step, almost no change."""
    small = shared_dir / "traces" / "gpt2_train_bf16.pt.trace.json.gz"
    big = shared_dir / "traces" / "gpt2_train_big.pt.trace.json.gz"
    comparison = load_comparison(str(small), str(big), per_step=True)
    step_counts = []
    for path in (small, big):  # steps counted in the raw text: distinct ProfilerStep#N names
        with gzip.open(path) as fh:
            text = fh.read()
        step_counts.append(len(set(re.findall(rb'"name": ?"ProfilerStep#(\d+)"', text))))
    assert (comparison.step_count("before"), comparison.step_count("after")) == tuple(step_counts)
    totals = Comparison(comparison.before, comparison.after).kernels()
    per_step = comparison.kernels()
    joined = totals.join(per_step, on="name", suffix="_ps")
    for side, steps in zip(("before", "after"), step_counts, strict=True):
        assert (joined[f"total_us_{side}_ps"] == joined[f"total_us_{side}"] / steps).all()
        assert (joined[f"calls_{side}_ps"] == joined[f"calls_{side}"] / steps).all()
    before_total, after_total = per_step["total_us_before"].sum(), per_step["total_us_after"].sum()
    totals_ratio = totals["total_us_after"].sum() / totals["total_us_before"].sum()
    assert totals_ratio > 12  # in totals, AFTER (40 steps) has 12.6x the kernel time of BEFORE (3 steps)
    assert abs(after_total - before_total) / before_total < 0.06  # per step: 68.7 vs 64.9 ms (5.5%)
    # What is left is the first step, which runs extra kernels in both traces: without it, the
    # kernels of the other steps (each step's kernel table, from its own window) are within 0.5%.
    steady = []
    for profile in (comparison.before, comparison.after):
        rest = profile.step_numbers()[1:]
        steady.append(sum(profile.kernels(step=s)["total_us"].sum() for s in rest) / len(rest))
    assert abs(steady[1] - steady[0]) / steady[0] < 0.005
    assert (per_step["status"].is_in(["added", "removed"])).sum() == 0
    moved = totals.filter(pl.col("status") == "increased").height
    assert moved > 0.8 * totals.height  # in totals, nearly everything grows (more steps)


def test_cli_export_summary_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], hta: Comparison) -> None:
    out = tmp_path / "k.csv"
    args = ["diff", str(BEFORE), str(AFTER), "--view", "kernels", "--filter", "sgemm", "--top", "5", "-o", str(out)]
    assert run_cli(args) == 0
    rows = list(csv.DictReader(out.open()))
    expected = hta.kernels().filter(pl.col("name").str.contains("(?i)sgemm")).head(5)
    assert [r["name"] for r in rows] == expected["name"].to_list()
    before, after = raw_kernels(BEFORE), raw_kernels(AFTER)
    for r in rows:
        assert float(r["delta_us"]) == after.get(r["name"], (0, 0))[1] - before.get(r["name"], (0, 0))[1]
    capsys.readouterr()
    assert run_cli(["diff", str(BEFORE), str(AFTER), "--summary", "--top", "3"]) == 0
    printed = capsys.readouterr().out
    assert "BEFORE  " + str(BEFORE) + " · 6 steps" in printed and "AFTER   " + str(AFTER) in printed
    assert "▲ new" in printed and "▼ gone" in printed and "Biggest kernels regressions" in printed
    assert run_cli(["diff", str(BEFORE), str(tmp_path)]) == 2  # a trace against a job (a directory)
    assert "cannot compare a job" in capsys.readouterr().err
    assert run_cli(["diff", str(BEFORE), str(AFTER), "--view", "steps"]) == 2
    assert run_cli(["diff", str(BEFORE), str(AFTER), "--match", "fuzzy", "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "--view needs -o" in err and "--match must be one of" in err and "Traceback" not in err


def table_rows(path: Path) -> list[tuple[str, int]]:
    """(name, calls) of each row of a torch ``key_averages()`` text file, read with str.split:
    every table's rows (a row printed in two tables, sorted two ways, counted once), the name
    cut at the width of the first column."""
    lines = path.read_text().splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("-----")]
    rows = set()
    for top, head_end, bottom in zip(seps[0::3], seps[1::3], seps[2::3], strict=False):
        header = tuple(re.split(r"\s{2,}", lines[top + 1].strip()))
        width = len(lines[top].split("  ")[0])
        rows.update((width, header, line) for line in lines[head_end + 1 : bottom])
    named = []
    for width, header, line in rows:
        cells = re.split(r"\s{2,}", line[width:].strip())
        named.append((line[:width].strip(), int(cells[header.index("# of Calls") - 1])))
    return named


def table_calls(path: Path) -> collections.Counter[str]:
    calls: collections.Counter[str] = collections.Counter()
    for name, count in table_rows(path):
        calls[name] += count
    return calls


def test_text_tables_compared(capsys: pytest.CaptureFixture[str]) -> None:
    """Two torch tables (GPT-2 training, a DDP job): names repeated in a table are one row, summed."""
    before, after = SAMPLES / "gpt2_train_bf16.tables.txt", SAMPLES / "ddp_nccl_streams.tables.txt"
    comparison = load_comparison(str(before), str(after), use_cache=False)
    frame = comparison.ops()
    calls_b, calls_a = table_calls(before), table_calls(after)
    assert frame.height == len(calls_b.keys() | calls_a.keys())
    for row in frame.iter_rows(named=True):
        assert (row["calls_before"], row["calls_after"]) == (calls_b.get(row["name"], 0), calls_a.get(row["name"], 0))
        assert row["host_self_delta_us"] == row["host_self_us_after"] - row["host_self_us_before"]
    assert set(frame.filter(pl.col("status") == "added")["name"]) == calls_a.keys() - calls_b.keys()
    repeated = comparison.notes("ops")
    rows_per_name = collections.Counter(name for name, _ in table_rows(before))
    twice = sum(1 for count in rows_per_name.values() if count > 1)
    assert len(repeated) == 2 and repeated[0].startswith(f"{before}: {twice} operator name(s) appear in more than")
    assert run_cli(["diff", str(before), str(after), "--view", "steps", "-o", "-"]) == 2  # a table has no steps
    assert "has no per-step timeline" in capsys.readouterr().err
