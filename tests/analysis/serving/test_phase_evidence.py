"""Issue 40, item 1: an iteration's phase comes from its tokens, its annotation's word is a hint.

The witness renames the H100 eager KV-cache loop's ranges in a copy of its raw JSON (the prefill
range called ``decode``, or every range ``decode_token`` as the issue's loop did) and classifies each
iteration itself from the raw events: the index tensor of its first ``aten::embedding`` call is
``[requests, new tokens each]``, so one new token per request is decode and several is prefill.
``samples/h100_decode_eager_kv.facts.json`` says what was recorded (a 4 × 32 prompt, 12 decodes of 4 × 1).
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path

import polars as pl
import pytest
from serving_witness import EAGER, facts, raw_iterations
from support import loaded, raw_events, sample

import profview
from profview.diff.comparison import load_comparison
from profview.profiles.iteration_views import phase_line


def renamed_copy(tmp_path: Path, prefill: str, decode: str) -> Path:
    """The eager loop with its ``prefill`` and ``decode`` ranges renamed (nothing else changed)."""
    with gzip.open(sample(EAGER), "rt") as fh:
        whole = json.load(fh)
    for event in whole["traceEvents"]:
        if event.get("cat") == "user_annotation" and event.get("name") in ("prefill", "decode"):
            event["name"] = prefill if event["name"] == "prefill" else decode
    path = tmp_path / f"eager_{prefill}_{decode}.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(whole, fh)
    return path


def raw_phases() -> list[str]:
    """Each iteration's phase from its embedding call's index tensor, read with the standard library."""
    complete = [e for e in raw_events(EAGER) if e.get("ph") == "X"]
    embeddings = sorted((e for e in complete if e.get("name") == "aten::embedding"), key=lambda e: e["ts"])
    phases = []
    for it in raw_iterations(EAGER, lambda n: n in ("prefill", "decode")):
        first = next(e for e in embeddings if it["ts"] <= e["ts"] <= it["ts"] + it["host_us"])
        _requests, *each = first["args"]["Input Dims"][1]
        phases.append("decode" if math.prod(each) == 1 else "prefill")
    return phases


@pytest.mark.parametrize(("prefill", "decode"), [("decode", "decode"), ("decode_token", "decode_token")])
def test_renamed_prefill_keeps_its_phase(tmp_path: Path, prefill: str, decode: str) -> None:
    """Named ``decode`` (or every range ``decode_token``), the prompt iteration is still the prefill:
    the phases and their figures equal the correctly named trace's, and ``found_by`` says both."""
    recipe = facts(EAGER)
    copy = profview.load(renamed_copy(tmp_path, prefill, decode), use_cache=False)
    table = copy.iterations()
    expected = ["prefill"] + ["decode"] * recipe["decode_iterations"]
    assert raw_phases() == expected
    assert table["phase"].to_list() == expected
    assert table["tokens"].to_list() == [recipe["prefill_tokens"]] + [recipe["decode_tokens_each"]] * 12
    assert table["requests"].to_list() == [recipe["batch"]] * 13  # the index tensor's first dimension
    assert table["found_by"][0] == f"annotation; tokens say prefill: {recipe['prompt']} per request (named decode)"
    assert set(table["found_by"][1:].to_list()) == {"annotation"}
    phases = copy.phases()
    original = loaded(EAGER).phases()
    assert phases.equals(original)
    decode_gpu = sum(r["gpu_us"] for r in raw_iterations(EAGER, lambda n: n == "decode"))
    row = phases.filter(pl.col("phase") == "decode").row(0, named=True)
    assert row["gpu_us_per_token"] == pytest.approx(decode_gpu / (4 * 12), abs=1e-3)
    assert copy.phase_lines() == loaded(EAGER).phase_lines()
    assert copy.phase_lines()[1].startswith("decode: 12 iterations × 4 tokens, ")


def test_diff_per_phase_inherits_the_phases(tmp_path: Path) -> None:
    """``diff`` of the loop against its renamed copy: the same phases on both sides, each unchanged."""
    comparison = load_comparison(str(sample(EAGER)), str(renamed_copy(tmp_path, "decode", "decode")), use_cache=False)
    frame = comparison.view("phases")
    assert frame["name"].to_list() == ["prefill", "decode"]
    assert frame["iterations_before"].to_list() == frame["iterations_after"].to_list() == [1, 12]
    assert set(frame["status"].to_list()) == {"unchanged"} and set(frame["delta_us"].to_list()) == {0.0}


def test_a_word_the_tokens_cannot_overrule_stands() -> None:
    """Where every iteration processes one token per request (the decodes alone), the tokens cannot
    tell a prompt from a decode: the words stand (no phase is invented from a lone count)."""
    from profview.analysis.serving.iterations import phase_from_tokens
    from profview.analysis.serving.names import parse_iteration_name

    decodes = loaded(EAGER).iterations().filter(pl.col("phase") == "decode")
    names = ["prefill", *decodes["name"].to_list()[1:]]  # the first decode called a prefill
    facts_ = [parse_iteration_name(n) for n in names]
    phases = [f.phase if f else "unknown" for f in facts_]
    found = phase_from_tokens(facts_, phases, decodes["tokens"].to_list(), decodes["requests"].to_list(), "annotation")
    assert phases == names and set(found) == {"annotation"}


def test_phase_line_shows_the_token_range_when_it_varies() -> None:
    """Filed by name alone (the defect), the 13 iterations of the loop are one phase of 4 to 128
    tokens: its line says so (``× 4–128 tokens, median 4``) instead of hiding the prompt in the median."""
    from profview.analysis.serving.phases import phase_table

    table = loaded(EAGER).iterations().with_columns(pl.lit("decode").alias("phase"))
    (row,) = phase_table(table).iter_rows(named=True)
    tokens = [r["tokens"] for r in raw_iterations(EAGER, lambda n: n in ("prefill", "decode"))]
    assert (row["tokens_min"], row["tokens_max"]) == (min(tokens), max(tokens)) == (4, 128)
    assert phase_line(row).startswith(f"decode: 13 iterations × 4–128 tokens, median {statistics.median(tokens):g}, ")
