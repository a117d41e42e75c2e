"""The package as pyproject.toml ships it: every folder of the code is a listed package.

A folder left out of ``[tool.setuptools] packages`` works from the checkout (editable install) but
is missing from the wheel; this finds it without building one.
"""

from __future__ import annotations

import tomllib
from support import ROOT

OUTSIDE_THE_PACKAGE = {"tests", "benchmarks", "scripts", "samples", "docs", "native", "build", "dist"}


def test_every_code_folder_is_a_listed_package() -> None:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(settings["packages"])
    found = {"profview"}
    for init in ROOT.rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if not parts or parts[0] in OUTSIDE_THE_PACKAGE or parts[0].startswith("."):
            continue
        found.add(".".join(("profview", *parts)))
    assert found == listed, f"not in pyproject: {sorted(found - listed)}; listed, not found: {sorted(listed - found)}"
    assert any(path.suffix == ".tcss" for path in (ROOT / "tui").rglob("*.tcss"))
    assert settings["package-data"] == {"*": ["*.tcss"]}
