"""The compiled scanner alone on one thread: the inflated document scanned N times, CPU seconds each.

    .venv/bin/python benchmarks/scan_only.py TRACE [N]
    valgrind --tool=callgrind --toggle-collect=scan_events .venv/bin/python benchmarks/scan_only.py TRACE 1

The document is inflated first (not counted); each scan is ``scan_events`` over the whole event
array, as one range, so callgrind's counts and ``perf`` samples are the scanner's own.
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

from profview.compiled import compiled_module


def main() -> None:
    path = Path(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    scanner = compiled_module("_fastscan")
    if scanner is None:
        raise SystemExit("the compiled scanner is not built (or PROFVIEW_PURE_PYTHON is set)")
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    first = data.index(b"[", data.index(b'"traceEvents"')) + 1
    while data[first : first + 1] != b"{":
        first += 1
    for _ in range(runs):
        start = time.process_time()
        scanner.scan_events(data, first, len(data), False)
        print(f"scan {time.process_time() - start:.3f} s CPU, {len(data) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
