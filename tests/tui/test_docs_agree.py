"""The README, docs/, the ``?`` help and the app name the same tabs with the same keys: a tab
number written in the docs is the key the app binds for that title, and each screen's help line
lists that screen's tabs (compare: Kernels, Operators, Steps, Moved, Phases)."""

from __future__ import annotations

import re

from support import ROOT

from profview.tui.compare.screen import COMPARE_PANES, COMPARE_TITLES
from profview.tui.keymap import KEYMAP, help_sections
from profview.tui.main.screen import PANES, TITLES

#: "tab 9 Graphs", "Tab **0 Iterations**", "**Memory** tab (5)"
NUMBER_TITLE = re.compile(r"[Tt]ab \**(\d) ?\**([A-Z][a-z]+)")
TITLE_NUMBER = re.compile(r"\*\*([A-Z][a-z]+)\*\* tab \((\d)\)")


def main_keys() -> dict[str, str]:
    """Tab title → the key the app binds to it (from the keymap, not from the docs)."""
    keys = {}
    for key in KEYMAP:
        if key.id.startswith("pane."):
            keys[TITLES[key.id.removeprefix("pane.")]] = key.keys
    return keys


def test_every_main_tab_has_its_number_as_key() -> None:
    keys = main_keys()
    assert [keys[TITLES[pane]] for pane in PANES] == [str(i % 10) for i in range(1, len(PANES) + 1)]


def test_tab_numbers_in_the_readme_and_docs_are_the_apps() -> None:
    keys = main_keys()
    wrong = []
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(docs) > 5
    for path in docs:
        text = path.read_text()
        if path.name in ("jobs.md", "diff.md"):  # a job's and compare mode's own tabs
            continue
        found = [(n, t) for n, t in NUMBER_TITLE.findall(text)] + [(n, t) for t, n in TITLE_NUMBER.findall(text)]
        wrong += [f"{path.name}: tab {n} {t}" for n, t in found if t in keys and keys[t] != n]
    assert not wrong
    navigation = (ROOT / "docs" / "navigation.md").read_text()
    assert "(1-7, Tab)" not in navigation


def test_compare_tabs_in_docs_help_and_app_agree() -> None:
    compare = [k for k in KEYMAP if k.scope == "compare" and k.action.startswith("show(")]
    assert [k.action for k in compare] == [f"show('{p}')" for p in COMPARE_PANES]
    assert [k.keys for k in compare] == [str(i) for i in range(1, len(COMPARE_PANES) + 1)]
    titles = [COMPARE_TITLES[p] for p in COMPARE_PANES]
    listed = ", ".join(f"{i} {t}" for i, t in enumerate(titles, 1))
    assert listed in " ".join((ROOT / "docs" / "diff.md").read_text().split())
    sections = dict(help_sections(("compare", "table"), "compare"))
    line = " ".join(f"{k} {h}" for k, h in sections["This screen: compare"])
    assert f"compare: {' '.join(str(i) for i in range(1, len(titles) + 1))}, Tab" in line
    assert all(t in line for t in titles)
    assert "Overview" not in " ".join(h for _, h in sections["Everywhere"])
