"""What the app's mixins use of the app, as a Protocol: the mixins' methods take ``self: ViewerApp``.

:class:`~profview.tui.app.ProfviewApp` is built from mixins with one job each (navigation,
drill-down workers, compare mode); this Protocol names what they read and call on the app, so the
type checker checks both sides instead of being told to look away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widget import Widget
    from textual.worker import Worker

    from ..diff.comparison import Comparison
    from ..profiles.trace_profile import Profile
    from .widgets.table_view import FrameView
    from .workers import DetachedThreads


class ViewerApp(Protocol):
    """The viewer app as its mixins see it."""

    path: str
    no_cache: bool
    comm_pattern: str | None
    step_range: str | None
    profile: Profile | None
    compare: dict[str, Any] | None
    comparison: Comparison | None
    loaded: bool
    linked: bool
    keys_held_for: Widget | None
    threads: DetachedThreads
    search_text: str
    awaited: int | None
    tokens: int

    @property
    def screen(self) -> Screen[object]: ...

    def frame_view(self) -> FrameView | None: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None, /) -> object: ...

    def pop_screen(self) -> object: ...

    def switch_screen(self, screen: Screen[Any], /) -> object: ...

    def post_message(self, message: Any, /) -> bool: ...

    def compare_screen(self) -> Any: ...

    def goto_row(self, view: FrameView, number: int) -> None: ...

    def search_in(self, view: FrameView, direction: int, from_row: int | None = None) -> None: ...

    def filter_text(self) -> str: ...

    def next_token(self) -> int: ...

    async def show_progress_unless_done(self, worker: Worker[Any], token: int, what: str) -> None: ...

    def take_answer(self, token: int) -> bool: ...

    def compute_drill(self, token: int, build: Callable[[], Screen[Any] | str]) -> Worker[None]: ...

    async def start_drill(self, build: Callable[[], Screen[Any] | str], what: str) -> None: ...

    async def drill_moved(self, side: str, row: dict[str, Any]) -> None: ...


__all__ = ["ViewerApp"]
