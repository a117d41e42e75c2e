"""The gate's reports parsed back, against its JSON: JUnit (``xml.etree``: counts that match the
elements, not significant and untested as ``<skipped>`` or ``<failure>`` per ``--inconclusive``,
``time``), GitHub workflow commands (escaped as GitHub decodes them, at most 10 annotations of a
level, the rest in one line), Markdown (HTML escaped), text (names cut with ``…``, "1 rule");
the exit codes, an internal error's 4 included."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from gate_witness import edited_copy
from support import run_cli, sample

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
RULES = ["kernels.total_us > +5%", "steps.duration_us > +3%", 'phases["decode"].gpu_us_per_token > +2%']


@pytest.fixture(scope="module")
def slower(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The GPT-2 sample and a copy with every kernel 50% slower."""
    original = sample(GPT2)
    copy = tmp_path_factory.mktemp("slower") / "after.pt.trace.json.gz"
    assert edited_copy(original, copy, lambda e, _: 1.5) > 100
    return original, copy


def _run(slower: tuple[Path, Path], capsys: pytest.CaptureFixture[str], fmt: str, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    args = ["diff", str(slower[0]), str(slower[1]), *[a for r in RULES for a in ("--fail-if", r)], "--format", fmt]
    code = run_cli([*args, *extra])
    return code, capsys.readouterr().out


def _decode(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_escapes_as_documented_and_keeps_under_the_cap(slower: tuple[Path, Path],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(slower, capsys, "json")
    report = json.loads(out)
    regressions = report["counts"]["regression"]
    assert code == 1 and regressions > 10
    code, out = _run(slower, capsys, "github")
    lines = out.splitlines()
    assert code == 1
    parsed = [re.fullmatch(r"::(error|warning|notice) title=([^:,]*)::(.*)", line) for line in lines]
    assert all(parsed), lines
    for found in parsed:
        assert found is not None
        assert not re.search(r"%(?!25|0A|0D|3A|2C)", found.group(2)) and not re.search(r"%(?!25|0A|0D)", found.group(3))
    errors = [p for p in parsed if p and p.group(1) == "error"]
    assert len(errors) == 10 and _decode(errors[0].group(2)) == "profview gate: regression"
    more = _decode(errors[-1].group(3))
    assert _decode(errors[-1].group(2)) == "profview gate: more" and more.startswith(f"{regressions - 9} more error")
    warnings = [p for p in parsed if p and p.group(1) == "warning"]
    assert [_decode(w.group(2)) for w in warnings] == ["profview gate: not significant"]
    assert _decode(parsed[-1].group(3)).startswith("verdict: regression")


def test_junit_counts_match_and_inconclusive_is_skipped_or_failed(slower: tuple[Path, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for choice, code_wanted in (("pass", 1), ("fail", 1)):
        code, out = _run(slower, capsys, "junit", "--inconclusive", choice)
        assert code == code_wanted
        suite = ET.fromstring(out.split("?>", 1)[1])
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases) == 3
        failed = [c for c in cases if c.find("failure") is not None]
        skipped = [c for c in cases if c.find("skipped") is not None]
        assert int(suite.get("failures", "-1")) == len(failed) and int(suite.get("skipped", "-1")) == len(skipped)
        assert float(suite.get("time", "nan")) > 0 and all(float(c.get("time", "nan")) >= 0 for c in cases)
        by_rule = {c.get("name"): c for c in cases}
        kernels, steps, phases = (by_rule[r] for r in RULES)
        assert kernels.find("failure") is not None and "+50.00%" in (kernels.find("failure").get("message") or "")
        element = "skipped" if choice == "pass" else "failure"
        unsure = steps.find(element)
        assert unsure is not None and "not significant" in (unsure.get("message") or "")
        assert "+" in (unsure.get("message") or "") and "too few steps" in (unsure.get("message") or "")
        assert phases.find(element) is not None and "untested" in (phases.find(element).get("message") or "")
        assert len(failed) == (1 if choice == "pass" else 3) and len(skipped) == (2 if choice == "pass" else 0)


def test_markdown_escapes_html_and_text_cuts_names_with_an_ellipsis(slower: tuple[Path, Path],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, markdown = _run(slower, capsys, "markdown")
    rows = [line for line in markdown.splitlines() if line.startswith("| kernels.")]
    assert rows and all("<" not in r and ">" not in r.replace("->", "") for r in rows)
    capsys.readouterr()
    run_cli(["diff", str(slower[0]), str(slower[1]), "--fail-if", 'kernels["cutlass"].total_us > +5%', "--format",
             "markdown"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| kernels")]
    assert rows and all("&lt;" in r and "<" not in r for r in rows)  # the template arguments kept, escaped
    _, text = _run(slower, capsys, "text")
    assert "tests over 3 rules" in text
    capsys.readouterr()
    run_cli(["diff", str(slower[0]), str(slower[1]), "--fail-if", 'kernels["cutlass"].total_us > +5%'])
    text = capsys.readouterr().out
    shown = [line.split(None, 1)[1].rsplit(": ", 1)[0] for line in text.splitlines() if line.startswith("    regression")]  # noqa: E501
    shown = [name.split(": ")[0] for name in shown]
    assert shown and all(len(name) == 120 and name.endswith("…") for name in shown)  # 147 characters, cut
    capsys.readouterr()
    assert run_cli(["diff", str(slower[0]), str(slower[0]), "--fail-if", RULES[0]]) == 0
    assert "tests over 1 rule " in capsys.readouterr().out


def test_an_internal_error_exits_4(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import profview.gate.run

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(profview.gate.run, "run_gate", broken)
    trace = str(sample(GPT2))
    assert run_cli(["diff", trace, trace, "--fail-if", RULES[0]]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error" in err[0] and "a bug" in err[0]


def test_an_unsigned_percent_on_microseconds_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(sample(GPT2))
    assert run_cli(["diff", trace, trace, "--fail-if", "kernels.total_us > 5%"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'5%'" in err[0] and "+5%" in err[0]


def test_the_text_says_which_names_were_not_tested(capsys: pytest.CaptureFixture[str]) -> None:
    """``N tested (M more under min_share …, not tested)``: the two counts are apart and together
    every kernel name of the trace (witness: the raw kernel events, counted by name)."""
    from witness import raw_kernels

    trace = sample("resnet50_train_amp.pt.trace.json.gz")
    code = run_cli(["diff", str(trace), str(trace), "--fail-if", "kernels.total_us > +5%"])
    line = next(x for x in capsys.readouterr().out.splitlines() if "kernels.total_us > +5%:" in x)
    found = re.search(r": (\d+) tested \((\d+) more under min_share 0\.5% of the time, not tested\)", line)
    assert code == 0 and found, line
    assert int(found[1]) + int(found[2]) == len(raw_kernels(trace))
