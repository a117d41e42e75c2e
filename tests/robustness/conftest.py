"""Fixtures of the hostile-input tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["compiled", "pure"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both readers (the compiled scanner and PROFVIEW_PURE_PYTHON=1) must answer alike."""
    if request.param == "pure":
        monkeypatch.setenv("PROFVIEW_PURE_PYTHON", "1")
    return str(request.param)
