"""The Steps view: a stacked bar per step, its totals, and the GPU timeline of the chosen step."""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from ..frames import CATEGORIES, CATEGORY_CHAR, CATEGORY_LABELS, CATEGORY_STYLE, fmt_us
from ..sanitize import clean
from ..trace_profile import Profile
from .bars import legend, stacked_bar
from .keymap import bindings
from .messages import StepChosen
from .timeline import Timeline

STEP_LABEL = 22


class StepList(Widget, can_focus=True):
    """One stacked bar per step; Enter narrows the other views to the highlighted step."""

    BINDINGS = bindings("steps", "timeline")
    DEFAULT_CSS = "StepList { height: auto; max-height: 35%; min-height: 2; }"

    def __init__(self, steps: pl.DataFrame, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps = steps
        self.cursor = 0
        self.top = 0  # the first step row on screen
        self.chosen: int | None = None
        self.styles.height = steps.height

    def render(self) -> Text:
        """The rows that fit, scrolled so that the highlighted step is always among them."""
        longest = float(self.steps["duration_us"].max() or 0.0)
        width = max(self.size.width - STEP_LABEL - 2, 10)
        shown = max(self.size.height, 1)
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + shown:
            self.top = self.cursor - shown + 1
        self.top = max(0, min(self.top, self.steps.height - shown))
        out = Text()
        for offset, row in enumerate(self.steps.slice(self.top, shown).iter_rows(named=True)):
            index = self.top + offset
            mark = "▶" if row["step"] == self.chosen else " "
            name = clean(row["name"]).replace("ProfilerStep#", "step ").replace("(whole trace)", "whole")  # nav
            label = f"{mark} {name[:10]:<10} {fmt_us(row['duration_us']):>10} "
            out.append(label, style="reverse" if index == self.cursor else "")
            bar_width = round(width * row["duration_us"] / longest) if longest else 0
            values = {c: row[f"{c}_us"] for c in CATEGORIES}
            out.append(stacked_bar(values, row["duration_us"], bar_width))
            if offset < shown - 1:
                out.append("\n")
        return out

    def on_click(self, event: events.Click) -> None:
        """A click highlights a step (Enter then narrows the tables to it)."""
        self.focus()
        self.action_move(self.top + event.y - self.cursor)

    def highlighted(self) -> dict:
        return self.steps.row(self.cursor, named=True)

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(self.steps.height - 1, self.cursor + delta))
        self.refresh()
        self.parent_view().show_step(self.highlighted())

    def action_jump(self, index: int) -> None:
        self.action_move((index % self.steps.height) - self.cursor)

    def action_choose(self) -> None:
        step = self.highlighted()["step"]
        self.chosen = step if step is not None and step >= 0 else None
        self.refresh()
        self.post_message(StepChosen(self.chosen))

    def action_all(self) -> None:
        self.chosen = None
        self.refresh()
        self.post_message(StepChosen(None))

    def action_timeline(self, action: str, value: float | None = None) -> None:
        """Keys on the step list drive the timeline below it."""
        timelines = self.parent_view().query(Timeline)
        if timelines:
            timelines.first().action_timeline(action, value)

    def parent_view(self) -> StepsView:
        return self.query_ancestor(StepsView)


class StepsView(VerticalScroll):
    """Steps: bars, legend and totals of the highlighted step, and its per-stream timeline."""

    def __init__(self, profile: Profile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.profile = profile

    def compose(self) -> ComposeResult:
        yield Static(legend(), id="steps-legend")
        yield StepList(self.profile.steps(), id="step-list")
        yield Static(id="step-totals")
        if self.profile.is_trace:
            yield Static(id="timeline-title")
            yield Timeline(id="timeline")

    def on_mount(self) -> None:
        step_list = self.query_one(StepList)
        if step_list.steps.height:
            self.show_step(step_list.highlighted())

    def show_step(self, row: dict) -> None:
        """Totals of a step and its timeline."""
        steps = self.query_one(StepList)
        name = clean(row["name"])
        totals = Text(f"{name} ({steps.cursor + 1} of {steps.steps.height}): {fmt_us(row['duration_us'])} = ")
        totals.stylize("bold")
        parts = 0
        for category in CATEGORIES:
            value = row[f"{category}_us"] or 0.0
            if value <= 0:  # the legend above names every category; zeros are left out here
                continue
            share = value / row["duration_us"] * 100 if row["duration_us"] else 0.0
            if parts:
                totals.append(" + ", style="dim")
            totals.append(f"{CATEGORY_CHAR[category]} ", style=CATEGORY_STYLE[category])
            totals.append(f"{CATEGORY_LABELS[category]} {fmt_us(value)} ({share:.1f}%)")
            parts += 1
        self.query_one("#step-totals", Static).update(totals)
        if self.profile.is_trace:
            title = Text(f"GPU streams · {name.replace('ProfilerStep#', 'step ')}", style="bold")
            title.append("   ←→ H L move · < > lane · +/- zoom · [ ] pan · 0 fit", style="dim")
            self.query_one("#timeline-title", Static).update(title)
            start = self.profile.span_start + row["start_us"]
            self.query_one(Timeline).show(self.profile.gpu, start, start + row["duration_us"])

    def focus_main(self) -> None:
        self.query_one(StepList).focus()
