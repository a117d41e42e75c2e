"""Messages the viewer's widgets and workers post: small dataclasses, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.screen import Screen

from ..profiles.iteration_views import IterationScope
from ..profiles.trace_profile import Profile

if TYPE_CHECKING:
    from ..diff.comparison import Comparison
    from ..diff.job_comparison import JobComparison
    from ..jobs.job import Job


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
class TableShown(Message):
    """A table view shows new rows (filtered, sorted, or a new frame); ``view`` is the FrameView."""

    view: Any


@dataclass
class StepChosen(Message):
    """A step was selected in the Steps view (None: all steps)."""

    step: int | None


@dataclass
class IterationChosen(Message):
    """An iteration was chosen in the Iterations view (None: all of them)."""

    scope: IterationScope | None


@dataclass
class LoadPhase(Message):
    """The loading worker started a new phase, or made progress (shown on the loading screen)."""

    phase: str


@dataclass
class DrillReady(Message):
    """The drill-down worker's outcome: the screen to push, or why there is none.  ``token``:
    which request it answers (one cancelled with Esc, or overtaken by a newer one, is dropped)."""

    token: int
    outcome: Screen[Any] | str


@dataclass
class RankOpened(Message):
    """The worker opening a rank of a job loaded its trace (``outcome``), or says why it could not."""

    token: int
    rank: int
    outcome: Profile | str


# -- compare mode (profview diff) -------------------------------------------------------------
@dataclass
class ComparisonLoaded(Message):
    """Both profiles of a ``profview diff`` are loaded; ``frames`` maps each compare tab to its
    diff frame, or to the reason it cannot be shown."""

    comparison: Comparison
    frames: dict[str, Any]


# -- jobs (profview JOB, profview diff JOB_A JOB_B) -----------------------------------------------
@dataclass
class JobOpened(Message):
    """Every rank of a job is summarised."""

    job: Job


@dataclass
class JobsCompared(Message):
    """Both jobs of a ``profview diff JOB_A JOB_B`` are opened and compared."""

    comparison: JobComparison
