"""Hostile input, fifth round (issue 55): the gate, SQL and JSON surfaces, and the cache across
versions.  Each test re-makes its input, names the item it checks (``test_55_<item>_``;
``medium``/``low`` for the others) and fails on the code before its fix.

Linearity is shown by ratios (the work at two sizes, :mod:`scaling`), never by a time limit."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from scaling import assert_linear
from support import KERNEL, run_cli

from profview.analysis.diff.gate_rules import evaluate, parse_rule
from profview.errors import ProfviewError


def kernel_samples(names: int, steps: int) -> pl.DataFrame:
    """The gate's kernel samples of ``names`` kernels over ``steps`` steps (each name in each step)."""
    return pl.DataFrame(
        {
            "name": [f"k{i}" for _ in range(steps) for i in range(names)],
            "step": [s for s in range(steps) for _ in range(names)],
            "total_us": [float(1 + i % 7) for _ in range(steps) for i in range(names)],
        }
    )


def test_55_1_a_min_share_over_many_names_is_linear() -> None:
    """``min_share`` summed every name's total once per name: 64k names took 44 s."""
    rule = parse_rule("kernels.total_us > +5%")

    def gate(names: int) -> None:
        frame = kernel_samples(names, 1)
        result = evaluate(rule, [frame], [frame], min_share=0.5, draws=10)
        assert result.below_share == names  # each name holds under 0.5% of the whole

    assert_linear(gate, 1_000)


def test_55_1_b_many_steps_are_linear() -> None:
    """Missing step columns were added one rebuild at a time (10k steps: 20 s)."""
    rule = parse_rule("kernels.total_us > +5%")

    def gate(steps: int) -> None:
        before = kernel_samples(2, steps)
        after = before.filter(pl.col("step") % 3 != 0)  # steps where a name is missing count 0
        result = evaluate(rule, [before], [after], draws=10)
        assert len(result.tests) == 2

    assert_linear(gate, 500)


def test_55_1_c_the_matrix_is_the_pivot() -> None:
    """The names × steps matrix built by a scatter is the one a pivot gives (the witness), with a
    name missing from steps (0 in an additive view) and a name counted twice in one step (summed)."""
    import numpy as np

    from profview.analysis.diff.gate_rules import _matrices

    frame = pl.DataFrame({"name": ["a", "a", "b", "a", "c"], "step": [3, 3, 3, 9, 1], "total_us": [1.0, 2.0, 5.0, 4.0, 7.0]})
    (matrix,) = _matrices([frame], ["b", "a", "z"], "total_us", 0.0)
    assert matrix.tolist() == [[0.0, 5.0, 0.0], [0.0, 3.0, 4.0], [0.0, 0.0, 0.0]]
    (medians,) = _matrices([frame], ["a"], "total_us", None)
    assert np.allclose(medians, [[3.5, 3.0, 4.0]])  # a missing step takes the name's own median


def test_55_2_a_selector_runs_in_linear_time(tmp_path: Path) -> None:
    """``kernels["(a+)+$"]`` over one 33-character name ran past 60 s in Python's re."""
    rule = parse_rule('kernels["(a+)+$"].total_us > +5%')

    def gate(size: int) -> None:
        frame = pl.DataFrame({"name": ["a" * size + "!"], "step": [0], "total_us": [1.0]})
        assert evaluate(rule, [frame], [frame], draws=10).tests == []

    assert_linear(gate, 3)


def test_55_2_b_a_selector_over_long_names_is_linear() -> None:
    """``.*gemm.*xmma`` over 10 KB names took 51 s."""
    rule = parse_rule('kernels[".*gemm.*xmma"].total_us > +5%')

    def gate(size: int) -> None:
        frame = pl.DataFrame({"name": ["gemm" * size + f"{i}" for i in range(20)], "step": [0] * 20, "total_us": [1.0] * 20})
        assert evaluate(rule, [frame], [frame], draws=10).tests == []

    assert_linear(gate, 300)


@pytest.mark.parametrize(
    ("selector", "reason"),
    [
        ("(" * 100_000, "unclosed group"),
        ("(" * 300 + "a" + ")" * 300, "nested"),
        ("(?=a)", "look-around"),
    ],
)
def test_55_medium_a_selector_the_engine_cannot_run_is_one_line(selector: str, reason: str) -> None:
    """100,000 nested groups were a RecursionError in Python's re; a look-ahead passed the check
    and then failed in the engine."""
    with pytest.raises(ProfviewError) as caught:
        parse_rule(f'kernels["{selector}"].total_us > +5%')
    message = str(caught.value)
    assert reason in message and "\n" not in message and len(message) < 600


def test_55_medium_a_rule_is_parsed_in_linear_time() -> None:
    """A rule of many quotes and brackets is read left to right, once."""

    def parse(size: int) -> None:
        with pytest.raises(ProfviewError):
            parse_rule('kernels["' + '"] "]' * size + '.total_us > +5% ]')

    assert_linear(parse, 2_000)
