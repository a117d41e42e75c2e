"""profview's top kernels of Nsight Systems exports against nsys-ai's ``top_kernels`` skill, run live.

    python3 -m venv /tmp/nsysai && /tmp/nsysai/bin/pip install nsys-ai
    .venv/bin/python benchmarks/nsys_peer.py [--nsys-ai /tmp/nsysai/bin/nsys-ai] [EXPORT ...]

Each export is copied to a temporary folder first (nsys-ai may write a cache beside it; ``../shared``
is never written).  Prints one markdown row per export: how many of the ten heaviest kernels both
name, in the same order, with the same count and total (nsys-ai rounds totals to 0.01 ms).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "formats" / "nsys"


def main() -> None:
    import profview

    parser = argparse.ArgumentParser()
    parser.add_argument("exports", nargs="*", type=Path)
    parser.add_argument("--nsys-ai", default="/tmp/nsysai/bin/nsys-ai")
    options = parser.parse_args()
    exports = options.exports or sorted(SHARED.glob("*.sqlite"))
    print("| export | top 10 named by both | same order | same count | total within 0.01 ms |")
    print("|---|---|---|---|---|")
    for export in exports:
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / export.name
            shutil.copyfile(export, copy)
            copy.chmod(0o644)
            run = subprocess.run(
                [options.nsys_ai, "skill", "run", "top_kernels", str(copy), "--format", "json", "-p", "limit=10"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            try:
                theirs = json.loads(run.stdout[run.stdout.index("[") :])
            except ValueError:
                print(f"| {export.name} | nsys-ai failed: {run.stderr.strip().splitlines()[-1:]} | | | |")
                continue
            ours = profview.load(copy, use_cache=False).kernels().head(10)
        mine = {row["name"]: row for row in ours.iter_rows(named=True)}
        names = [row["kernel_name"] for row in theirs]
        both = [n for n in names if n in mine]
        order = names == ours["name"].to_list()[: len(names)]
        counts = sum(mine[n]["calls"] == row["invocations"] for n, row in zip(names, theirs, strict=True) if n in mine)
        totals = sum(
            abs(round(mine[n]["total_us"] / 1000, 2) - row["total_ms"]) <= 0.011
            for n, row in zip(names, theirs, strict=True)
            if n in mine
        )
        print(f"| {export.name} | {len(both)} of {len(names)} | {'yes' if order else 'no'} | {counts} | {totals} |")


if __name__ == "__main__":
    main()
