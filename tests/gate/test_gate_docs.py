"""docs/gate.md's CI examples run as written (issue 41): every ``profview diff`` line of the guide
and its gate file, in a folder laid out as the examples say (``traces/baseline``, ``traces/pr``:
here two captures each of the GPT-2 sample), give the exit code of a passing gate and write their
outputs, parsed back."""

from __future__ import annotations

import re
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support import ROOT, run_cli, sample

GUIDE = ROOT / "docs" / "gate.md"


def _lines() -> list[str]:
    found = []
    for line in GUIDE.read_text().splitlines():
        at = line.find("profview diff traces/baseline traces/pr")
        if at >= 0 and "\\" not in line:
            found.append(line[at + len("profview ") :].split(" ||")[0].strip())
    return found


def _gate_file() -> str:
    block = re.search(r"```toml\n(.*?)```", GUIDE.read_text(), re.S)
    assert block is not None
    return block.group(1)


@pytest.mark.parametrize("command", _lines())
def test_guide_command_runs_as_written(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for side in ("baseline", "pr"):
        folder = tmp_path / "traces" / side
        folder.mkdir(parents=True)
        for run in range(2):
            shutil.copy(sample("gpt2_train_bf16.pt.trace.json.gz"), folder / f"run{run}.pt.trace.json.gz")
    (tmp_path / "gate.toml").write_text(_gate_file())
    monkeypatch.chdir(tmp_path)
    assert run_cli(shlex.split(command)) == 0
    if "gate.xml" in command:
        assert ET.parse(tmp_path / "gate.xml").getroot().get("failures") == "0"
    if "gate.md" in command:
        assert (tmp_path / "gate.md").read_text().startswith("## profview gate:")


def test_the_guide_has_both_ci_examples() -> None:
    commands = _lines()
    assert any("--format github" in c for c in commands) and any("--format junit" in c for c in commands)
