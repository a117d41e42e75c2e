"""The gate's noise model on real traces (issue 41's "Done when"):

- A/A: a trace against itself passes every rule;
- two halves of one run's steps (gpt2_train_big: 40 ProfilerSteps) flag at most 1 of 100 rules;
- a +5% slowdown of one kernel holding >= 2% of the GPU time, in 20 steps against 20 others, is
  caught in >= 95% of randomised trials (frame-level: the kernel's per-step µs scaled on the after
  side of a random split); a +1% one passes.

The kernel shares come from the raw JSON (the second witness), not from profview's tables."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from gate_witness import raw_kernel_share, raw_op_names
from support import run_cli, sample

import profview
from profview.analysis.diff.gate_rules import decide, evaluate, parse_rule

BIG = "traces/gpt2_train_big.pt.trace.json.gz"
ALL_RULES = [
    "kernels.total_us > +5%", "kernels.calls > +0", 'kernels["gemm|xmma|cutlass"].total_us > +3%',
    'ops["aten::copy_"].calls > +0', "ops.total_us > +5%", "steps.duration_us > +3%", "steps.kernel_us > +2%",
    "new_kernels.share > 1%", "efficiency.mfu < -2pt", "memory.peak_bytes > +256MiB",
    'phases["decode"].gpu_us_per_token > +2%',
]


@pytest.fixture(scope="module")
def big(shared_dir: Path) -> profview.Profile:
    return profview.load(str(shared_dir / BIG), use_cache=False)


def _rules_args(rules: list[str]) -> list[str]:
    return [a for r in rules for a in ("--fail-if", r)]


@pytest.mark.parametrize("name", ["gpt2_train_bf16.pt.trace.json.gz", "resnet50_train_amp.pt.trace.json.gz"])
def test_a_trace_against_itself_passes_every_rule(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(sample(name))
    code = run_cli(["diff", trace, trace, *_rules_args(ALL_RULES), "--format", "json"])
    import json

    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["verdict"] == "pass"
    statuses = {r["status"] for rule in report["rules"] for r in rule["results"]}
    assert statuses == {"pass"} and report["tested"] > 20


def _halves_rules(shares: dict[str, float], ops: list[str]) -> list[str]:
    """100 rules: one per kernel of >= 0.2% (its exact name), then step, efficiency and operator rules
    (the most called operators of the raw events)."""
    kernels = sorted((n for n, s in shares.items() if s >= 0.2), key=lambda n: -shares[n])
    rules = [f'kernels["^{re.escape(n)}$"].total_us > +5%' for n in kernels[:60]]
    rules += [f'kernels["^{re.escape(n)}$"].calls > +0' for n in kernels[: 80 - len(rules)]]
    rules += ["steps.duration_us > +5%", "steps.kernel_us > +5%", "steps.cpu_exec_us > +5%", "efficiency.mfu < -2pt"]
    rules += [f'ops["^{re.escape(o)}$"].calls > +0' for o in ops[: 100 - len(rules)]]
    assert len(rules) == 100
    return rules


def test_two_halves_of_one_run_flag_at_most_one_rule_in_100(big: profview.Profile, shared_dir: Path) -> None:
    shares, ops = raw_kernel_share(shared_dir / BIG), raw_op_names(shared_dir / BIG, 40)
    rules = [parse_rule(r) for r in _halves_rules(shares, ops)]
    steps = sorted(big.gate_samples("steps")["step"].to_list())
    assert len(steps) == 40
    for first in (steps[:20], steps[::2]):  # contiguous halves, and odd against even steps
        results = []
        for i, rule in enumerate(rules):
            frame = big.gate_samples(rule.view)
            before = frame.filter(pl.col("step").is_in(first))
            after = frame.filter(~pl.col("step").is_in(first))
            results.append(evaluate(rule, [before], [after], min_share=0.0, seed=i))
        assert decide(results) >= 100
        flagged = [r.rule.text for r in results if any(t.status == "regression" for t in r.tests)]
        assert len(flagged) <= 1, flagged


def _trials(big: profview.Profile, shares: dict[str, float], factor: float, trials: int) -> float:
    kernels = big.gate_samples("kernels")
    steps = np.array(sorted(kernels["step"].unique().to_list()))
    candidates = sorted(n for n, s in shares.items() if s >= 2.0)
    assert len(candidates) >= 5
    rng = np.random.default_rng(41)
    rule = parse_rule("kernels.total_us > +2%")
    caught = 0
    for trial in range(trials):
        split = rng.permutation(steps)
        before_steps, after_steps = split[:20].tolist(), split[20:].tolist()
        name = candidates[int(rng.integers(len(candidates)))]
        before = kernels.filter(pl.col("step").is_in(before_steps))
        after = kernels.filter(pl.col("step").is_in(after_steps)).with_columns(
            pl.when(pl.col("name") == name).then(pl.col("total_us") * factor).otherwise("total_us").alias("total_us")
        )
        result = evaluate(rule, [before], [after], min_share=0.5, seed=trial)
        decide([result])
        caught += any(t.name == name and t.status == "regression" for t in result.tests)
    return caught / trials


def test_a_5pct_slowdown_is_caught_and_a_1pct_one_passes(big: profview.Profile, shared_dir: Path) -> None:
    shares = raw_kernel_share(shared_dir / BIG)
    assert _trials(big, shares, 1.05, 20) >= 0.95
    assert _trials(big, shares, 1.01, 20) == 0.0
