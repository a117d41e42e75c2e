"""The README is a front page a newcomer reads in two minutes: short, no issue numbers, its commands
the ones CI runs, its links and pictures there, its key box the app's keys, and every page of docs/
reachable from one index."""

from __future__ import annotations

import re

from support import ROOT

README = ROOT / "README.md"
INDEX = ROOT / "docs" / "README.md"
#: Pages other branches add (formats being written now); checked as soon as they are there.
PENDING = {"docs/agents.md", "docs/memory_snapshots.md"}
#: "issue 42", "issues 13 and 25", "#42": what a user reading the page cannot follow.
ISSUE = re.compile(r"\bissues? \d+|(?<![\w&/])#\d+\b", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)


def test_readme_is_short_and_names_no_issue() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    for page in (README, INDEX, *(ROOT / "docs" / name for name in ("guide.md", "design.md", "benchmarks.md"))):
        found = ISSUE.findall(page.read_text())
        assert not found, f"{page.name}: {found}"


def test_readme_test_command_is_the_one_ci_runs() -> None:
    text = README.read_text()
    section = text.split("## Run the tests", 1)[1].split("\n## ", 1)[0]
    full, quick = (b.strip() for b in blocks(section, "bash"))
    assert full in (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick == ".venv/bin/python -m pytest -m quick"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'markers = \[.*"quick:', pyproject, re.DOTALL)


def test_links_and_pictures_are_there() -> None:
    missing = []
    for page in (README, INDEX):
        for target in LINK.findall(page.read_text()):
            if target.startswith("http"):
                continue
            path = (page.parent / target).resolve()
            name = path.relative_to(ROOT).as_posix() if ROOT in path.parents or path == ROOT else target
            if not path.exists() and name not in PENDING:
                missing.append(f"{page.name}: {target}")
    assert not missing
    pictures = re.findall(r"!\[[^]]*\]\((docs/[^)]+\.svg)\)", README.read_text())
    assert len(pictures) >= 1
    script = (ROOT / "scripts" / "screenshot.py").read_text()
    for picture in pictures:
        assert (ROOT / picture).read_text().lstrip().startswith("<svg")
        assert f'"{picture.removeprefix("docs/")}"' in script  # written by the script, not by hand


def test_every_docs_page_is_in_the_index() -> None:
    index = INDEX.read_text()
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md")
    assert [p for p in pages if f"]({p})" not in index] == []
    assert "](docs/README.md)" in README.read_text()


def test_key_box_is_the_apps_keys() -> None:
    from profview.tui.keymap import KEYMAP
    from profview.tui.main.screen import TITLES

    box = blocks(README.read_text().split("## Keys", 1)[1], "text")[0]
    tabs = {t: n for n, t in re.findall(r"(\d) ([A-Z][a-z]+)", box)}
    bound = {TITLES[k.id.removeprefix("pane.")]: k.keys for k in KEYMAP if k.id.startswith("pane.")}
    assert tabs == bound
    assert all(len(line) <= 80 for line in box.splitlines())


def test_formats_list_every_reader() -> None:
    section = README.read_text().split("## What it opens", 1)[1].split("\n## ", 1)[0]
    for word in ("Kineto", "JAX", "Nsight Systems", ".sqlite", "rocprofv3", "memory snapshots", "key_averages",
                 "TensorBoard", "PaddlePaddle", "diff"):
        assert word in section, word
    assert "profview mcp" in section
