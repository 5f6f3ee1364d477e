"""The variants of the demo's model comparison in report.html, in a real browser (see
test_html_browser): the variants table with the baseline comparison, and one item's three
answers side by side."""
from __future__ import annotations

import shutil

import pytest

from conftest import ROOT, run_cli
from reporting.test_html_browser import browser, open_report  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("variants-demo")
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / name)
    done = run_cli("run", "-q", "-e", "model-choice", "--report-dir", "out", "--store", "r.db", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder / "out" / "report.html"


def test_the_variants_table_marks_the_best_and_compares_with_the_baseline(browser, demo):  # noqa: F811
    with open_report(browser, str(demo)) as opened:
        section = opened.page.locator("section.variants")
        rows = section.locator(".variants-table tbody tr")
        assert [rows.nth(n).get_attribute("data-variant") for n in range(3)] == ["small", "large", "large-chatty"]
        assert rows.nth(0).locator("td.against").inner_text() == "baseline"
        against = rows.nth(1).locator("td.against").inner_text()
        assert against.startswith("better, not proven with 3 items (about 11 items in each variant would show a "
                                  "difference of this size, 80% of the time): 0 pass → fail, 1 fail → pass, McNemar p = 1")
        best = rows.nth(1).locator("td.best")
        assert "100.0%" in best.first.inner_text()  # the pass rate, best of the three
        assert rows.nth(0).locator("td.best").count() < best.count()
        assert "not gated" in rows.nth(2).inner_text()
        opened.assert_quiet()


def test_one_item_shows_the_three_answers_side_by_side(browser, demo):  # noqa: F811
    with open_report(browser, str(demo)) as opened:
        section = opened.page.locator("section.variants")
        heads = section.locator(".side-table thead th.side-group").all_inner_texts()
        assert heads == ["small (baseline)", "large", "large-chatty"]
        japan = section.locator("tr.side-row[data-id=japan]")
        assert japan.locator(".pill").all_inner_texts()[::2] == ["fail", "pass", "pass"]
        japan.click()
        answers = section.locator(".side-detail .side-answer")
        assert answers.count() == 3
        assert [answers.nth(n).locator("pre.answer").inner_text() for n in range(3)] == [
            "Kyoto", "Tokyo", "The capital of Japan is Tokyo, the largest city of the country."]
        boxes = [answers.nth(n).bounding_box() for n in range(3)]
        assert boxes[0]["y"] == boxes[1]["y"] == boxes[2]["y"] and boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
        opened.assert_quiet()


def test_the_filters_show_where_the_variants_disagree(browser, demo):  # noqa: F811
    with open_report(browser, str(demo)) as opened:
        section = opened.page.locator("section.variants")
        assert section.locator("tr.side-row").count() == 3
        section.locator("select.side-filter").select_option("disagree")
        assert section.locator("tr.side-row").get_attribute("data-id") == "japan"
        assert section.locator(".side-showing").inner_text() == "1 of 3 items"
        section.locator("select.side-filter").select_option("regressed")  # the baseline never passed where others failed
        assert section.locator("tr.side-row").count() == 0
        opened.assert_quiet()


def test_the_side_by_side_rows_work_from_the_keyboard(browser, demo):  # noqa: F811
    with open_report(browser, str(demo)) as opened:
        section, keyboard = opened.page.locator("section.variants"), opened.page.keyboard
        assert section.locator("[data-side-page=prev]").is_disabled()  # one page: nowhere to go
        assert section.locator("[data-side-page=next]").is_disabled()
        first = section.locator("tr.side-row").first
        first.focus()
        keyboard.press("Enter")
        assert section.locator(".side-detail").count() == 1
        assert first.get_attribute("aria-expanded") == "true"
        assert opened.page.evaluate("document.activeElement.getAttribute('data-id')") == first.get_attribute("data-id")
        keyboard.press("ArrowDown")
        second = section.locator("tr.side-row").nth(1)
        assert opened.page.evaluate("document.activeElement.getAttribute('data-id')") == second.get_attribute("data-id")
        keyboard.press(" ")
        assert section.locator(".side-detail").count() == 2
        keyboard.press("Escape")
        assert section.locator(".side-detail").count() == 1 and second.get_attribute("aria-expanded") == "false"
        opened.assert_quiet()


def test_the_side_by_side_pager_goes_as_far_as_there_are_pages(browser, tmp_path):  # noqa: F811
    items = ", ".join(f"{{id: i{n:02d}, input: q{n}, expected: q{n}}}" for n in range(60))
    (tmp_path / "evals.yaml").write_text(f"""
reports: {{formats: [html]}}
experiments:
  - id: many
    dataset: {{items: [{items}]}}
    runner: {{uses: echo, with: {{output: "{{{{ vars.prefix }}}}{{{{ input }}}}"}}}}
    vars: {{prefix: ""}}
    variants:
      - {{id: plain}}
      - {{id: marked, vars: {{prefix: "x-"}}}}
    scorers: [exact_match]
""", encoding="utf-8")
    done = run_cli("run", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    with open_report(browser, str(tmp_path / "reports" / "report.html")) as opened:
        section = opened.page.locator("section.variants")
        prev, next_ = section.locator("[data-side-page=prev]"), section.locator("[data-side-page=next]")
        assert section.locator(".side-page-of").inner_text() == "page 1 of 2"
        assert prev.is_disabled() and next_.is_enabled()
        assert section.locator("tr.side-row").count() == 50
        next_.click()
        assert section.locator(".side-page-of").inner_text() == "page 2 of 2"
        assert prev.is_enabled() and next_.is_disabled()
        assert section.locator("tr.side-row").count() == 10
        prev.click()
        assert section.locator("tr.side-row").first.get_attribute("data-id") == "i00"
        opened.assert_quiet()


def test_the_experiment_list_names_each_variant(browser, demo):  # noqa: F811
    with open_report(browser, str(demo)) as opened:
        links = opened.page.locator("nav.toc li a").all_inner_texts()
        assert links == ["Capitals, by model — Small model", "Capitals, by model — Large model",
                         "Capitals, by model — Large model, in sentences"], links
        assert opened.page.locator("section.experiment h2").all_inner_texts() == links
        opened.assert_quiet()


def test_on_a_phone_each_variant_is_a_card_that_needs_no_sideways_scroll(browser, demo):  # noqa: F811
    with open_report(browser, str(demo), width=390) as opened:
        table = opened.page.locator("table.variants-table")
        scroller = opened.page.locator("section.variants .table-scroll").first
        assert table.evaluate("t => t.scrollWidth") <= scroller.evaluate("s => s.clientWidth")
        first = table.locator("tbody tr").first
        assert first.locator(".badge").inner_text() == "PASSED"
        against = first.locator("td.against")
        assert against.evaluate("td => getComputedStyle(td, '::before').content") == '"Against the baseline: "'
        assert opened.page.evaluate("document.documentElement.scrollWidth") <= 390
        opened.assert_quiet()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_answers_side_by_side_and_the_criteria_and_scorers_fit_the_screen(browser, demo, width):  # noqa: F811
    with open_report(browser, str(demo), width=width) as opened:
        page = opened.page
        section = page.locator("section.variants")
        assert section.locator(".side-showing").inner_text() == "3 of 3 items"
        section.locator("tr.side-row[data-id=japan]").click()
        answers = section.locator(".side-detail .side-answer")
        assert answers.count() == 3
        for n in range(3):
            box = answers.nth(n).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"answer {n + 1} is off the screen"
            assert box["width"] >= 240, "an answer is a column of a few characters"
        tables = page.locator("table.criteria-table, table.scorers-table")
        assert tables.count() >= 2
        for fits in tables.evaluate_all("ts => ts.map(t => t.scrollWidth <= t.parentElement.clientWidth"
                                        " && t.getBoundingClientRect().right <= innerWidth)"):
            assert fits, "a criteria or scorers table is cut"
        if width == 390:
            assert section.locator("tr.side-row[data-id=japan] td[data-label]").nth(1).evaluate(
                "td => getComputedStyle(td, '::before').content") == '"small (baseline): "'
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        opened.assert_quiet()
