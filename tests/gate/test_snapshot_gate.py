"""The gate on two memory snapshots: each rule compares figures witnessed from the pickles
themselves (loaded here with a no-globals unpickler and summed by hand)."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import pytest
from support import SAMPLES, run_cli

from profview.errors import ProfviewError
from profview.gate.snapshot_gate import evaluate_snapshot_rules, parse_snapshot_rule
from profview.profiles.snapshot_profile import load_snapshot

SAMPLE = SAMPLES / "magma27_memory_snapshot.pickle"
LIVE = ("active_allocated", "active_pending_free")


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"no globals here ({module}.{name})")


def _changed(tmp_path: Path) -> tuple[Path, int, int, int]:
    """The sample with its largest live block freed; that block's size and the allocated bytes before."""
    with open(SAMPLE, "rb") as fh:
        snap = _PlainData(fh).load()
    live = [b for s in snap["segments"] for b in s["blocks"] if b["state"] in LIVE]
    largest = max(live, key=lambda b: b["size"])
    largest["state"] = "inactive"
    path = tmp_path / "changed.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    return path, largest["size"], sum(b["size"] for b in live), largest["address"]


def test_rules_on_witnessed_figures(tmp_path: Path) -> None:
    changed, freed, allocated, address = _changed(tmp_path)
    blocks = load_snapshot(SAMPLE).view("blocks")
    site = blocks.filter(blocks["address"] == address)["site"][0]
    rules = [parse_snapshot_rule(r) for r in (
        "totals.allocated_bytes < -100MiB", f'sites["^{re.escape(site)}$"].bytes < -1MiB',
        "totals.reserved_bytes > +0%",
    )]
    findings = evaluate_snapshot_rules(load_snapshot(SAMPLE), load_snapshot(changed), rules)
    total, einsum, reserved = findings
    assert (total.before, total.after) == (allocated, allocated - freed) and total.past == (freed > 100 * 2**20)
    assert einsum.before - einsum.after == freed and einsum.past  # that block's site lost exactly its size
    assert reserved.before == reserved.after and not reserved.past


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed, *_ = _changed(tmp_path)
    assert run_cli(["diff", str(SAMPLE), str(changed), "--fail-if", "totals.allocated_bytes < -1MiB"]) == 1
    assert "regression: totals.allocated_bytes < -1MiB" in capsys.readouterr().out
    assert run_cli(["diff", str(SAMPLE), str(changed), "--fail-if", "totals.allocated_bytes > +1MiB"]) == 0
    assert "gate: pass" in capsys.readouterr().out


@pytest.mark.parametrize("rule", ["kernels.total_us > +5%", "sites.count > +3MiB", 'totals["x"].allocated_bytes > 1',
                                  'sites["("].bytes > +1%', "totals.allocated_bytes > 5%"])
def test_bad_rules(rule: str) -> None:
    with pytest.raises(ProfviewError, match="bad rule"):
        parse_snapshot_rule(rule)


def test_a_snapshot_rule_is_a_gate_rule() -> None:
    """A snapshot's rule is read as every gate rule is: the same Rule, the same threshold kinds,
    a bad threshold said in the gate's own words."""
    from profview.analysis.diff.gate_rules import Rule, parse_rule

    rule = parse_snapshot_rule('peak["softmax"].bytes > +256MiB')
    assert isinstance(rule, Rule)
    assert (rule.view, rule.selector, rule.metric, rule.op, rule.threshold, rule.kind) == (
        "peak", "softmax", "bytes", ">", 256 * 2**20, "abs")
    assert parse_snapshot_rule("totals.allocated_bytes > +10%").kind == parse_rule("memory.peak_bytes > +10%").kind
    with pytest.raises(ProfviewError) as snapshot_error:
        parse_snapshot_rule("sites.bytes > +5wk")
    with pytest.raises(ProfviewError) as trace_error:
        parse_rule("memory.peak_bytes > +5wk")
    assert snapshot_error.value.problem.split(":", 1)[1] == trace_error.value.problem.split(":", 1)[1]
