"""The viewer at 80x24 first, and smaller defects seen (issue 22): each checked on screen (Textual's pilot)
against the raw events (gzip + json), the Paddle log's own text, or Python's decimal module."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import struct
import subprocess
import sys
import time
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import polars as pl
import pytest
from pilot import screen_text, type_text, wait_loaded
from support import ROOT, SAMPLES, SHARED, loaded, raw_events, viewer
from textual.coordinate import Coordinate

from profview.report.wording import middle_cut, plural
from profview.tui.dialogs.help import HelpScreen
from profview.tui.drill.screen import DrillScreen
from profview.tui.main.screen import tab_line
from profview.tui.main.timeline import TraceTimeline
from profview.tui.widgets.table_view import FrameView

RESNET = "resnet50_train_amp.pt.trace.json.gz"
PADDLE = "seed_paddle_profiler_summary_log.txt"


def raw_kernels() -> list[dict]:
    return [e for e in raw_events(RESNET) if e.get("cat") == "kernel"]


def exact3(value: float) -> str:
    """The float's exact decimal value rounded to 3 places (the witness of the one rounding rule)."""
    return str(Decimal(value).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN))


async def wait_drill(pilot, app) -> DrillScreen:  # type: ignore[no-untyped-def]
    for _ in range(100):
        if isinstance(app.screen, DrillScreen):
            await pilot.pause()
            return app.screen
        await pilot.pause(0.05)
    raise AssertionError("no drill-down opened")


# -- the details line ---------------------------------------------------------------------------


async def test_details_line_puts_figures_first_and_the_name_in_up_to_four_lines() -> None:
    longest = max(raw_kernels(), key=lambda e: len(e["name"]))
    calls = sum(1 for e in raw_kernels() if e["name"] == longest["name"])
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels", FrameView)
        row = view.displayed["name"].to_list().index(longest["name"])
        view.table.move_cursor(row=row)
        await pilot.pause()
        details = str(app.screen.query_one("#kernels .details").render()).split("\n")
        assert details[0].startswith(f"calls {calls:,} · total_us ")
        start = next(i for i, line in enumerate(details) if line.startswith(longest["name"][:20]))
        name_lines = details[start:]
        # issue 34: four lines (docs/navigation.md), no more; the name is cut only beyond them
        lines_needed = -(-len(longest["name"]) // 80)
        assert len(longest["name"]) > 2 * 80 and start >= 1 and len(name_lines) == min(4, lines_needed)
        shown = "".join(name_lines).replace(" ", "")
        assert longest["name"].replace(" ", "").startswith(shown.removesuffix("…"))
        assert len(shown) > 200  # most of four lines of the name


# -- one rounding rule --------------------------------------------------------------------------


async def test_table_details_and_csv_round_alike(tmp_path: Path) -> None:
    kernels = loaded(RESNET).kernels()
    candidates = [
        (name, column, value)
        for column in ("mean_us", "median_us", "std_us")
        for name, value in zip(kernels["name"], kernels[column], strict=True)
        if f"{pl.Series([value]).round(3)[0]:.3f}" != exact3(value)
    ]
    assert candidates, "no value where Polars' round and the exact rounding differ"
    name, column, value = candidates[0]
    want = exact3(value)
    app = viewer(RESNET)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels", FrameView)
        row = view.displayed["name"].to_list().index(name)
        view.table.move_cursor(row=row)
        await pilot.pause()
        cell = view.table.get_cell_at(Coordinate(row, view.displayed.columns.index(column)))
        assert str(cell) == want
        details = str(app.screen.query_one("#kernels .details").render())
        integer, fraction = want.split(".")
        assert f"{column} {int(integer):,}.{fraction}" in details
        from profview.report.export import write_table

        target = tmp_path / "k.csv"
        write_table(view.displayed, str(target), inputs=(RESNET,), overwrite=True)
        rows = list(csv.DictReader(io.StringIO(target.read_text())))
        assert next(r for r in rows if r["name"] == name)[column] == want


# -- occupancy ----------------------------------------------------------------------------------


async def test_occupancy_not_estimated_is_a_dash_and_known_is_a_percent() -> None:
    per_name: dict[str, list[float]] = {}
    for e in raw_kernels():
        per_name.setdefault(e["name"], []).append(e["args"].get("est. achieved occupancy %", 0))
    never = next(n for n, values in per_name.items() if not any(values))
    known = next(n for n, values in per_name.items() if any(values) and not all(values))  # some zeros
    nonzero = [v for v in per_name[known] if v]
    app = viewer(RESNET)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels", FrameView)
        column = view.displayed.columns.index("occupancy")
        names = view.displayed["name"].to_list()
        assert str(view.table.get_cell_at(Coordinate(names.index(never), column))) == "–"
        mean = sum(nonzero) / len(nonzero)  # the calls Kineto estimated, not its zeros
        assert str(view.table.get_cell_at(Coordinate(names.index(known), column))) == f"{mean:.1f}%"


# -- the sort on the context line, and kept on screen ------------------------------------------


async def test_every_table_names_its_sort_and_shows_the_sorted_column_at_80() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        lines = screen_text(app).splitlines()
        assert lines[2].startswith("78 rows · sorted by total_us ↓")
        await pilot.press("3")
        lines = screen_text(app).splitlines()
        assert "sorted by device_total_us ↓" in lines[2]
        assert "device_total_us" in lines[3]  # the sorted column's header is on screen at 80 columns
        # the top operator by device time: ProfilerStep* spans every kernel of the steps
        ops = app.screen.query_one("#ops", FrameView).displayed
        assert ops["device_total_us"].to_list() == sorted(ops["device_total_us"].to_list(), reverse=True)


# -- the filtered rows' time --------------------------------------------------------------------


async def test_filter_shows_the_rows_time_and_its_share_of_kernel_time() -> None:
    kernels = raw_kernels()
    gemm = [e for e in kernels if re.search("gemm", e["name"], re.I)]
    total = sum(e["dur"] for e in kernels)
    shown = sum(e["dur"] for e in gemm)
    names = {e["name"] for e in gemm}
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash")
        await type_text(pilot, "gemm")
        await pilot.press("enter")
        line = screen_text(app).splitlines()[2]
        all_names = len({e["name"] for e in kernels})
        share = f"{shown / total * 100:.1f}% of kernel time"
        assert line.startswith(f"{len(names)} of {all_names} rows · /gemm/ · {shown / 1e3:.3f} ms · {share}")


# -- columns from the keyboard ------------------------------------------------------------------


async def test_hide_show_and_move_columns_from_the_keyboard() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2")
        view = app.screen.query_one("#kernels", FrameView)
        before = list(view.displayed.columns)
        await pilot.press("right", "minus")  # hide calls
        assert "calls" not in view.displayed.columns and len(view.displayed.columns) == len(before) - 1
        assert "1 column hidden" in screen_text(app).splitlines()[2]
        assert screen_text(app).splitlines()[3].split()[:2] == ["name", "total_us"]
        await pilot.press("plus")
        assert view.displayed.columns == before
        assert view.cursor_column() == "calls"  # the cursor stayed in the second column
        await pilot.press("greater_than_sign")  # calls one place right: after total_us
        assert view.displayed.columns[:3] == ["name", "total_us", "calls"]
        assert view.cursor_column() == "calls"
        await pilot.press("less_than_sign", "less_than_sign")  # back, and never before the name
        assert view.displayed.columns[:3] == ["name", "calls", "total_us"]


# -- help: this screen's keys first, searchable -------------------------------------------------


async def test_help_shows_this_screens_keys_first_and_searches() -> None:
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("7")
        for _ in range(100):
            if app.screen.query(TraceTimeline):
                break
            await pilot.pause(0.05)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        lines = [line.strip() for line in screen_text(app).splitlines() if line.strip()]
        heading = next(i for i, line in enumerate(lines) if "This screen: Timeline" in line)
        assert "Timeline: ← → h l" in lines[heading + 1]  # the Timeline's keys come first
        await pilot.press("slash")
        await type_text(pilot, "export")
        await pilot.press("enter")
        text = screen_text(app)
        assert "export the table on screen" in text and "Timeline: ← →" not in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_tabs_that_do_not_fit_say_so() -> None:
    assert tab_line("overview", 200).plain.split() == [
        "1", "Overview", "2", "Kernels", "3", "Operators", "4", "Steps", "5", "Memory", "6", "Modules", "7", "Timeline",
        "8", "Efficiency", "9", "Graphs", "0", "Iterations",
    ]
    narrow = tab_line("overview", 50).plain  # short titles, unpadded (issue 34), and still too many
    assert narrow.rstrip().endswith("…") and narrow.startswith("1 Overview") and len(narrow) <= 50
    assert "8 Eff" in tab_line("overview", 60).plain  # issue 34: at 60 columns every tab still shows
    last = tab_line("efficiency", 50).plain
    assert last.startswith("…") and "8 Eff" in last and "1 Overview" not in last and len(last) <= 50


# -- lists grow on a tall screen ---------------------------------------------------------------


async def test_overview_lists_grow_at_200x50() -> None:
    totals: dict[str, float] = {}
    for e in raw_kernels():
        totals[e["name"]] = totals.get(e["name"], 0.0) + e["dur"]
    ranked = sorted(totals, key=lambda n: -totals[n])
    app = viewer(RESNET)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app)
        text = screen_text(app)
    listed = [line for line in text.splitlines() if f"{totals[ranked[0]] / 1e3:.3f} ms" in line or "share" in line]
    assert listed
    shown = [name for name in ranked if name[:60] in text]
    assert len(shown) >= 14  # 5 at 80x24
    assert shown[:14] == ranked[:14]


@pytest.mark.skipif(not (SHARED / "traces/gpt2_train_big.pt.trace.json.gz").exists(), reason="../shared absent")
async def test_steps_list_grows_at_200x50() -> None:
    from profview.tui.app import ProfviewApp

    path = SHARED / "traces/gpt2_train_big.pt.trace.json.gz"
    steps = sum(1 for _ in re.finditer(rb'"ProfilerStep#\d+"', _gunzip(path)))
    counts = {}
    for size in ((80, 24), (200, 50)):
        app = ProfviewApp(str(path))
        async with app.run_test(size=size) as pilot:
            for _ in range(1200):
                if app.linked and app.main_screen() is not None:
                    break
                await pilot.pause(0.1)
            await pilot.press("4")
            await pilot.pause(0.3)
            counts[size] = sum(1 for line in screen_text(app).splitlines() if re.match(r"\s*[▶ ][! ]step \d+", line))
    assert steps >= 40
    assert counts[(80, 24)] <= 8 and counts[(200, 50)] >= 25


def _gunzip(path: Path) -> bytes:
    import gzip

    with gzip.open(path, "rb") as fh:
        return fh.read()


# -- drill-down rows: figures first, the telling frame, a capped stack pane ---------------------


async def test_drill_rows_figures_first_with_the_frame_that_differs() -> None:
    name = "aten::conv2d"
    app = viewer(RESNET)
    profile = loaded(RESNET)
    kernel = profile.launches(name)["name"][0]  # a kernel conv2d launches, from many call sites
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash")
        await type_text(pilot, "^" + re.escape(kernel) + "$")
        await pilot.press("enter", "enter")
        drill = await wait_drill(pilot, app)
        shown = drill.frame_view().displayed
        assert shown.columns.index("calls") < shown.columns.index("op_chain")
        assert shown.columns.index("total_us") < shown.columns.index("python_stack")
        header = screen_text(app).splitlines()[2].split()
        # issue 34: where the operator repeats, the frame the launch came from is next to it
        telling = ["launched_from"] if shown["op"].n_unique() < shown.height else []
        assert header[:3] == ["op", *telling, "calls", "total_us"][:3]
        stacks = [str(s).split(" > ") for s in shown["python_stack"]] if shown.height > 1 else []
        if stacks:
            assert len(set(shown["launched_from"])) > 1 or shown.height == 1
            common = stacks[0][0]
            assert all(s[0] == common for s in stacks)  # the innermost frame is the same on every row…
            assert all(f != common for f in shown["launched_from"])  # …and no row shows it
        pane = drill.query_one("#launch-detail")
        assert pane.outer_size.height <= 9
        await pilot.press("v")
        assert not pane.display


# -- plurals, the step wording, the Paddle drill-down -------------------------------------------


def test_plural() -> None:
    assert (plural(1, "row"), plural(2, "row"), plural(1, "match", "matches"), plural(1234, "step")) == (
        "1 row", "2 rows", "1 match", "1,234 steps",
    )


async def test_one_row_is_one_row() -> None:
    kernels = raw_kernels()
    by_name: dict[str, set] = {}
    for e in kernels:
        by_name.setdefault(e["name"], set()).add(e["args"].get("External id"))
    app = viewer(RESNET)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("7")
        for _ in range(100):
            if app.screen.query(TraceTimeline):
                break
            await pilot.pause(0.05)
        await pilot.press("n", "enter")
        await wait_drill(pilot, app)
        assert screen_text(app).splitlines()[1].startswith("1 row ")


async def test_sorted_steps_say_longest_not_an_index() -> None:
    steps = sorted(
        (e for e in raw_events(RESNET) if e.get("ph") == "X" and str(e.get("name")).startswith("ProfilerStep#")),
        key=lambda e: -e["dur"],
    )
    app = viewer(RESNET)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("4")
        assert "ProfilerStep#2 (1 of 3 in step order)" in screen_text(app)  # the first step of the trace
        await pilot.press("s")  # duration ↓
        assert f"{steps[0]['name']} (1st longest of 3): {steps[0]['dur'] / 1e3:.3f} ms" in screen_text(app)
        await pilot.press("j")
        assert f"{steps[1]['name']} (2nd longest of 3)" in screen_text(app)


def paddle_kernel_lines(operator: str) -> list[tuple[int, float]]:
    """(calls, GPU total ms) of the kernel lines under ``operator`` in the log's Operator Summary."""
    lines = (SAMPLES / PADDLE).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(operator + " "))
    found = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        match = re.match(r"\s{4}\S.*?\s{2,}(\d+)\s+- / - / - / - / -\s+([\d.]+) /", line)
        if match:
            found.append((int(match.group(1)), float(match.group(2))))
    return found


async def test_paddle_operator_drill_down_is_sorted() -> None:
    from profview.tui.app import ProfviewApp

    logged = paddle_kernel_lines("conv2d dygraph")
    app = ProfviewApp(str(SAMPLES / PADDLE), no_cache=True, profile=loaded(PADDLE))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("3", "slash")
        await type_text(pilot, "^conv2d dygraph$")
        await pilot.press("enter", "enter")
        drill = await wait_drill(pilot, app)
        shown = drill.frame_view().displayed
        totals = [round(t / 1e3, 2) for t in shown["total_us"]]
        assert totals == sorted((t for _c, t in logged), reverse=True)
        assert shown["calls"][0] == max(logged, key=lambda line: line[1])[0] == 294
        assert "sorted by total_us ↓" in screen_text(app)


# -- summary at 80 columns ---------------------------------------------------------------------


def test_summary_cuts_long_names_in_the_middle_or_keeps_them_whole() -> None:
    names = {e["name"] for e in raw_kernels()}
    env = dict(os.environ, COLUMNS="80", NO_COLOR="1")
    command = [sys.executable, "-m", "profview", "summary", str(SAMPLES / RESNET), "--no-cache"]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("nvjet_sm90_hsh_128x25"))
    head, tail = line.split("  ")[0].split("…")
    nvjet = [n for n in names if n.startswith(head) and n.endswith(tail)]
    assert len(nvjet) == 1 and len(tail) >= 15  # the telling end (…_coopA_TNN) survives
    nvjet = nvjet[0]
    assert max(len(line) for line in out.splitlines()) <= 80
    wide = subprocess.run([*command, "--wide"], capture_output=True, text=True, env=env, cwd=ROOT, check=True).stdout
    lines = wide.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(nvjet[:30]))
    folded = lines[at].split()[0]
    for line in lines[at + 1 :]:  # the name's next lines hold nothing else
        if len(line.split()) != 1:
            break
        folded += line.strip()
    assert folded == nvjet  # whole, folded over lines
    assert middle_cut("abcdefghij", 5) == "ab…ij"


# -- NO_COLOR: the raw bytes --------------------------------------------------------------------


def terminal_bytes(env: dict[str, str], keys: bytes = b"27") -> bytes:
    """The bytes the viewer writes to a real pseudo-terminal (80x24) while showing the Overview,
    Kernels and Timeline, then q."""
    import fcntl
    import pty
    import select
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: the viewer
        os.chdir(ROOT)
        os.execve(
            sys.executable,
            [sys.executable, "-m", "profview", str(SAMPLES / RESNET), "--no-cache"],
            dict(os.environ, TERM="xterm-256color", **env),
        )
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    out = b""
    deadline = time.time() + 60
    sent = False
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        if not sent and b"GPU busy" in out:  # the Overview is on screen
            for key in keys + b"q":
                time.sleep(1.0)
                os.write(fd, bytes([key]))
            sent = True
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    return out


def sgr_attributes(out: bytes) -> set[int]:
    found = re.findall(rb"\x1b\[([0-9;:]*)m", out)
    return {int(p or 0) for params in found for p in params.replace(b":", b";").split(b";")}


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX pseudo-terminal")
def test_no_color_writes_only_bold_underline_reverse() -> None:
    colour = terminal_bytes({})
    assert sgr_attributes(colour) & {38, 48}  # the witness that the capture sees colours when allowed
    plain = terminal_bytes({"NO_COLOR": "1"})
    assert b"sorted by total_us" in plain and b"GPU busy" in plain
    assert sgr_attributes(plain) <= {0, 1, 4, 7}
    assert not re.search(rb"\x1b\[[0-9;]*(38|48);[25];", plain)


def test_readme_install_line_starts_no_viewer() -> None:
    """The install command tries profview on a bundled sample without taking over the terminal (it
    prints the summary), and the README says where the command is after the install."""
    text = (ROOT / "README.md").read_text()
    install = text.split("## Install and try it (one command)\n", 1)[1].split("##", 1)[0]
    block = install.split("```bash\n", 1)[1].split("```", 1)[0]
    command = block.strip()
    assert "pip install" in command and command.endswith(".trace.json.gz")
    tried = command.split("&&")[-1].split()
    assert tried[:2] == [".venv/bin/profview", "summary"] and (ROOT / tried[2]).is_file()
    assert ".venv/bin/profview" in install.split("```", 2)[2]  # where the command is after the install
