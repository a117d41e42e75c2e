"""The README's pictures of the viewer, written by the viewer itself (Textual's ``export_screenshot``).

The app opens a bundled sample in a pilot at a fixed size, waits until the trace is linked and its
critical path is in the tables, presses the keys of each picture and writes what is on screen as an
SVG into ``docs/``.  Run it after a change to a screen the README shows, so the pictures stay the
app's own::

    .venv/bin/python scripts/screenshot.py            # docs/screenshot_overview.svg, docs/screenshot_drill.svg
    .venv/bin/python scripts/screenshot.py --out /tmp  # elsewhere

``NO_COLOR`` is ignored here (the pictures are in colour); the figures come from the sample, so the
same checkout writes the same pictures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = "samples/resnet50_train_amp.pt.trace.json.gz"
SIZE = (100, 30)

#: (file name, keys pressed after the trace is open, the title the SVG carries)
PICTURES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("screenshot_overview.svg", (), "profview: the Overview of a ResNet-50 training trace"),
    (
        "screenshot_drill.svg",
        ("2", "down", "down", "down", "down", "enter"),
        "profview: a kernel's launching operators, operator chain and Python stack",
    ),
)


async def picture(out: Path, name: str, keys: tuple[str, ...], title: str) -> Path:
    """Open the sample, press ``keys``, and write the screen to ``out / name``."""
    from profview.tui.app import ProfviewApp
    from profview.tui.main.screen import MainScreen

    app = ProfviewApp(TRACE, no_cache=True)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            screen = app.screen
            if isinstance(screen, MainScreen) and app.linked and screen.path_settled():
                break
            await pilot.pause(0.05)
        else:
            raise SystemExit(f"{TRACE}: the viewer did not finish loading")
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.3)
        await pilot.pause(0.5)
        svg = app.export_screenshot(title=title)
    path = out / name
    path.write_text(svg, encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="folder for the SVG files (default: docs/)")
    args = parser.parse_args()
    os.chdir(ROOT)  # the sample's path as the README writes it
    os.environ.pop("NO_COLOR", None)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, keys, title in PICTURES:
        print(asyncio.run(picture(args.out, name, keys, title)))


if __name__ == "__main__":
    main()
