"""The CLI reads a trace while the libraries import (profview.profiles.prefetch): same answers, or none."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from support import raw_events, sample

from profview.errors import ProfviewError
from profview.profiles import prefetch
from profview.profiles.loading import load

DDP = "ddp_nccl_streams.pt.trace.json.gz"


@pytest.fixture(autouse=True)
def no_reads_left() -> None:
    """Reads started by other tests' CLI runs that stopped before loading (a refused option) are
    not this test's."""
    prefetch._reads.clear()


def test_a_prefetched_read_is_the_read(ddp_copy: Path) -> None:
    """The file taken was read in chunks on the thread (inflated and, with the compiled scanner,
    scanned: as many rows as the stdlib finds elements in traceEvents), and the load from it
    counts the kernels the raw events hold."""
    prefetch.start(str(ddp_copy))
    file = prefetch.take(str(ddp_copy))
    assert file is not None and file.chrome and file.source is None
    if file.scan is not None:
        elements = len(json.loads(gzip.decompress(ddp_copy.read_bytes()))["traceEvents"])
        assert sum(part.rows for part in file.scan.parts) == elements == len(raw_events(DDP))
    assert file.path == str(ddp_copy)
    assert prefetch.take(str(ddp_copy)) is None  # taken once
    prefetch.start(str(ddp_copy))
    kernels = load(ddp_copy).kernels()
    assert kernels["calls"].sum() == sum(1 for e in raw_events(DDP) if e.get("cat") == "kernel")
    assert prefetch._reads == {}  # the load took it


def test_a_cached_trace_is_not_read(ddp_copy: Path) -> None:
    load(ddp_copy).kernels()  # fills the cache
    prefetch.start(str(ddp_copy))
    assert prefetch._reads == {}
    prefetch.start(str(ddp_copy), use_cache=False)  # --no-cache: it will be parsed
    assert prefetch.take(str(ddp_copy)) is not None


def test_a_file_changed_after_the_read_is_read_again(ddp_copy: Path) -> None:
    prefetch.start(str(ddp_copy), use_cache=False)
    prefetch._reads[str(ddp_copy.resolve())].thread.join()
    shutil.copy(sample("hta_mi250_rocm_minitoy.json.gz"), ddp_copy)
    assert prefetch.take(str(ddp_copy)) is None
    assert load(ddp_copy, use_cache=False).kernels()["calls"].sum() == 14  # the ROCm trace's kernels


def test_a_bad_file_fails_with_the_same_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 50)
    with pytest.raises(ProfviewError) as direct:
        load(bad, use_cache=False)
    prefetch.start(str(bad), use_cache=False)
    with pytest.raises(ProfviewError) as prefetched:
        load(bad, use_cache=False)
    assert str(prefetched.value) == str(direct.value)


def test_a_directory_or_pipe_is_not_read(tmp_path: Path) -> None:
    prefetch.start(str(tmp_path))
    prefetch.start(str(tmp_path / "absent.json"))
    assert prefetch._reads == {}
