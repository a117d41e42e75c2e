"""docs/query.md's command examples run as written (from a folder where ``samples/`` is the
checkout's), each exiting 0 with an answer; the ``-o`` one writes its file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from support import ROOT, SAMPLES, run_cli

DOC = ROOT / "docs" / "query.md"


def _examples() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", DOC.read_text(), re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith("profview ")]


def test_the_doc_has_examples() -> None:
    assert len(_examples()) >= 10


@pytest.mark.parametrize("line", _examples())
def test_example_runs(line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "samples").symlink_to(SAMPLES)
    monkeypatch.chdir(tmp_path)
    args = shlex.split(line)[1:]
    assert run_cli(args) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    if "-o" in args:
        assert (tmp_path / args[args.index("-o") + 1]).stat().st_size > 0
    elif "--tables" not in args and "--format" not in args:
        assert re.search(r"\(([1-9][\d,]*) rows?\)\n$", out), out


def test_python_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doc's Python block, run as written: only the kernel table is built."""
    monkeypatch.chdir(ROOT)
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[0]
    scope: dict[str, object] = {}
    exec(compile(block, str(DOC), "exec"), scope)
    tables = scope["tables"]
    assert tables.built() == ["kernels"]  # type: ignore[attr-defined]
