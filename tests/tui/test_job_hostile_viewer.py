"""The viewer on half-broken and cached jobs (issue 23): an unreadable rank is said, and a rank of
an archive job re-opened from its saved summary (nothing extracted) still opens."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from support import SAMPLES

from profview.jobs.job import open_job
from profview.tui.job.app import JobApp
from profview.tui.job.screen import JobScreen
from profview.tui.main.screen import MainScreen


def _archive(path: Path, bad: bool) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for rank in (0, 1):
            data = gzip.decompress((SAMPLES / "gloo_2rank" / f"rank{rank}.pt.trace.json.gz").read_bytes())
            info = tarfile.TarInfo(f"rank{rank}.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if bad:
            junk = b'{"traceEvents": ['
            info = tarfile.TarInfo("rank2.json")
            info.size = len(junk)
            tar.addfile(info, io.BytesIO(junk))
    return path


async def test_an_unreadable_rank_is_said_in_the_viewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = open_job(_archive(tmp_path / "job.tar.gz", bad=True), workers=1, use_cache=False)
    said: list[tuple[str, str]] = []
    app = JobApp(job)
    monkeypatch.setattr(app, "notify", lambda message, **kw: said.append((kw.get("title", ""), str(message))))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, JobScreen)
    job.close()
    assert [(t, m) for t, m in said if "unreadable" in t] == [
        ("job.tar.gz:rank2.json: unreadable, left out", job.failures[0][1])
    ]
    assert "the trace is cut" in job.failures[0][1]


async def test_a_rank_of_a_cached_archive_job_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "cache"))
    archive = _archive(tmp_path / "job.tar.gz", bad=False)
    open_job(archive, workers=1).close()
    job = open_job(archive, workers=1)  # from the saved job summary: nothing extracted
    assert job.inputs is not None and job.inputs.temp_dir is None
    app = JobApp(job)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("G", "enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert app.screen.profile.metadata["distributedInfo"]["rank"] == 1
    extracted = job._extracted
    assert extracted is not None and extracted.temp_dir is not None
    folder = extracted.temp_dir
    job.close()
    assert not Path(folder).exists()
