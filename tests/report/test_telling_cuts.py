"""Names cut to fit keep the part that tells them apart: two cuDNN batchnorm kernels of the ResNet-50
sample differ only in one template argument in their middle (``…, 1, 1, true, 2>`` and ``…, 1, 0,
true, 2>``), so a cut that keeps both ends showed them alike in ``summary`` at 80 columns and in
the Kernels tab at 80x24."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import run_cli, sample

from profview.report.wording import middle_cut, telling_cuts

TRACE = "resnet50_train_amp.pt.trace.json.gz"


def _kernel_names(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The kernels' whole names, from the kernels export (the figures' source)."""
    assert run_cli(["export", str(sample(TRACE)), "-v", "kernels", "-o", "-", "--no-cache"]) == 0
    return [row["name"] for row in csv.DictReader(io.StringIO(capsys.readouterr().out))]


def test_summary_at_80_columns_tells_every_top_kernel_apart(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    names = _kernel_names(capsys)
    top = names[:10]
    assert len(set(middle_cut(n, 42) for n in top)) < len(top)  # the plain cut shows some alike
    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli(["summary", str(sample(TRACE)), "--no-cache"]) == 0
    text = capsys.readouterr().out
    block = text[text.index("Top 10 kernels") :].splitlines()[2:12]
    shown = [line.rsplit(None, 4)[0] for line in block]
    assert len(shown) == 10 and len(set(shown)) == 10
    assert all(len(line) <= 80 for line in block)


@pytest.mark.tui
async def test_kernels_tab_at_80x24_tells_the_batchnorm_kernels_apart(capsys: pytest.CaptureFixture[str]) -> None:
    from pilot import wait_loaded

    from profview.tui.app import ProfviewApp

    batchnorm = [n for n in _kernel_names(capsys) if "batchnorm" in n]
    assert len(batchnorm) == 4
    app = ProfviewApp(str(sample(TRACE)), no_cache=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("2", "slash", *"batchnorm", "enter")
        await pilot.pause()
        table = app.screen.query_one("DataTable")
        shown = [str(table.get_row_at(row)[0]) for row in range(table.row_count)]
        assert len(shown) == 4 and len(set(shown)) == 4
        await pilot.press("q")


names = st.lists(st.text(alphabet="ab<(,", min_size=0, max_size=60), min_size=1, max_size=12)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(names=names, width=st.integers(min_value=1, max_value=50))
def test_telling_cuts_fit_and_tell_apart_or_stay_plain(names: list[str], width: int) -> None:
    shown = telling_cuts(names, width)
    plain = [middle_cut(n, width) for n in names]
    assert all(len(s) <= width for s in shown)
    for name, text, cut in zip(names, shown, plain, strict=True):
        if text != cut:  # a telling cut: it reads like no row of another name
            assert all(other == name for other, seen in zip(names, shown, strict=True) if seen == text)
