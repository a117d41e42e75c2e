"""``profview diff BEFORE AFTER --fail-if RULE`` end to end (issue 41): a slowdown injected into a
copy of a real trace is a regression (exit 1) and a small one passes (exit 0); every output format
parsed back (JSON, JUnit by ``xml.etree``, GitHub workflow commands, Markdown); inconclusive and
incomparable exit 3 (``--inconclusive`` chooses); accepted regressions pass until their date;
a gate file; several captures a side; ``-o`` never over an input."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from gate_witness import raw_kernel_share, slowed_copy
from support import run_cli, sample

GPT2 = "gpt2_train_bf16.pt.trace.json.gz"
RULE = "kernels.total_us > +2%"


def _biggest_kernel(path: Path) -> str:
    shares = raw_kernel_share(path)
    return max(shares, key=lambda n: shares[n])


@pytest.fixture(scope="module")
def slowed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The GPT-2 sample and a copy with its biggest kernel 20% slower."""
    original = sample(GPT2)
    kernel = _biggest_kernel(original)
    copy = tmp_path_factory.mktemp("slowed") / "after.pt.trace.json.gz"
    assert slowed_copy(original, copy, kernel, 1.20) > 0
    return original, copy, kernel


def test_big_trace_5pct_caught(shared_dir: Path, tmp_path: Path) -> None:
    """40 steps against the same 40 with one kernel (>= 2% of the GPU time) 5% slower: exit 1,
    the JUnit failure naming it (a +1% one passing is the frame-level trials' and the sample's)."""
    big = shared_dir / "traces/gpt2_train_big.pt.trace.json.gz"
    shares = raw_kernel_share(big)
    kernel = next(n for n in sorted(shares, key=lambda n: -shares[n]) if 2.0 <= shares[n] < 5.0)
    five = tmp_path / "five.pt.trace.json.gz"
    slowed_copy(big, five, kernel, 1.05)
    junit = tmp_path / "gate.xml"
    assert run_cli(["diff", str(big), str(five), "--fail-if", RULE, "--format", "junit", "-o", str(junit)]) == 1
    failures = ET.parse(junit).getroot().findall("./testcase/failure")
    assert len(failures) == 1 and kernel[:100] in (failures[0].get("message") or "")


def test_every_format_parses_back(slowed: tuple[Path, Path, str], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    before, after, kernel = slowed
    args = ["diff", str(before), str(after), "--fail-if", RULE, "--fail-if", "steps.duration_us > +50%"]
    capsys.readouterr()
    assert run_cli([*args, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "profview.gate/2" and report["verdict"] == "regression"
    kernels = report["rules"][0]
    assert kernels["failed"] == [kernel] and report["tested"] == sum(r["tested"] for r in report["rules"])
    found = next(r for r in kernels["results"] if r["name"] == kernel)
    assert found["change"] == pytest.approx(20.0, abs=0.5) and found["bound"] > 2.0 and found["bound_side"] == "lower"

    assert run_cli([*args, "--format", "junit"]) == 1
    suite = ET.fromstring(capsys.readouterr().out.split("?>", 1)[1])
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    assert [c.get("name") for c in suite.findall("testcase")] == [RULE, "steps.duration_us > +50%"]

    assert run_cli([*args, "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert all(re.match(r"^::(error|warning|notice)( title=[^:]*)?::", line) for line in lines)
    assert sum(line.startswith("::error") for line in lines) == 1

    assert run_cli([*args, "--format", "markdown"]) == 1
    markdown = capsys.readouterr().out
    rows = [line for line in markdown.splitlines() if line.startswith(("| kernels.", "| steps."))]
    assert markdown.startswith("## profview gate:") and any("regression" in r for r in rows)
    assert len(rows) == 2 and all("&gt;" in r and ">" not in r.replace("->", "") for r in rows)  # HTML escaped
    assert all(len(re.split(r"(?<!\\)\|", r)) == 9 for r in rows)  # 7 cells, escaped pipes kept in them

    out = tmp_path / "gate.json"
    assert run_cli([*args, "--format", "json", "-o", str(out)]) == 1
    assert json.loads(out.read_text())["verdict"] == "regression"


def test_one_percent_slower_passes(tmp_path: Path) -> None:
    original = sample(GPT2)
    one = tmp_path / "one.pt.trace.json.gz"
    slowed_copy(original, one, _biggest_kernel(original), 1.01)
    assert run_cli(["diff", str(original), str(one), "--fail-if", RULE]) == 0


def test_accepted_regression_passes_until_its_date(slowed: tuple[Path, Path, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before, after, kernel = slowed
    bound = f'kernels["^{re.escape(kernel)}$"].total_us <= +25%'
    accept = ["--accept", bound, "--reason", "new kernel, tracked"]
    assert run_cli(["diff", str(before), str(after), "--fail-if", RULE, *accept, "--until", "2999-01-01"]) == 0
    out = capsys.readouterr().out
    assert "accepted until 2999-01-01" in out and "new kernel, tracked" in out
    assert run_cli(["diff", str(before), str(after), "--fail-if", RULE, *accept, "--until", "2000-01-01"]) == 1
    assert "expired on 2000-01-01" in capsys.readouterr().out


def test_accept_covers_its_names_up_to_its_magnitude(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two kernels slowed, +10% and +50%: a bound on the first passes it alone; a bound of +12% on
    the second does not cover +50%; the rule's own text is no bound (exit 2)."""
    original = sample(GPT2)
    shares = raw_kernel_share(original)
    first, second = sorted(shares, key=lambda n: -shares[n])[:2]
    once, twice = tmp_path / "once.pt.trace.json.gz", tmp_path / "twice.pt.trace.json.gz"
    slowed_copy(original, once, first, 1.10)
    slowed_copy(once, twice, second, 1.50)
    base = ["diff", str(original), str(twice), "--fail-if", RULE, "--format", "json"]

    def accept(name: str) -> list[str]:
        return ["--accept", f'kernels["^{re.escape(name)}$"].total_us <= +12%', "--reason", "known", "--until", "2999-01-01"]  # noqa: E501

    capsys.readouterr()
    assert run_cli([*base, *accept(first)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["rules"][0]["failed"] == [second] and report["accepted"][0]["covers"] == [first]
    assert run_cli([*base, *accept(first), *accept(second)]) == 1
    assert json.loads(capsys.readouterr().out)["rules"][0]["failed"] == [second]
    wide = ["--accept", "kernels.total_us <= +60%", "--reason", "known", "--until", "2999-01-01"]
    assert run_cli([*base, *wide]) == 0
    capsys.readouterr()
    assert run_cli([*base, "--accept", RULE, "--reason", "x", "--until", "2999-01-01"]) == 2
    assert "not a bound" in capsys.readouterr().err


def test_gate_file(slowed: tuple[Path, Path, str], tmp_path: Path) -> None:
    before, after, _ = slowed
    gate = tmp_path / "gate.toml"
    gate.write_text(f'min_share = 1.0\nrules = ["{RULE}"]\n')
    assert run_cli(["diff", str(before), str(after), "--gate", str(gate)]) == 1
    gate.write_text('rules = ["kernels.total_us > +50%"]\n')
    assert run_cli(["diff", str(before), str(after), "--gate", str(gate)]) == 0
    gate.write_text('rulez = ["kernels.total_us > +50%"]\n')
    assert run_cli(["diff", str(before), str(after), "--gate", str(gate)]) == 2
    gate.write_text(f'rules = ["{RULE}"]\n[[accept]]\nrule = "kernels.total_us <= +25%"\nreason = "known"\n'
                    'until = 2999-12-31\n')
    assert run_cli(["diff", str(before), str(after), "--gate", str(gate)]) == 0
    assert run_cli(["diff", str(before), str(after), "--fail-if", RULE, "--accept", "steps.duration_us <= +1%",
                    "--reason", "x", "--until", "2999-01-01"]) == 2


def test_not_significant_passes_unless_chosen(capsys: pytest.CaptureFixture[str]) -> None:
    """The step time of 3 steps has no noise estimate: past a tight threshold under --strict it is
    not significant, which passes (a warning), and with --inconclusive fail exits 3."""
    trace = str(sample(GPT2))
    strict = ["diff", trace, trace, "--fail-if", "steps.duration_us > +1%", "--strict"]
    capsys.readouterr()
    assert run_cli(strict) == 0
    assert "not significant" in capsys.readouterr().out
    assert run_cli([*strict, "--inconclusive", "pass"]) == 0
    assert run_cli([*strict, "--inconclusive", "fail"]) == 3


def test_different_workloads_are_incomparable(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(["diff", str(sample(GPT2)), str(sample("resnet50_train_amp.pt.trace.json.gz")),
                    "--fail-if", RULE, "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3 and report["verdict"] == "incomparable"
    assert any("names the other never ran" in r for r in report["comparability"]["reasons"])


def test_several_captures_a_side(slowed: tuple[Path, Path, str], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    before, after, kernel = slowed
    runs_before, runs_after = tmp_path / "before", tmp_path / "after"
    for folder, source in ((runs_before, before), (runs_after, after)):
        folder.mkdir()
        for i in range(2):
            shutil.copy(source, folder / f"run{i}.pt.trace.json.gz")
    assert run_cli(["diff", str(runs_before), str(runs_after), "--fail-if", RULE, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    captures = next(c for c in report["comparability"]["checks"] if c["what"] == "captures")
    assert (captures["before"], captures["after"]) == ("2", "2") and report["rules"][0]["failed"] == [kernel]


def test_output_never_over_an_input(slowed: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    before, after, _ = slowed
    size = after.stat().st_size
    assert run_cli(["diff", str(before), str(after), "--fail-if", RULE, "-o", str(after), "--force"]) == 2
    assert "refusing to overwrite the input" in capsys.readouterr().err and after.stat().st_size == size


def test_sql_rule(slowed: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A query rule: one test per kernel name, one sample a side (the whole-trace kernels table):
    no noise estimate, so the slowed kernel is not significant (a pass, said), and fails only by
    choice (exit 3)."""
    before, after, kernel = slowed
    rule = "sql:SELECT name, total_us FROM kernels > +2%"
    assert run_cli(["diff", str(before), str(after), "--fail-if", rule, "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["rules"][0]["results"]
    found = {r["name"]: r for r in results}[kernel]
    assert found["status"] == "not significant" and found["noise"] == "too few steps" and found["p"] == 1.0
    assert found["change"] == pytest.approx(20.0, abs=0.5) and found["bound"] is None
    assert run_cli(["diff", str(before), str(after), "--fail-if", rule, "--inconclusive", "fail"]) == 3


def test_bad_inputs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [')
    trace = str(sample(GPT2))
    for args in ([trace, str(broken)], [trace, str(tmp_path / "missing.json")], [trace, str(tmp_path / "*.gz")]):
        capsys.readouterr()
        assert run_cli(["diff", *args, "--fail-if", RULE]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("profview: error: ") and "Traceback" not in err[0]


def test_trace_without_steps_is_one_sample_and_uses_the_calls(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(sample("tracelens_b200_nccl_eager_no_steps.json.gz"))
    assert run_cli(["diff", trace, trace, "--fail-if", RULE, "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["rules"][0]["results"]
    assert results and all(r["samples"] == [1, 1] and r["change"] == 0 and r["status"] == "pass" for r in results)
    assert {r["noise"] for r in results} <= {"per-call", "too few steps"} and any(r["noise"] == "per-call" for r in results)  # noqa: E501


def test_hostile_kernel_names_are_inert_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    import orjson

    hostile = "gemm\x1b]0;owned\x07\x1b[31m\u202eevil"
    original = sample(GPT2)
    kernel = _biggest_kernel(original)
    renamed = tmp_path / "before.pt.trace.json.gz"
    with gzip.open(original, "rb") as fh:
        doc = orjson.loads(fh.read())
    for event in doc["traceEvents"]:
        if event.get("name") == kernel:
            event["name"] = hostile
    with gzip.open(renamed, "wb") as fh:
        fh.write(orjson.dumps(doc))
    after = tmp_path / "after.pt.trace.json.gz"
    slowed_copy(renamed, after, hostile, 1.2)
    for fmt in ("text", "markdown", "github", "junit"):
        capsys.readouterr()
        assert run_cli(["diff", str(renamed), str(after), "--fail-if", RULE, "--format", fmt]) == 1
        out = capsys.readouterr().out
        assert "owned" in out and not any(c in out for c in ("\x1b", "\x07", "\u202e")), fmt
