"""Cut a small rocprofv3 JSON sample from a real one: the first N kernel dispatches, as written.

    python scripts/cut_rocprof_sample.py ../shared/formats/rocprofv3/tracelens__908_results.json.gz \
        samples/rocprofv3_mi350x_train_cut.json.gz --dispatches 6000

Everything but the dispatches is kept as the file has it (metadata, agents, strings, code
objects); ``kernel_symbols`` keeps its positions (rocprofv3 writes entry N for kernel id N), the
entries of kernels no kept dispatch ran replaced by the empty entry the tool itself writes at
position 0.  The standard library only: the sample does not depend on profview's reader.
"""

from __future__ import annotations

import argparse
import gzip
import json


def cut(source: str, target: str, dispatches: int) -> None:
    """Write the first ``dispatches`` kernel dispatches of ``source`` to ``target`` (gzip)."""
    with gzip.open(source, "rt", encoding="utf-8") as fh:
        document = json.load(fh)
    process = document["rocprofiler-sdk-tool"][0]
    kept = process["buffer_records"]["kernel_dispatch"][:dispatches]
    process["buffer_records"]["kernel_dispatch"] = kept
    used = {record["dispatch_info"]["kernel_id"] for record in kept}
    symbols = process["kernel_symbols"]
    empty = symbols[0]
    process["kernel_symbols"] = [s if s["kernel_id"] in used else empty for s in symbols]
    while process["kernel_symbols"] and process["kernel_symbols"][-1] is empty:
        process["kernel_symbols"].pop()
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as out:
        json.dump(document, out, separators=(",", ":"))


def main() -> None:
    """The command line (see the module's docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--dispatches", type=int, default=6000)
    args = parser.parse_args()
    cut(args.source, args.target, args.dispatches)


if __name__ == "__main__":
    main()
