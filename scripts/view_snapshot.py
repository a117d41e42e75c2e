"""Every view of every sample and shared trace, written as the CLI writes it, into one folder.

A refactor that must not change a figure (a module moved, a read made faster) is checked by running
this before and after and comparing the two folders byte for byte::

    .venv/bin/python scripts/view_snapshot.py /tmp/before
    ... the change ...
    .venv/bin/python scripts/view_snapshot.py /tmp/after
    diff -r /tmp/before /tmp/after

Each trace is loaded once without the cache; each view's CSV is the export's own bytes
(``report.export.write_table``), and a view a trace cannot show is its one-line error instead.  The
summary of each trace (``profview summary``) and the graph views of the replay pairs with their
captures are written too.  ``--quick`` leaves out the traces over 20 MB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"
SUFFIXES = (".json", ".json.gz", ".tables.txt", ".txt")
VIEWS = (
    "kernels", "ops", "steps", "memory", "memory_ops", "memory_peaks", "modules", "sources", "gpu_idle", "gaps",
    "efficiency", "categories", "critical_path", "critical_path_events", "critical_path_names", "graphs",
    "graph_nodes", "graph_ops", "iterations", "phases",
)
PAIRS = (
    ("public/tracelens_mi300_vllm_decode_graph_replay.json.gz", "public/vllm_decode_capture_traces"),
    ("public/tracelens_mi300_sglang_qwen3_decode_graph_replay.json.gz", "public/sglang_decode_capture_traces"),
)


def traces(quick: bool) -> list[Path]:
    found = [p for p in sorted((ROOT / "samples").iterdir()) if p.is_file() and p.name.endswith(SUFFIXES)]
    if SHARED.is_dir():
        found += [p for p in sorted(SHARED.rglob("*")) if p.is_file() and p.name.endswith((".json", ".json.gz"))]
    if quick:
        found = [p for p in found if p.stat().st_size < 20_000_000]
    return found


def snapshot_one(path: Path, out: Path, capture: Path | None = None) -> None:
    from profview import load
    from profview.errors import ProfviewError
    from profview.profiles.views import view_frame
    from profview.report.export import write_table

    stem = path.name.replace(".", "_") + ("__capture" if capture else "")
    try:
        profile = load(str(path), use_cache=False)
        if capture is not None:
            profile.use_capture(str(capture), use_cache=False)
    except ProfviewError as exc:
        (out / f"{stem}.error").write_text(str(exc) + "\n")
        return
    views = ("graphs", "graph_nodes", "graph_ops", "efficiency", "ops", "iterations") if capture else VIEWS
    for view in views:
        target = out / f"{stem}.{view}.csv"
        try:
            frame = view_frame(profile, view)
            write_table(frame, str(target))
        except ProfviewError as exc:
            target.with_suffix(".error").write_text(str(exc) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for path in traces(args.quick):
        print(path, flush=True)
        snapshot_one(path, args.out)
        summary = subprocess.run(
            [sys.executable, "-m", "profview", "summary", str(path), "--no-cache"],
            capture_output=True, text=True, cwd=ROOT,
        )
        (args.out / (path.name.replace(".", "_") + ".summary.txt")).write_text(summary.stdout + summary.stderr)
    for replay, capture in PAIRS:
        if (SHARED / replay).exists():
            snapshot_one(SHARED / replay, args.out, SHARED / capture)


if __name__ == "__main__":
    main()
