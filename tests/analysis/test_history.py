"""``yamleval history``: how each experiment moved over the newest runs, in the terminal and as
one self-contained page whose charts Chromium draws."""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

import yamleval
from conftest import DATA, assert_golden, run_cli
from reporting.test_html_browser import HOSTILE, browser, open_report  # noqa: F401  (a fixture: Chromium)

RUNS = 20

PLUGIN = '''
import pathlib


def answer(input, item, round_file):
    """Item 1 passes in even rounds only; item n > 1 fails in every n-th round; the rest pass."""
    round_ = int(pathlib.Path(round_file).read_text())
    number = int(item.id.rsplit("-", 1)[1]) if item.id.startswith("item-") else 7
    if number == 1:
        return item.expected if round_ % 2 == 0 else "wrong"
    return "wrong" if number > 1 and round_ % number == 0 else item.expected
'''

CONFIG = """
    store: results.db
    reports: {formats: []}
    experiments:
      - id: moving
        dataset: {file: items.jsonl}
        runner: {uses: "flipping:answer", with: {round_file: ROUND}}
        scorers: [exact_match, {uses: levenshtein, threshold: 0.9}]
        pass_criteria: [{type: pass_rate, min: 0.8}]
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """RUNS runs of 10 items (one with markup for an id), the last two tagged ``nightly``."""
    folder = tmp_path_factory.mktemp("history")
    (folder / "flipping.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    (folder / "evals.yaml").write_text(textwrap.dedent(CONFIG).replace("ROUND", str(folder / "round.txt")))
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for n in range(9):
            out.write(json.dumps({"id": f"item-{n}", "input": f"q{n}", "expected": f"a{n}"}) + "\n")
        out.write(json.dumps({"id": HOSTILE, "input": "q", "expected": "a"}) + "\n")
    runs = []
    for round_ in range(1, RUNS + 1):
        (folder / "round.txt").write_text(str(round_))
        outcome = yamleval.run(folder / "evals.yaml", store=str(folder / "results.db"),
                               tags=["nightly"] if round_ > RUNS - 2 else ())
        runs.append(outcome.run.run_id)
    return folder, runs


def test_the_terminal_shows_each_run_oldest_first_and_the_items_that_flip(stored):
    folder, runs = stored
    done = run_cli("history", "--last", "4", cwd=folder)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for run_id in runs[:-4]:
        assert run_id not in text
    assert [line.split()[0] for line in text.splitlines()[2:6]] == runs[-4:]
    text = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{8}", "RUN", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "YYYY-MM-DD HH:MM:SS", text)
    assert_golden(DATA / "history" / "terminal.txt", text + "\n")
    tagged = run_cli("history", "--tag", "nightly", cwd=folder)
    assert tagged.returncode == 0 and [r for r in runs if r in tagged.stdout] == runs[-2:]
    none = run_cli("history", "--tag", "release", cwd=folder)
    assert none.returncode == 0 and none.stdout == "no run tagged release\n"


def test_the_page_charts_every_run_with_intervals_and_links_the_reports_beside_it(browser, stored):  # noqa: F811
    folder, runs = stored
    for run_id in runs[-2:]:  # two runs' reports beside the page
        assert run_cli("report", run_id, "--format", "html", "--report-dir", f"site/{run_id}", cwd=folder).returncode == 0
    done = run_cli("history", "--last", str(RUNS), "--html", "site/history.html", cwd=folder)
    assert done.returncode == 0 and done.stdout == "history: site/history.html\n", done.stderr
    with open_report(browser, str(folder / "site" / "history.html")) as opened:
        page = opened.page
        section = page.locator("section.experiment")
        assert section.count() == 1 and section.locator("h2").text_content() == "moving"
        chart = section.locator("svg")
        box = chart.bounding_box()
        assert box["width"] > 300 and box["height"] > 80, "the chart is drawn"
        for series in (0, 1):
            points = chart.locator(f".series-{series} circle.point")
            assert points.count() == RUNS
            assert points.first.bounding_box()["width"] > 0
            assert chart.locator(f".series-{series} line.interval").count() == RUNS
        heights = chart.locator(".series-0 circle.point").evaluate_all("cs => cs.map(c => +c.getAttribute('cy'))")
        assert len(set(heights)) > 2, "the pass rate moves from run to run"
        links = chart.locator(".series-0 a")
        assert links.count() == 2
        assert [links.nth(i).get_attribute("href") for i in range(2)] == [f"{r}/report.html" for r in runs[-2:]]
        assert (folder / "site" / links.first.get_attribute("href")).is_file()
        assert "run " + runs[0] in chart.locator(".series-0 circle.point title").first.text_content()
        # newest on the right, and the axis says when each labelled run started and how it is tagged
        xs = chart.locator(".series-0 circle.point").evaluate_all("cs => cs.map(c => +c.getAttribute('cx'))")
        assert xs == sorted(xs) and len(set(xs)) == RUNS
        assert "run " + runs[-1] in chart.locator(".series-0 circle.point title").last.text_content()
        dates = chart.locator("text.axis-date").all_text_contents()
        newest = yamleval.api.show(runs[-1], store=str(folder / "results.db")).run.started_at
        months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
        assert 2 <= len(dates) <= 8 and dates[-1] == f"{months[int(newest[5:7]) - 1]} {int(newest[8:10])} {newest[11:16]}"
        assert float(chart.locator("text.axis-date").last.get_attribute("x")) == xs[-1]
        assert chart.locator("text.axis-tag").last.text_content() == "nightly"
        assert chart.locator("text.axis-tag").count() == 1, "only the newest two runs are tagged; one is labelled"
        labels = [chart.locator("text.axis-date").nth(n).bounding_box() for n in range(len(dates))]
        assert all(a["x"] + a["width"] < b["x"] for a, b in zip(labels, labels[1:])), "no label overlaps the next"
        runs_table = section.locator("table.runs tbody tr")
        assert runs_table.count() == RUNS
        assert runs_table.first.locator("td").all_inner_texts()[4:6] == ["10", "70.0%"], "newest first"
        rows = section.locator("table.churn tbody tr")
        assert rows.first.locator("td").first.inner_text() == "item-1"
        assert rows.first.locator("td").nth(1).inner_text() == str(RUNS - 1)
        assert HOSTILE in section.locator("table.churn").inner_text(), "an id with markup is shown as text"
        assert page.evaluate("document.scripts.length") == 0 and page.evaluate("!window.__pwned")
        opened.assert_quiet()


def test_history_of_an_empty_store_and_an_unwritable_page(tmp_path):
    (tmp_path / "evals.yaml").write_text("store: r.db\nexperiments: []\n")
    from yamleval.store.writer import Store

    Store(str(tmp_path / "r.db")).close()
    assert run_cli("history", cwd=tmp_path).stdout == "no runs yet\n"
    (tmp_path / "blocked").write_text("a file where a folder should be")
    done = run_cli("history", "--html", "blocked/history.html", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("error: cannot write blocked/history.html: ")
    assert "Traceback" not in done.stderr and not Path(tmp_path / "blocked" / "history.html").exists()


def test_the_history_and_compare_pages_fit_a_phone_screen(browser, stored, tmp_path):  # noqa: F811
    """At 390 px a wide table or chart scrolls inside its card: the page itself does not scroll sideways."""
    folder, runs = stored
    assert run_cli("history", "--html", str(tmp_path / "history.html"), cwd=folder).returncode == 0
    done = run_cli("compare", runs[0], runs[-1], "--format", "html", cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    (tmp_path / "compare.html").write_text(done.stdout, encoding="utf-8")
    for name, table in (("history.html", "table.runs"), ("compare.html", "table.verdicts")):
        with open_report(browser, str(tmp_path / name), width=390) as opened:
            page = opened.page
            assert page.locator(table).first.evaluate("t => t.scrollWidth") > 390, "the table is wider than the screen"
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
            if name == "history.html":  # the chart keeps a width at which its labels can be read, and scrolls
                assert page.locator("figure.history-chart svg").first.bounding_box()["width"] >= 480
                newest = page.locator("figure.history-chart .series-0 circle.point").last.bounding_box()
                assert 0 <= newest["x"] and newest["x"] + newest["width"] <= 390, "it opens on the newest runs"
            opened.assert_quiet()


def test_compare_report_and_show_take_a_tag_for_its_newest_run(stored, tmp_path):
    folder, runs = stored
    store = str(folder / "results.db")
    by_tag = run_cli("compare", "nightly", runs[-3], "--store", store, "--format", "json", cwd=folder)
    by_id = run_cli("compare", runs[-1], runs[-3], "--store", store, "--format", "json", cwd=folder)
    assert by_tag.returncode == by_id.returncode and json.loads(by_tag.stdout) == json.loads(by_id.stdout)
    assert json.loads(by_tag.stdout)["base"] == runs[-1]  # the newer of the two tagged runs
    shown = run_cli("show", "nightly", "--store", store, cwd=folder)
    assert runs[-1] in shown.stdout and runs[-2] not in shown.stdout
    report = run_cli("report", "nightly", "--store", store, "--format", "json", "--report-dir", str(tmp_path),
                     cwd=folder)
    assert report.returncode in (0, 1), report.stderr
    assert json.loads((tmp_path / "results.json").read_text())["run_id"] == runs[-1]
    missing = run_cli("show", "weekly", "--store", store, cwd=folder)
    assert missing.returncode == 2 and "no run or tag 'weekly'" in missing.stderr


BROKEN_WORDS = """el => {
  const broken = [];
  for (const pre of el.querySelectorAll("pre")) {
    const text = pre.firstChild, words = /\\S+/g;
    let m;
    while ((m = words.exec(text.textContent))) {
      const range = document.createRange();
      range.setStart(text, m.index);
      range.setEnd(text, m.index + m[0].length);
      if (range.getClientRects().length > 1) broken.push(m[0]);
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [390, 1000])
def test_the_compare_page_breaks_lines_between_words(browser, tmp_path, width):  # noqa: F811
    (tmp_path / "evals.yaml").write_text(textwrap.dedent("""
        store: results.db
        reports: {formats: []}
        experiments:
          - id: capitals
            dataset:
              items:
                - {id: japan, input: What is the capital city of Japan in Asia?, expected: Tokyo is the capital}
            runner: {uses: echo, with: {output: "{{ vars.answer }}"}}
            vars: {answer: wrong}
            scorers: [exact_match]
    """), encoding="utf-8")
    assert run_cli("run", "-q", "--tag", "before", cwd=tmp_path).returncode == 1
    assert run_cli("run", "-q", "--tag", "after", "--set", "vars.answer=Tokyo is the capital", cwd=tmp_path).returncode == 0
    done = run_cli("compare", "before", "after", "--format", "html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "compare.html").write_text(done.stdout, encoding="utf-8")
    with open_report(browser, str(tmp_path / "compare.html"), width=width) as opened:
        flips = opened.page.locator("table.flips")
        assert flips.locator("pre").count() == 3  # the input and the two answers
        assert flips.evaluate(BROKEN_WORDS) == []
        assert opened.page.evaluate("document.documentElement.scrollWidth") <= width
        opened.assert_quiet()
