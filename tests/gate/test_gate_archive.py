"""A job's archive named as a side of the gate is refused as an archive (extract it, then name the
folder), not read as one trace and called binary data."""

from __future__ import annotations

import tarfile

import pytest
from support import SAMPLES, run_cli


def test_an_archive_side_is_refused_as_an_archive(capsys: pytest.CaptureFixture[str]) -> None:
    archive = SAMPLES / "param_dlrm_8rank_v100.tar.gz"
    with tarfile.open(archive) as tar:  # the witness: a real archive of several rank traces
        assert sum(1 for member in tar.getmembers() if member.name.endswith(".json")) > 1
    code = run_cli(["diff", str(archive), str(archive), "--fail-if", "kernels.total_us > +5%"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is an archive: extract it, then name the folder" in err
    assert "binary data" not in err and "Traceback" not in err
