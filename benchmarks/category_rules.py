"""How often the kernel table's category (by name) differs from the by-operator one, per trace.

    .venv/bin/python benchmarks/category_rules.py [TRACE ...]   # default: every trace of ../shared/traces

Per kernel name, the by-operator category is the one holding most of the name's time (docs/efficiency.md,
"Kernel categories: two rules").  Prints a markdown table: names that differ, their share of kernel
time, and the pairs (by operator → by name).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "traces"


def main() -> None:
    import polars as pl

    import profview
    from profview.errors import ProfviewError
    from profview.profiles.views import view_frame

    paths = sys.argv[1:] or sorted(str(p) for p in [*SHARED.glob("*.json.gz"), *SHARED.glob("public/*.json*")])
    print("| trace | names that differ | of kernel time | by operator → by name |\n|---|---|---|---|")
    totals = [0, 0, 0.0, 0.0]
    for path in paths:
        try:
            profile = profview.load(path, use_cache=False)
            by_name = view_frame(profile, "kernels").select("name", "category", "total_us")
            by_op = (
                profile._categorized.filter(pl.col("kind") == "kernel")
                .group_by("name", "category")
                .agg(pl.col("dur").sum())
                .sort(["name", "dur", "category"], descending=[False, True, False])
                .group_by("name", maintain_order=True)
                .first()
                .select("name", pl.col("category").alias("by_op"))
            )
        except ProfviewError as exc:
            print(f"| {Path(path).name} | - | - | {exc.problem} |")
            continue
        differ = by_name.join(by_op, on="name").filter(pl.col("category") != pl.col("by_op"))
        pairs = differ.group_by("by_op", "category").agg(pl.len()).sort(["len", "by_op"], descending=[True, False])
        text = ", ".join(f"{a} → {b} {n}" for a, b, n in pairs.rows())
        share = 100 * float(differ["total_us"].sum()) / max(float(by_name["total_us"].sum()), 1e-9)
        print(f"| {Path(path).name} | {differ.height} of {by_name.height} | {share:.1f}% | {text} |")
        totals = [
            totals[0] + differ.height, totals[1] + by_name.height,
            totals[2] + float(differ["total_us"].sum()), totals[3] + float(by_name["total_us"].sum()),
        ]  # fmt: skip
    print(f"| all | {totals[0]} of {totals[1]} | {100 * totals[2] / max(totals[3], 1e-9):.1f}% | |")


if __name__ == "__main__":
    main()
