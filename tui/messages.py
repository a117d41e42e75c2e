"""Messages the viewer's widgets and workers post."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from ..trace_profile import Profile


class ProfileLoaded(Message):
    """The loading worker read the profile; ``linked`` is False while the model is still being built
    (a large trace shows its kernel table first)."""

    def __init__(self, profile: Profile, linked: bool = True) -> None:
        super().__init__()
        self.profile = profile
        self.linked = linked


class ProfileLinked(Message):
    """The model of a large trace (operators, steps, overview) is ready."""


class LoadFailed(Message):
    """The loading worker failed with a one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class DrillRequested(Message):
    """Enter on a table row: open what it launched, or what launched it."""

    def __init__(self, view: str, row: dict[str, Any]) -> None:
        super().__init__()
        self.view = view
        self.row = row


class StepChosen(Message):
    """A step was selected in the Steps view (None: all steps)."""

    def __init__(self, step: int | None) -> None:
        super().__init__()
        self.step = step


class LoadPhase(Message):
    """The loading thread started a new phase (shown on the loading screen)."""

    def __init__(self, phase: str) -> None:
        super().__init__()
        self.phase = phase
