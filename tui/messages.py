"""Messages the viewer's widgets and workers post: small dataclasses, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from ..profiles.trace_profile import Profile

if TYPE_CHECKING:
    from ..diff.comparison import Comparison


@dataclass
class ProfileLoaded(Message):
    """The loading worker read the profile; ``linked`` is False while the model is still being built
    (a large trace shows its kernel table first)."""

    profile: Profile
    linked: bool = True


@dataclass
class ProfileLinked(Message):
    """The model of a large trace (operators, steps, overview) is ready."""


@dataclass
class LoadFailed(Message):
    """The loading worker failed with a one-line reason."""

    reason: str


@dataclass
class DrillRequested(Message):
    """Enter on a table row: open what it launched, or what launched it."""

    view: str
    row: dict[str, Any]


@dataclass
class StepChosen(Message):
    """A step was selected in the Steps view (None: all steps)."""

    step: int | None


@dataclass
class LoadPhase(Message):
    """The loading thread started a new phase (shown on the loading screen)."""

    phase: str


# -- compare mode (profview diff) -------------------------------------------------------------
@dataclass
class ComparisonLoaded(Message):
    """Both profiles of a ``profview diff`` are loaded; ``frames`` maps each compare tab to its
    diff frame, or to the reason it cannot be shown."""

    comparison: Comparison
    frames: dict[str, Any]
