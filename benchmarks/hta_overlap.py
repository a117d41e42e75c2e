"""Cross-check: HTA's communication/computation overlap per rank beside profview's ranks view.

Not a test dependency.  Run HTA in a throwaway venv (it pins its own pandas/numpy):

    python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install HolisticTraceAnalysis
    /tmp/htavenv/bin/python benchmarks/hta_overlap.py samples/param_dlrm_8rank_v100.tar.gz

then compare with ``profview export samples/param_dlrm_8rank_v100.tar.gz --view ranks -o -``
(column ``overlap_pct``).  HTA reads a folder of ``*.json`` rank traces; the archive is unpacked
into a temporary folder first.
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path


def main(archive: str) -> None:
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as folder:
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".json"):
                    data = tar.extractfile(member)
                    assert data is not None
                    (Path(folder) / Path(member.name).name).write_bytes(data.read())
        analysis = TraceAnalysis(trace_dir=folder)
        overlap = analysis.get_comm_comp_overlap(visualize=False)
    print(overlap.to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "samples/param_dlrm_8rank_v100.tar.gz")
