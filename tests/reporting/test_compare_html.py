"""``yamleval compare --format html`` in a real browser: the verdicts with their intervals, then
the flipped items side by side, on a page that loads and runs nothing."""
from __future__ import annotations

import textwrap

import pytest

from conftest import run_cli
from reporting.test_html_browser import browser, open_report  # noqa: F401  (a fixture: Chromium)
from cli.test_cli import _two_stored_runs



@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    """Two runs of 20 items: the candidate fails the first 8, which the base passed."""
    folder = tmp_path_factory.mktemp("compare-html")
    base, candidate = _two_stored_runs(lambda text: (folder / "evals.yaml").write_text(textwrap.dedent(text)),
                                       folder, failing_before=0, failing_after=8, items=20)
    done = run_cli("compare", base, candidate, "--store", "r.db", "--format", "html", cwd=folder)
    assert done.returncode == 0, done.stderr
    (folder / "compare.html").write_text(done.stdout, encoding="utf-8")
    return str(folder / "compare.html")


def test_the_verdicts_come_first_with_their_intervals(browser, page_path):  # noqa: F811
    with open_report(browser, page_path) as opened:
        page = opened.page
        assert page.locator("main section").first.get_attribute("id") == "verdicts"
        rows = page.locator("table.verdicts tbody tr")
        assert rows.count() == 2  # the experiment, and its one scorer
        first = rows.nth(0).locator("td").all_inner_texts()
        assert first[:6] == ["e", "regressed", "20", "8", "0", "0.0078"]
        assert first[7].startswith("95% CI ")
        assert "regressed: e, e › exact_match" in page.locator(".verdict-line").inner_text()
        assert page.locator(".badge").inner_text() == "REGRESSED"
        opened.assert_quiet()
        assert page.evaluate("document.scripts.length") == 0


def test_the_flipped_items_are_side_by_side(browser, page_path):  # noqa: F811
    with open_report(browser, page_path) as opened:
        flips = opened.page.locator("table.flips tbody tr")
        assert flips.count() == opened.page.locator("table.flips tr.regression").count() == 8
        cells = flips.nth(0).locator("td")
        assert cells.nth(0).inner_text().startswith("i0")
        assert cells.nth(1).locator(".pill").inner_text() == "passed"
        assert cells.nth(2).locator(".pill").inner_text() == "failed"
        assert cells.nth(2).locator("pre.output").inner_text() == "answer 0"
        # side by side: the candidate's cell is right of the base's, on the same row
        base, candidate = cells.nth(1).bounding_box(), cells.nth(2).bounding_box()
        assert candidate["x"] > base["x"] and candidate["y"] == base["y"]
