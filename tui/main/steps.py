"""The Steps view: a stacked bar per step, its totals, and the GPU timeline of the chosen step."""

from __future__ import annotations

from typing import Any

import polars as pl
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from ...analysis.tables.step_outliers import outlier_threshold, step_outliers
from ...frames import CATEGORIES, CATEGORY_CHAR, CATEGORY_LABELS, CATEGORY_STYLE, fmt_us
from ...profiles.trace_profile import Profile
from ...sanitize import clean
from ..keymap import bindings
from ..messages import StepChosen
from ..widgets.bars import legend, stacked_bar
from .step_timeline import Timeline

STEP_LABEL = 22
#: The glyph of an outlier step (it reads under NO_COLOR too).
OUTLIER = "!"


class StepList(Widget, can_focus=True):
    """One stacked bar per step; Enter narrows the other views to the highlighted step."""

    BINDINGS = bindings("steps", "timeline")
    DEFAULT_CSS = "StepList { height: auto; max-height: 35%; min-height: 2; }"

    def __init__(self, steps: pl.DataFrame, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.order = steps  # step order, as the trace has them
        self.sort_key: str | None = None  # None: step order; "duration" or a category: that ↓
        self.steps = step_outliers(steps, "duration_us")
        self.cursor = 0
        self.top = 0  # the first step row on screen
        self.chosen: int | None = None
        self.styles.height = steps.height

    def render(self) -> Text:
        """The rows that fit, scrolled so that the highlighted step is always among them."""
        longest = float(self.steps.select(pl.col("duration_us").max()).item() or 0.0)
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
            name = clean(row["name"]).replace("ProfilerStep#", "step ").replace("(whole trace)", "whole")
            flag = OUTLIER if row["outlier"] else " "
            label = f"{mark}{flag}{name[:10]:<10} {fmt_us(row[self.column()] or 0.0):>10} "
            out.append(label, style="reverse" if index == self.cursor else "")
            if row["outlier"]:
                out.stylize("bold red", len(out) - len(label) + 1, len(out) - len(label) + 2)
            bar_width = round(width * row["duration_us"] / longest) if longest else 0
            values = {c: row[f"{c}_us"] for c in CATEGORIES}
            out.append(stacked_bar(values, row["duration_us"], bar_width))
            if offset < shown - 1:
                out.append("\n")
        return out

    # -- sorting and outliers (issue 13) -----------------------------------------------------------
    def column(self) -> str:
        """The column the rows show, sort by and mark outliers on."""
        return f"{self.sort_key or 'duration'}_us"

    def sort_keys(self) -> list[str | None]:
        """What s cycles through: duration, each category some step has time in, step order."""
        used = [c for c in CATEGORIES if f"{c}_us" in self.order.columns and (self.order[f"{c}_us"].sum() or 0) > 0]
        return ["duration", *used, None]

    def sort_label(self) -> str:
        """'duration ↓', 'Kernel ↓' or 'step order'."""
        if self.sort_key is None:
            return "step order"
        return f"{CATEGORY_LABELS.get(self.sort_key, self.sort_key)} ↓"

    def threshold(self) -> float | None:
        """The outlier threshold of the shown column (median + 3 × 1.4826 × MAD), or None."""
        real = self.order.filter(pl.col("step") >= 0) if "step" in self.order.columns else self.order
        return outlier_threshold(real[self.column()])

    def action_sort(self) -> None:
        """s: the next sort (duration ↓, each category ↓, step order)."""
        keys = self.sort_keys()
        self.set_sort(keys[(keys.index(self.sort_key) + 1) % len(keys)] if self.sort_key in keys else keys[0])

    def set_sort(self, key: str | None) -> None:
        """Sort by ``key`` ↓ (None: step order); the cursor goes to the first row (the slowest step)."""
        self.sort_key = key
        frame = self.order
        if key is not None:
            frame = frame.sort(self.column(), descending=True, nulls_last=True, maintain_order=True)
        self.steps = step_outliers(frame, self.column())
        self.cursor = self.top = 0
        self.refresh()
        view = self.parent_view()
        view.show_sort()
        if self.steps.height:
            view.show_step(self.highlighted())

    def on_click(self, event: events.Click) -> None:
        """A click highlights a step (Enter then narrows the tables to it)."""
        self.focus()
        self.action_move(self.top + event.y - self.cursor)

    def highlighted(self) -> dict[str, Any]:
        return self.steps.row(self.cursor, named=True)

    def action_move(self, delta: int) -> None:
        self.cursor = max(0, min(self.steps.height - 1, self.cursor + delta))
        self.refresh()
        self.parent_view().show_step(self.highlighted())

    def action_jump(self, index: int) -> None:
        self.action_move((index % self.steps.height) - self.cursor)

    def has_steps(self) -> bool:
        """Whether the trace has steps to choose (a step-less trace's one row is the whole trace)."""
        return "step" in self.order.columns and bool(self.order.filter(pl.col("step") >= 0).height)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter and a choose a step, so a trace without steps does not offer them in the footer."""
        return action not in ("choose", "all") or self.has_steps()

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


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def place_phrase(steps: StepList) -> str:
    """Where the highlighted step stands: 'step 1 of 3' in step order; '1st longest of 40' (by
    duration) or '2nd by Kernel of 40' once sorted (issue 22: '(1 of 40)' read like an index)."""
    count = steps.steps.height
    if steps.sort_key is None:
        return f"{steps.cursor + 1} of {count} in step order"
    if steps.sort_key == "duration":
        return f"{ordinal(steps.cursor + 1)} longest of {count}"
    label = CATEGORY_LABELS.get(steps.sort_key, steps.sort_key)
    return f"{ordinal(steps.cursor + 1)} by {label} time of {count}"


class StepsView(VerticalScroll):
    """Steps: bars, legend and totals of the highlighted step, and its per-stream timeline."""

    def __init__(self, profile: Profile, *, id: str | None = None, deferred: bool = False) -> None:
        """``deferred``: a hidden pane, drawn when first shown (:meth:`start`): its step's timeline
        reads the GPU frame, which the first screen (the Overview) does not need (issue 42)."""
        super().__init__(id=id)
        self.profile = profile
        self.deferred = deferred

    def compose(self) -> ComposeResult:
        yield Static(legend(), id="steps-legend")
        yield Static(id="steps-sort")
        yield StepList(self.profile.steps(), id="step-list")
        yield Static(id="step-totals")
        if self.profile.is_trace:
            yield Static(id="timeline-title")
            yield Timeline(id="timeline")

    def on_mount(self) -> None:
        if not self.deferred:
            self.draw()

    def start(self) -> None:
        """The pane is shown: draw it now if it waited."""
        if self.deferred:
            self.draw()

    def draw(self) -> None:
        """The sort line, the highlighted step's totals and its timeline."""
        step_list = self.query_one(StepList)
        self.show_sort()
        if step_list.steps.height:
            self.show_step(step_list.highlighted())

    def on_resize(self) -> None:
        self.query_one("#steps-legend", Static).update(legend(width=max(self.size.width - 1, 20)))
        self.call_after_refresh(self.fit_list)

    def fit_list(self) -> None:
        """The step list takes the lines the rest leaves (at least 35% of the pane, as
        before): at 200x50 it lists 30-odd steps where 80x24 lists 7."""
        step_list = self.query_one(StepList)
        others = sum(w.outer_size.height for w in self.children if w is not step_list and w.display)
        free = self.size.height - others - 1
        rows = max(free, int(self.size.height * 0.35), 2)
        if step_list.styles.max_height is None or step_list.styles.max_height.value != rows:
            step_list.styles.max_height = rows

    def show_sort(self) -> None:
        """The step list's title: the sort in force, what s does next, the outlier rule."""
        steps = self.query_one(StepList)
        keys = steps.sort_keys()
        following = keys[(keys.index(steps.sort_key) + 1) % len(keys)] if steps.sort_key in keys else keys[0]
        upcoming = "step order" if following is None else f"{CATEGORY_LABELS.get(following, following)} ↓"
        title = Text(f"Steps · sorted by {steps.sort_label()}", style="bold")
        title.append(f" · s: {upcoming}", style="dim")
        threshold = steps.threshold()
        if threshold is not None:
            title.append(f" · {OUTLIER} outlier: > {fmt_us(threshold)}", style="dim")
        self.query_one("#steps-sort", Static).update(title)

    def show_step(self, row: dict[str, Any]) -> None:
        """Totals of a step and its timeline."""
        self.deferred = False  # drawn from now on (a sort or a move may come before the pane is shown)
        steps = self.query_one(StepList)
        name = clean(row["name"])
        totals = Text(f"{name} ({place_phrase(steps)}): {fmt_us(row['duration_us'])} = ")
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
        totals.append(self.outlier_note(steps))
        self.query_one("#step-totals", Static).update(totals)
        self.call_after_refresh(self.fit_list)
        if self.profile.is_trace:
            from .overview import path_line, path_pending

            if path_pending(self.profile):
                self.path_in_background(row)
            title = Text(f"GPU streams · {name.replace('ProfilerStep#', 'step ')}", style="bold")
            # What bounds the step (issue 26), on the title line: the layout keeps its height.
            title.append(" · ")
            title.append_text(path_line(self.profile, row.get("step"), short=True))
            title.append("   ←→ H L move · < > lane · +/- zoom · [ ] pan · 0 fit", style="dim")
            self.query_one("#timeline-title", Static).update(title)
            start = self.profile.span_start + row["start_us"]
            self.query_one(Timeline).show(self.profile.communication(), start, start + row["duration_us"])

    @work(thread=True, exclusive=True, group="critical-path", exit_on_error=False)
    def path_in_background(self, row: dict) -> None:
        """The critical path of a large trace, off the UI thread; the step's line redraws with it."""
        from .overview import compute_path

        compute_path(self.profile)
        self.app.call_from_thread(self.show_step, row)

    @staticmethod
    def outlier_note(steps: StepList) -> Text:
        """' · 1 outlier of 40 (duration > 116.306 ms)' — also when there is none."""
        threshold = steps.threshold()
        measure = CATEGORY_LABELS.get(steps.sort_key or "", "duration")
        if threshold is None:
            return Text(f" · outliers: none ({measure}: too few steps or no spread)", style="dim")
        count = int(steps.steps["outlier"].sum())
        real = int((steps.steps["step"] >= 0).sum()) if "step" in steps.steps.columns else steps.steps.height
        note = Text(" · ")
        plural = "outlier" if count == 1 else "outliers"
        note.append(f"{count} {OUTLIER} {plural} of {real}", style="bold red" if count else "")
        note.append(f" ({measure} > {fmt_us(threshold)} = median + 3×1.4826×MAD, at least +5%)")
        return note

    def focus_main(self) -> None:
        self.query_one(StepList).focus()
