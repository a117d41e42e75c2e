"""The gate's rule grammar and its statistics (issue 41): every example of the issue parses to what
it says; a bad rule is one line naming the bad token; Benjamini–Hochberg against a step-down
computed another way; the bootstrap is seeded (the same answer twice)."""

from __future__ import annotations

import numpy as np
import pytest
from support import run_cli, sample

from profview.analysis.diff.gate_rules import parse_rule
from profview.analysis.diff.gate_stats import NOISE_FLOOR_PCT, Calls, assess_change, benjamini_hochberg, block_length
from profview.errors import ProfviewError

EXAMPLES = {
    "kernels.total_us > +5%": ("kernels", None, "total_us", ">", 5.0, "pct"),
    'kernels["gemm|xmma"].total_us > +5%': ("kernels", "gemm|xmma", "total_us", ">", 5.0, "pct"),
    'ops["aten::copy_"].calls > +0': ("ops", "aten::copy_", "calls", ">", 0.0, "abs"),
    "steps.duration_us > +3%": ("steps", None, "duration_us", ">", 3.0, "pct"),
    'phases["decode"].gpu_us_per_token > +2%': ("phases", "decode", "gpu_us_per_token", ">", 2.0, "pct"),
    "memory.peak_bytes > +256MiB": ("memory", None, "peak_bytes", ">", 256 * 2**20, "abs"),
    "efficiency.mfu < -2pt": ("efficiency", None, "mfu", "<", -2.0, "pt"),
    "new_kernels.share > 1%": ("new_kernels", None, "share", ">", 1.0, "level"),
    "steps.duration_us >= +1.5ms": ("steps", None, "duration_us", ">=", 1500.0, "abs"),
}


@pytest.mark.parametrize("text", list(EXAMPLES))
def test_issue_examples_parse(text: str) -> None:
    rule = parse_rule(text)
    assert (rule.view, rule.selector, rule.metric, rule.op, rule.threshold, rule.kind) == EXAMPLES[text]


def test_sql_rule_parses_query_and_threshold() -> None:
    rule = parse_rule("sql:SELECT step, sum(total_us) AS t FROM kernels GROUP BY step > +5%")
    assert (rule.view, rule.sql, rule.op, rule.threshold, rule.kind) == (
        "sql", "SELECT step, sum(total_us) AS t FROM kernels GROUP BY step", ">", 5.0, "pct"
    )


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("kernal.total_us > +5%", "kernal"),
        ("kernels.total_ms > +5%", "total_ms"),
        ("kernels.total_us > +5parsecs", "+5parsecs"),
        ('kernels["gemm("].total_us > +5%', "gemm("),
        ("memory.peak_bytes > +5ms", "+5ms"),
        ("kernels.total_us > +2pt", "+2pt"),
        ("kernels.total_us +5%", "+5%"),
    ],
)
def test_bad_rule_names_the_token(text: str, token: str) -> None:
    with pytest.raises(ProfviewError) as caught:
        parse_rule(text)
    assert repr(token) in str(caught.value) and "\n" not in str(caught.value)


def test_bad_rule_on_the_command_line_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(sample("resnet50_train_amp.pt.trace.json.gz"))
    code = run_cli(["diff", trace, trace, "--fail-if", "kernels.total_us > +5furlongs"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'+5furlongs'" in err[0]


def _bh_witness(p: list[float], q: float) -> set[int]:
    """Benjamini–Hochberg as its paper states it, step by step from the largest p-value down."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    for rank in range(m, 0, -1):
        if p[order[rank - 1]] <= rank / m * q:
            return set(order[:rank])
    return set()


def test_benjamini_hochberg_matches_the_step_down() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        p = np.concatenate([rng.uniform(0, 1, rng.integers(1, 40)), rng.uniform(0, 0.01, rng.integers(0, 5))])
        found = set(np.nonzero(benjamini_hochberg(p, 0.05))[0].tolist())
        assert found == _bh_witness(p.tolist(), 0.05)


def test_block_length_grows_as_the_cube_root() -> None:
    assert [block_length(n) for n in (1, 3, 8, 20, 40, 1000)] == [1, 2, 2, 3, 4, 10]


def test_bootstrap_is_seeded_and_a_shift_is_found() -> None:
    rng = np.random.default_rng(3)
    before = [rng.normal(100, 2, size=(3, 30))]
    after = [before[0] * np.array([[1.0], [1.05], [0.97]])]
    one = assess_change(before, after, "pct", ">", 2.0, seed=11)
    two = assess_change(before, after, "pct", ">", 2.0, seed=11)
    assert np.array_equal(one.se, two.se) and np.array_equal(one.p, two.p)
    assert one.change.round(6).tolist() == pytest.approx([0.0, 5.0, -3.0])
    assert one.p[1] < 1e-3 and one.p[0] > 0.5 and one.bound(0.05)[1] > 2.0
    assert one.method == ("step-to-step",) * 3


def test_the_bound_is_past_the_threshold_exactly_when_p_is_at_most_alpha() -> None:
    rng = np.random.default_rng(5)
    for trial in range(40):
        steps = int(rng.integers(4, 40))
        before = [rng.normal(100, rng.uniform(0.5, 10), size=(6, steps))]
        after = [rng.normal(100, rng.uniform(0.5, 10), size=(6, steps)) * rng.uniform(0.95, 1.15, size=(6, 1))]
        tested = assess_change(before, after, "pct", ">", 3.0, seed=trial, draws=200)
        for alpha in (0.05, 0.01, 0.001):
            bound = tested.bound(alpha)
            assert ((tested.p <= alpha) == (bound > tested.threshold)).all()


def test_too_few_steps_is_said_and_never_certain() -> None:
    """Two or three steps a side: no step bootstrap.  Without per-call evidence the test has no
    noise estimate (p = 1, no bound), with it the calls' spread; never a zero-width interval or p = 0."""
    before = [np.array([[100.0, 101.0, 99.0]])]
    after = [np.array([[150.0, 151.0, 149.0]])]
    tested = assess_change(before, after, "pct", ">", 5.0, seed=0)
    assert tested.method == ("too few steps",) and tested.p.tolist() == [1.0] and np.isnan(tested.bound(0.05)[0])
    calls = (
        [Calls(np.array([50.0, 49.0, 51.0, 50.5, 49.5, 50.0]), 3, np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1] * 3))],
        [Calls(np.array([75.0, 74.0, 76.0, 75.5, 74.5, 75.0]), 3, np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1] * 3))],
    )
    tested = assess_change(before, after, "pct", ">", 5.0, seed=0, calls=calls)
    low = tested.bound(0.05)[0]
    assert tested.method == ("per-call",) and 0 < tested.p[0] < 0.05 and 5.0 < low < tested.change[0]


def test_one_capture_a_side_has_a_noise_floor() -> None:
    rng = np.random.default_rng(1)
    before = [rng.normal(100, 0.01, size=(1, 40))]
    after = [before[0] * 1.015]
    tested = assess_change(before, after, "pct", ">", 1.0, seed=0)
    assert tested.threshold == NOISE_FLOOR_PCT and tested.p[0] > 0.5  # +1.5% is under the 2% floor
    runs = assess_change([before[0], before[0] * 1.001], [after[0], after[0] * 1.001], "pct", ">", 1.0, seed=0)
    assert runs.threshold == 1.0 and runs.method == ("run-to-run",)


@pytest.mark.parametrize("rule", ["kernels.total_us > 5%", "steps.duration_us > 3%", "ops.calls > 10%"])
def test_an_unsigned_percent_on_a_figure_that_is_no_percentage_is_a_usage_error(rule: str) -> None:
    with pytest.raises(ProfviewError) as caught:
        parse_rule(rule)
    assert "unsigned" in str(caught.value) and "+" in str(caught.value)
