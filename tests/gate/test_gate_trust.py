"""A gate a CI user can trust, on real traces of 3, 8 and 40 steps (the 8-step one is the first
eight steps of gpt2_train_big, cut from its JSON; slowed copies are the JSON with kernel durations
edited):

- A/A: windows of one run against other windows of it (3, 5, 8 and 20 steps a side) exit 0 in at
  least 95% of gates with the default options, and a run against itself exits 0 on the command line;
- an injected slowdown is caught: +20% on a kernel of about 2% of the GPU time on 3 steps, +10% on
  8, a 3× slower kernel that runs every third step, a 20% slower top operator;
- the decisions agree with SciPy's bootstrap (``scipy.stats.bootstrap``, one-sided, at the level
  the gate decided at) on the same per-step samples.

The kernel shares and the operators' kernels come from the raw JSON (the second witness)."""

from __future__ import annotations

import bisect
import collections
import json
import re
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from gate_witness import cropped_copy, edited_copy, load_raw, raw_kernel_share, slowed_copy
from support import run_cli, sample

import profview
from profview.analysis.diff.gate_rules import decide, evaluate, parse_rule
from profview.analysis.diff.gate_stats import NOISE_FLOOR_PCT, bh_level

BIG = "traces/gpt2_train_big.pt.trace.json.gz"
THREE = "gpt2_train_bf16.pt.trace.json.gz"
#: The gate a user writes first: the docs' rules.
DEFAULT_RULES = [
    "kernels.total_us > +5%", "kernels.calls > +0", "ops.total_us > +5%", 'ops["aten::copy_"].calls > +0',
    "steps.duration_us > +3%", "steps.kernel_us > +2%", "efficiency.mfu < -2pt", "categories.total_us > +5%",
]


def _args(rules: list[str]) -> list[str]:
    return [a for r in rules for a in ("--fail-if", r)]


@pytest.fixture(scope="module")
def big_path(shared_dir: Path) -> Path:
    return shared_dir / BIG


@pytest.fixture(scope="module")
def big(big_path: Path) -> profview.Profile:
    return profview.load(str(big_path))


@pytest.fixture(scope="module")
def eight(big_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Steps 1-8 and 9-16 of gpt2_train_big, each its own trace."""
    folder = tmp_path_factory.mktemp("eight")
    first, second = folder / "first.pt.trace.json.gz", folder / "second.pt.trace.json.gz"
    assert len(cropped_copy(big_path, first, 0, 8)) == 8
    assert len(cropped_copy(big_path, second, 8, 8)) == 8
    return first, second


def _frame_gate(big: profview.Profile, rules: list[str], before: list[int], after: list[int]) -> list[str]:
    """The regressions of a gate of ``before`` steps against ``after`` steps of one profile, with the
    gate's own per-step (and per-call) samples narrowed to them."""
    results = []
    for i, text in enumerate(rules):
        rule = parse_rule(text)
        frame = big.gate_samples(rule.view)
        b, a = frame.filter(pl.col("step").is_in(before)), frame.filter(pl.col("step").is_in(after))
        calls = big.gate_calls(rule.view)
        evidence = None
        if calls is not None and min(len(before), len(after)) < 4:
            evidence = ([calls.filter(pl.col("step").is_in(before))], [calls.filter(pl.col("step").is_in(after))])
        results.append(evaluate(rule, [b], [a], min_share=0.5, seed=i, draws=500, calls=evidence))
    decide(results)
    return [f"{t.rule.text} {t.name}" for r in results for t in r.tests if t.status == "regression"]


@pytest.mark.parametrize("width", [3, 5, 8, 20])
def test_aa_windows_of_one_run_exit_0_in_95pct_of_gates(big: profview.Profile, width: int) -> None:
    steps = sorted(big.gate_samples("steps")["step"].to_list())
    assert len(steps) == 40
    rng = np.random.default_rng(width)
    if width == 20:  # halves, odd against even, and random splits
        splits = [(steps[:20], steps[20:]), (steps[::2], steps[1::2])]
        for _ in range(8):
            order = rng.permutation(steps).tolist()
            splits.append((sorted(order[:20]), sorted(order[20:])))
    else:
        pairs = [(a, b) for a in range(41 - width) for b in range(41 - width) if a + width <= b or b + width <= a]
        chosen = rng.choice(len(pairs), size=20, replace=False)
        splits = [(steps[pairs[i][0] : pairs[i][0] + width], steps[pairs[i][1] : pairs[i][1] + width]) for i in chosen]
    failed = [found for before, after in splits if (found := _frame_gate(big, DEFAULT_RULES, before, after))]
    assert len(failed) <= 0.05 * len(splits), failed


def test_aa_on_the_command_line_exits_0(big_path: Path, eight: tuple[Path, Path],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    three = sample(THREE)
    for before, after in ((three, three), eight, (big_path, big_path)):
        capsys.readouterr()
        assert run_cli(["diff", str(before), str(after), *_args(DEFAULT_RULES), "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["verdict"] == "pass" and report["counts"]["regression"] == 0 and report["tested"] > 20


def _kernel_near(path: Path, low: float, high: float) -> list[str]:
    shares = raw_kernel_share(path)
    return sorted((n for n, s in shares.items() if low <= s <= high), key=lambda n: -shares[n])


def _failed(capsys: pytest.CaptureFixture[str], rule: int = 0) -> list[str]:
    return json.loads(capsys.readouterr().out)["rules"][rule]["failed"]


def test_20pct_on_a_2pct_kernel_is_caught_on_3_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = sample(THREE)
    kernels = _kernel_near(original, 1.5, 3.0)[:2]
    assert kernels
    for i, kernel in enumerate(kernels):
        slowed = tmp_path / f"slow{i}.pt.trace.json.gz"
        assert slowed_copy(original, slowed, kernel, 1.20) > 0
        capsys.readouterr()
        assert run_cli(["diff", str(original), str(slowed), "--fail-if", "kernels.total_us > +5%", "--format", "json"]) == 1  # noqa: E501
        report = json.loads(capsys.readouterr().out)
        found = {r["name"]: r for r in report["rules"][0]["results"]}[kernel]
        assert report["rules"][0]["failed"] == [kernel] and found["noise"] == "per-call"
        assert found["change"] == pytest.approx(20.0, abs=0.5) and 5.0 < found["bound"] < found["change"]


def test_10pct_on_a_2pct_kernel_is_caught_on_8_steps(eight: tuple[Path, Path], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    original = eight[0]
    kernel = _kernel_near(original, 1.5, 3.0)[0]
    slowed = tmp_path / "slow.pt.trace.json.gz"
    assert slowed_copy(original, slowed, kernel, 1.10) > 0
    assert run_cli(["diff", str(original), str(slowed), "--fail-if", "kernels.total_us > +5%", "--format", "json"]) == 1
    assert _failed(capsys) == [kernel]


def test_a_3x_slower_kernel_run_every_third_step_is_caught(eight: tuple[Path, Path], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The optimizer's kernel kept in every third step only (gradient accumulation), then 3× slower."""
    original = eight[0]
    shares = raw_kernel_share(original)
    kernel = max((n for n in shares if "multi_tensor_apply" in n), key=lambda n: shares[n])
    before, after = tmp_path / "before.pt.trace.json.gz", tmp_path / "after.pt.trace.json.gz"
    edited_copy(original, before, lambda e, step: 1.0 if e["name"] != kernel or (step or 0) % 3 == 0 else None)
    edited_copy(original, after, lambda e, step: 1.0 if e["name"] != kernel else (3.0 if (step or 0) % 3 == 0 else None))  # noqa: E501
    kept = {s for s in range(2, 10) if s % 3 == 0}
    assert kept == {3, 6, 9}
    assert run_cli(["diff", str(before), str(after), "--fail-if", "kernels.total_us > +5%", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    found = {r["name"]: r for r in report["rules"][0]["results"]}[kernel]
    assert report["rules"][0]["failed"] == [kernel] and found["change"] == pytest.approx(200.0, rel=0.01)


def _op_kernels(path: Path) -> dict[str, set[int]]:
    """Per operator name, the correlation ids of the kernels launched inside its calls (a runtime
    or driver call on the same thread inside its range), from the raw events."""
    events = load_raw(path)["traceEvents"]
    launches = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):  # noqa: E501
            launches[(e["pid"], e["tid"])].append((e["ts"], e["args"]["correlation"]))
    for found in launches.values():
        found.sort()
    out: dict[str, set[int]] = collections.defaultdict(set)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            thread = launches.get((e["pid"], e["tid"]), [])
            i = bisect.bisect_left(thread, (e["ts"], -1))
            while i < len(thread) and thread[i][0] <= e["ts"] + e["dur"]:
                out[e["name"]].add(thread[i][1])
                i += 1
    return out


def test_a_20pct_slower_top_operator_is_caught(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The aten operator with the most kernel time (from the raw events: aten::mm, 28% of it), its
    kernels 20% slower."""
    original = sample(THREE)
    events = load_raw(original)["traceEvents"]
    kernel_us = {e["args"].get("correlation"): e["dur"] for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"}  # noqa: E501
    under = _op_kernels(original)
    device = {op: sum(kernel_us.get(c, 0) for c in ids) for op, ids in under.items() if op.startswith("aten::")}
    op = max(device, key=lambda o: device[o])
    assert device[op] / sum(kernel_us.values()) > 0.2
    correlations = under[op]
    slowed = tmp_path / "op.pt.trace.json.gz"
    assert edited_copy(original, slowed, lambda e, _: 1.2 if e["args"].get("correlation") in correlations else 1.0)
    assert run_cli(["diff", str(original), str(slowed), "--fail-if", f'ops["^{re.escape(op)}$"].total_us > +5%',
                    "--fail-if", "ops.total_us > +5%", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["rules"][0]["failed"] == [op] and op in report["rules"][1]["failed"]
    # once a step, 3% of the kernel time: min_share weighs operators by their time, not their calls
    share = sum(kernel_us.get(c, 0) for c in under["aten::_log_softmax_backward_data"]) / sum(kernel_us.values())
    assert share > 0.005
    assert any(r["name"] == "aten::_log_softmax_backward_data" for r in report["rules"][1]["results"])


def _per_step(big: profview.Profile, steps: list[int], names: list[str], scale: dict[str, float]) -> dict[str, np.ndarray]:  # noqa: E501
    frame = big.gate_samples("kernels").filter(pl.col("step").is_in(steps))
    out = {}
    for name in names:
        rows = dict(frame.filter(pl.col("name") == name).select("step", "total_us").iter_rows())
        out[name] = np.array([rows.get(s, 0.0) for s in steps]) * scale.get(name, 1.0)
    return out


def test_decisions_agree_with_scipys_bootstrap(big: profview.Profile) -> None:
    """20 steps against 20 others, three kernels slowed 10% on the after side: profview's decision per
    kernel against a regression by ``scipy.stats.bootstrap`` (mean per step, one-sided lower bound at
    the level the gate decided at, the same floor) on the same samples."""
    stats = pytest.importorskip("scipy.stats")
    steps = sorted(big.gate_samples("steps")["step"].to_list())
    rule = parse_rule("kernels.total_us > +2%")
    kernels = big.gate_samples("kernels").filter(pl.col("step") >= 0)
    agree = total = 0
    for split, (before, after) in enumerate(((steps[:20], steps[20:]), (steps[::2], steps[1::2]))):
        shares = kernels.group_by("name").agg(pl.col("total_us").sum()).sort("total_us", descending=True)
        names = shares["name"].head(12).to_list()
        slowed = {n: 1.10 for n in names[split : split + 3]}
        b = kernels.filter(pl.col("step").is_in(before))
        a = kernels.filter(pl.col("step").is_in(after)).with_columns(
            pl.when(pl.col("name").is_in(list(slowed))).then(pl.col("total_us") * 1.10).otherwise("total_us")
            .alias("total_us")
        )
        result = evaluate(rule, [b.filter(pl.col("name").is_in(names))], [a.filter(pl.col("name").is_in(names))],
                          seed=split)
        tested = decide([result])
        alpha = bh_level(sum(t.status == "regression" for t in result.tests), tested, 0.05)
        samples_b, samples_a = _per_step(big, before, names, {}), _per_step(big, after, names, slowed)
        for test in result.tests:
            ci = stats.bootstrap(
                (samples_b[test.name], samples_a[test.name]), lambda x, y, axis=-1: (
                    np.mean(y, axis=axis) / np.mean(x, axis=axis) - 1) * 100,
                confidence_level=1 - alpha, alternative="greater", method="percentile", n_resamples=2000,
                random_state=np.random.default_rng(0), vectorized=True,
            ).confidence_interval
            scipy_says = ci.low > max(rule.threshold, NOISE_FLOOR_PCT)
            total += 1
            agree += scipy_says == (test.status == "regression")
            if test.name in slowed:
                assert test.status == "regression" and scipy_says, test.name
    assert total == 24 and agree >= 0.95 * total


def test_student_t_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    from profview.analysis.diff.gate_stats import t_quantile, t_sf

    for df in (1.0, 2.0, 4.5, 18.0, 200.0):
        for t in (-3.0, -0.5, 0.0, 0.7, 2.5, 8.0):
            assert t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-15)
        for confidence in (0.9, 0.99, 0.99975):
            assert t_quantile(confidence, df) == pytest.approx(stats.t.ppf(confidence, df), rel=1e-8)


def test_several_captures_measure_run_to_run_noise(tmp_path: Path, eight: tuple[Path, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Two captures a side (steps 1-8 and 9-16 of one run, on both sides): the noise is the spread
    between them, said so, and the gate passes."""
    for side in ("before", "after"):
        (tmp_path / side).mkdir()
        for i, path in enumerate(eight):
            shutil.copy(path, tmp_path / side / f"run{i}.pt.trace.json.gz")
    assert run_cli(["diff", str(tmp_path / "before"), str(tmp_path / "after"), *_args(DEFAULT_RULES[:5]),
                    "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(r["noise"] == ["run-to-run"] for r in report["rules"] if r["tested"])
