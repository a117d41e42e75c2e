"""A tiny MFU is printed in plain decimals (two significant digits), never in exponent form; the
figure agrees with the JSON document's and with the FLOP rate over the peak, both printed."""

from __future__ import annotations

import json
import re

import pytest
from support import run_cli, sample


def test_a_tiny_mfu_is_plain_decimals(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    path = str(sample("tracelens_mi300_normalization_layers.json.gz"))
    assert run_cli(["summary", path, "-n", "1"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    found = re.search(r"([\d.]+) GFLOP/s, MFU (\S+)% of the \S+ \S+ peak ([\d.]+) TFLOP/s", text)
    assert found is not None
    rate_gflops, shown, peak_tflops = float(found[1]), found[2], float(found[3])
    assert "e" not in shown.lower()
    assert run_cli(["summary", path, "--format", "json"]) == 0
    mfu = json.loads(capsys.readouterr().out)["efficiency"]["mfu_pct"]
    assert 0 < mfu < 0.1  # the case: below the one-decimal range
    assert float(shown) == pytest.approx(mfu, rel=0.05)
    assert float(shown) == pytest.approx(rate_gflops / (peak_tflops * 1000) * 100, rel=0.05)
