"""report.html in a real browser: Debian's chromium, driven by playwright, opening the file from disk.

Without playwright or /usr/bin/chromium these tests fail when ``CI`` is set and skip otherwise.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

import yamleval
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import text_reply
from yamleval.records import figures
from yamleval.reporting import write_reports
from yamleval.records.types import ItemList, RunInfo

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL = ("file:", "data:", "about:")
HOSTILE = '<script>window.__pwned=1</script> and <img src=x onerror="window.__pwned=1">'
LONG_EXPECTED = " ".join(f"sentence {n} of a long expected answer." for n in range(120))
ITEMS = 150
ASSERTIONS = ["must give the number of business days", HOSTILE]


def dataset() -> list[dict]:
    """150 items: every third answer is off by a few words, one has no expected value, one
    answers with markup, one has a long expected text and one a word to search for; the first
    two have assertions (a list, one given alone)."""
    rows = []
    for n in range(ITEMS):
        expected = f"Shipping to zone {n} takes 3 to 5 business days."
        reply = expected if n % 3 else f"Shipping to zone {n} takes about 7 business days."
        rows.append({"id": f"q{n:03d}", "input": f"How long does shipping to zone {n} take?",
                     "expected": expected, "reply": reply})
    del rows[4]["expected"]
    rows[7]["reply"] = HOSTILE
    rows[10].update(expected=LONG_EXPECTED, reply=LONG_EXPECTED.replace("sentence 60 of", "line 60 in"))
    rows[11]["input"] = "Is there a zebra-needle in the haystack?"
    rows[0]["assertions"] = ASSERTIONS
    rows[1]["assertions"] = "must name the zone"
    return rows


CONFIG = """
    models:
      toy: {model: toy, script: model.yaml}
    experiments:
      - id: shipping
        label: Shipping answers
        dataset: {file: shipping.jsonl, fields: {context: reply}}
        runner: {uses: echo, with: {output: "{{ item.context }}"}}
        scorers: [exact_match, {uses: levenshtein, threshold: 0.9}]
        pass_criteria:
          - {type: pass_rate, min: 0.5, label: Most answers right}
          - {type: mean_score, scorer: levenshtein, min: 0.95, severity: warn}
      - id: crashes
        label: Crashing runner
        dataset: {items: [{id: fine, input: ok, expected: ok}, {id: boom, input: raise, expected: x}]}
        runner: fixture_plugins.behaviours:per_item
        scorers: [exact_match]
      - id: agent
        label: Agent with a trace
        dataset: {items: [{id: sum, input: "What is 2+2?", expected: "4"}]}
        runner: fixture_plugins.behaviours:agentish
        scorers: [exact_match]
      - id: calculator
        label: An agent the trajectory scorer counts
        dataset: {items: [{id: multiply, input: "What is 17 * 23?", expected: "17 × 23 = 391."}]}
        runner: {uses: agent, with: {model: toy, instructions: "Use the calculator.", tools: [calculator]}}
        scorers:
          - {uses: trajectory, with: {max_steps: 1, must_call: [calculator]}}
          - {uses: tool_call_accuracy, with: {expected_tool: calculator}}
"""
MODEL_SCRIPT = """
- when: {role: user, content: "17 \\\\* 23"}
  reply: {content: "Let me compute that.", tool_calls: [{name: calculator, arguments: {expression: "17 * 23"}}]}
- when: {role: tool, content: "^391$"}
  reply: {content: "17 × 23 = 391."}
"""


@pytest.fixture(scope="module")
def browser():
    problem = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        problem = "the playwright package is missing: pip install '.[test]'"
    if problem is None and not os.access(CHROMIUM, os.X_OK):
        problem = f"{CHROMIUM} is missing: apt-get install chromium"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run: {problem}", pytrace=False)
        pytest.skip(problem)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def write_project(folder, data_file: str, rows: list[dict], config: str) -> None:
    """``rows`` as the JSONL file ``data_file`` and ``config`` as evals.yaml, in ``folder``."""
    with open(folder / data_file, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    (folder / "evals.yaml").write_text(textwrap.dedent(config), encoding="utf-8")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html-report")
    write_project(folder, "shipping.jsonl", dataset(), CONFIG)
    (folder / "model.yaml").write_text(MODEL_SCRIPT, encoding="utf-8")
    results = [yamleval.run_experiment(e) for e in yamleval.load_experiments(folder / "evals.yaml")]
    run = RunInfo(run_id="browser-run", status="completed", started_at="2026-01-01T00:00:00.000Z")
    [path] = write_reports(str(folder), ["html"], run, results)
    return path, results


@dataclass
class Page:
    """An open report, with every request that left the file and every error the page logged."""

    page: Any
    remote: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def section(self, number: int = 0):
        return self.page.locator(f"#exp-{number}")

    def rows(self, number: int = 0):
        return self.section(number).locator("tbody tr.row")

    def verdicts(self, number: int = 0) -> list[str]:
        return self.rows(number).locator("td:nth-child(3) .pill").all_inner_texts()

    def search(self, text: str, number: int = 0) -> None:
        box = self.section(number).locator("input.search")
        box.fill(text)
        box.press("Enter")

    def assert_quiet(self) -> None:
        assert self.remote == [], f"the page made network requests: {self.remote}"
        assert self.problems == [], f"the page logged errors: {self.problems}"


@contextmanager
def open_report(browser, path: str, width: int = 1400):
    """The report at ``path`` in a fresh browser context, once its script has run."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = Page(context.new_page())
    page.page.on("request", lambda r: None if r.url.startswith(LOCAL) else page.remote.append(r.url))
    page.page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
    page.page.on("pageerror", lambda e: page.problems.append(str(e)))
    page.page.goto("file://" + os.path.abspath(path))
    page.page.wait_for_selector("html[data-ready=true]")
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def opened(browser, report):
    with open_report(browser, report[0]) as page:
        yield page


def test_rows_render_with_the_right_counts(opened, report):
    _, results = report
    summary = results[0].summary
    section = opened.section()
    assert opened.rows().count() == 100
    assert section.locator(".showing").inner_text() == f"Showing 1–100 of {ITEMS} items"
    counts = {s: section.locator(f"[data-count={s}]").inner_text() for s in ("passed", "failed", "error", "skipped")}
    assert counts == {"passed": str(summary.passed), "failed": str(summary.failed), "error": "0", "skipped": "1"}
    assert summary.failed == 52 and summary.skipped == 1  # every third item, the markup and the long one
    assert section.locator(".page-of").inner_text() == "Page 1 of 2"
    section.locator("button[data-page=next]").click()
    assert opened.rows().count() == ITEMS - 100
    assert opened.rows().first.locator("td.item-id").inner_text() == "q100"
    assert opened.verdicts(1) == ["pass", "error"]
    assert opened.rows(1).nth(1).locator("td:nth-child(4)").inner_text() == "runner raised RuntimeError: boom on purpose"
    opened.assert_quiet()


def test_status_filter_and_search_change_the_visible_rows(opened, report):
    _, results = report
    summary = results[0].summary
    section = opened.section()
    section.locator("input[data-status=passed]").uncheck()
    assert opened.rows().count() == summary.failed + summary.skipped
    assert set(opened.verdicts()) == {"fail", "skipped"}
    section.locator("input[data-status=failed]").uncheck()
    assert opened.verdicts() == ["skipped"]
    section.locator("input[data-status=passed]").check()
    section.locator("input[data-status=failed]").check()

    opened.search("ZEBRA-needle")
    assert opened.rows().count() == 1
    assert opened.rows().first.locator("td:nth-child(2)").inner_text() == "Is there a zebra-needle in the haystack?"
    assert section.locator("[data-count=passed]").inner_text() == "1"
    assert section.locator("[data-count=failed]").inner_text() == "0"
    opened.search("about 7 business")  # in outputs only
    assert opened.rows().count() == ITEMS // 3
    opened.search("no item says this")
    assert opened.rows().count() == 0
    assert section.locator("td.empty").inner_text() == "No items match the filters."
    opened.search("")
    assert opened.rows().count() == 100
    opened.assert_quiet()


def test_sorting_by_a_column(opened):
    section = opened.section()
    section.locator("th[data-sort=index] button").click()  # already ascending: now descending
    assert opened.rows().first.locator("td.item-id").inner_text() == f"q{ITEMS - 1:03d}"
    section.locator("th[data-sort=status] button").click()
    assert opened.verdicts()[:3] == ["fail", "fail", "fail"]
    assert section.locator("th[data-sort=status]").get_attribute("aria-sort") == "ascending"
    section.locator("th[data-sort='score:1'] button").click()
    first = opened.rows().first.locator("td.score").nth(1).inner_text()
    assert first.startswith("0.")
    opened.assert_quiet()


def test_expanding_a_row_shows_the_full_text_and_the_diff(opened):
    section = opened.section()
    long_row = opened.rows().nth(10)
    assert len(long_row.locator("td:nth-child(5)").inner_text()) < 300  # truncated in the table
    long_row.click()
    assert long_row.get_attribute("aria-expanded") == "true"
    detail = section.locator("tr.detail")
    assert detail.count() == 1
    assert LONG_EXPECTED in detail.locator("pre").all_inner_texts()
    assert detail.locator(".diff del").all_inner_texts() == ["sentence", "of"]
    assert detail.locator(".diff ins").all_inner_texts() == ["line", "in"]
    long_row.click()
    assert section.locator("tr.detail").count() == 0

    # by keyboard: focus a row, Enter opens it, arrows move, Escape closes
    row = opened.rows().nth(3)
    row.focus()
    opened.page.keyboard.press("Enter")
    detail = section.locator("tr.detail")
    assert detail.count() == 1 and row.get_attribute("aria-expanded") == "true"
    assert detail.locator(".diff del").all_inner_texts() == ["3 to 5"]
    assert detail.locator(".diff ins").all_inner_texts() == ["about 7"]
    assert detail.locator(".diff").inner_text() == "Shipping to zone 3 takes 3 to 5 about 7 business days."
    opened.page.keyboard.press("ArrowDown")
    assert opened.page.evaluate("document.activeElement.querySelector('td.item-id').textContent") == "q004"
    opened.page.keyboard.press("ArrowUp")
    opened.page.keyboard.press("Escape")
    assert section.locator("tr.detail").count() == 0 and row.get_attribute("aria-expanded") == "false"
    opened.assert_quiet()


def test_model_markup_renders_as_text(opened):
    section = opened.section()
    row = opened.rows().nth(7)
    assert row.locator("td:nth-child(4)").inner_text() == HOSTILE
    row.focus()
    opened.page.keyboard.press("Enter")
    assert HOSTILE in section.locator("tr.detail pre").all_inner_texts()
    assert opened.page.evaluate("window.__pwned") is None
    assert opened.page.evaluate("document.querySelectorAll('main img, main script, main iframe').length") == 0
    opened.assert_quiet()


def test_the_page_makes_no_network_request(opened):
    page = opened.page
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.classList.contains('search')")
    opened.search("zone 1")
    opened.rows().first.click()
    page.locator("a[href='#exp-1']").click()
    opened.section().locator(".pager select").select_option("25")
    assert opened.rows().count() == 25
    assert page.evaluate("window.__pwned") is None
    opened.assert_quiet()


def test_expanding_a_trajectory_shows_each_step_as_text(opened):
    section = opened.section(2)
    opened.rows(2).nth(0).click()
    trajectory = section.locator("tr.detail details.trajectory")
    assert trajectory.count() == 1
    assert trajectory.get_attribute("open") is None, "collapsed until opened"
    assert trajectory.locator("summary").inner_text() == "Trajectory · 2 steps · 1 tool call"
    trajectory.locator("summary").click()
    steps = trajectory.locator("li.step")
    assert [head.strip() for head in steps.locator(".step-head").all_inner_texts()] == [
        "Step 1 · model · 12.5 ms · 13 tokens", "Step 2 · model · 9.0 ms · 23 tokens"]
    call = steps.nth(0).locator("li.call")
    assert call.locator(".call-head").inner_text().strip() == "tool call calculator · 0.30 ms"
    assert call.locator(".io").all_inner_texts() == ['arguments\n{\n  "expression": "2+2"\n}',
                                                     'result\n4 <img src=x onerror="window.__pwned=1">']
    assert steps.nth(1).locator("pre.said").inner_text() == "4"
    assert "{" not in steps.nth(1).inner_text(), "no raw JSON of the step"
    assert opened.page.evaluate("window.__pwned") is None
    opened.assert_quiet()


def test_a_report_of_a_thousand_experiments_builds_the_first_and_the_last_on_demand(browser, report, tmp_path):
    """Sections beyond the first few are built when scrolled near, so the page opens as fast
    as a small one; the table of contents still reaches every experiment."""
    crashes = report[1][1]  # two items: one passed, one error
    results = [dataclasses.replace(crashes, experiment_id=f"e{n}", label=f"Experiment {n}") for n in range(1000)]
    [path] = write_reports(str(tmp_path), ["html"], RunInfo(run_id="many", status="completed",
                                                            started_at="2026-01-01T00:00:00.000Z"), results)
    with open_report(browser, path) as opened:
        assert opened.verdicts(0) == ["pass", "error"]
        assert opened.page.locator("section.experiment .items-table").count() < 100, "built up front"
        last = opened.section(999)
        assert last.locator(".items-table").count() == 0
        opened.page.locator("a[href='#exp-999']").click()
        last.locator("tbody tr.row").first.wait_for()
        assert last.locator("h2").inner_text() == "Experiment 999"
        assert opened.verdicts(999) == ["pass", "error"]
        last.locator("input[data-status=passed]").uncheck()
        assert opened.verdicts(999) == ["error"]
        opened.assert_quiet()


def test_an_answer_cut_off_at_max_tokens_says_so_in_its_row(browser, openai_server, tmp_path):  # noqa: F811
    openai_server.push(text_reply("It takes three to five busi", finish_reason="length"), text_reply("Fine."))
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(f"""
        models:
          sut: {{base_url: "{openai_server.base_url}", model: tiny, max_tokens: 8}}
        experiments:
          - id: cut
            dataset: {{items: [{{id: long, input: "How long?"}}, {{id: short, input: "Ok?"}}]}}
            runner: {{uses: openai, with: {{model: sut}}}}
            concurrency: 1
    """), encoding="utf-8")
    results = [yamleval.run_experiment(e) for e in yamleval.load_experiments(tmp_path / "evals.yaml")]
    run = RunInfo(run_id="cut-run", status="completed", started_at="2026-01-01T00:00:00.000Z")
    [path] = write_reports(str(tmp_path), ["html"], run, results)
    with open_report(browser, path) as opened:
        cut, whole = opened.rows().nth(0), opened.rows().nth(1)
        assert cut.locator("td:nth-child(3) .note").all_inner_texts() == ["answer cut off at max_tokens (8)"]
        assert whole.locator(".note").count() == 0
        cut.click()
        detail = opened.section().locator("tr.detail")
        assert "answer cut off at max_tokens (8)" in detail.locator("pre").all_inner_texts()


def test_each_row_names_its_item_by_id(opened):
    """The terminal names items by id; so does each row (in full on hover where the column cuts it)."""
    assert opened.section().locator(".items-table thead th").first.inner_text().strip() == "Item"
    assert opened.rows().locator("td.item-id").all_inner_texts()[:3] == ["q000", "q001", "q002"]
    assert opened.rows(1).locator("td.item-id").all_inner_texts() == ["fine", "boom"]
    assert opened.rows(1).nth(1).locator("td.item-id").get_attribute("title") == "boom"
    opened.section().locator("th[data-sort=status] button").click()
    assert opened.rows().first.locator("td.item-id").inner_text() == "q000"  # the first failing item
    opened.assert_quiet()


DURATION = re.compile(r"\d{1,3}(,\d{3})*(\.\d+)? (ms|s)")


def test_every_duration_is_written_in_one_style(browser, report, tmp_path):
    """Figures from the summary (written in Python) and from the items (written by the page's
    script) use the same units and digits: 0.25 ms, 12.5 ms, 340 ms, 1.2 s."""
    crashes = report[1][1]
    latencies = [0.25, 12.5, 340.4, 1234.5, 98765.4]
    fine = next(iter(crashes.items))
    items = [dataclasses.replace(fine, item=dataclasses.replace(fine.item, id=f"i{n}", index=n), latency_ms=ms)
             for n, ms in enumerate(latencies)]
    result = dataclasses.replace(crashes, items=ItemList(items))
    [path] = write_reports(str(tmp_path), ["html"], RunInfo(run_id="durations", status="completed",
                                                            started_at="2026-01-01T00:00:00.000Z"), [result])
    with open_report(browser, path) as opened:
        section = opened.section()
        assert section.locator(".items-table thead th").nth(-2).inner_text().strip() == "Latency"
        cells = section.locator("tbody tr.row td:nth-last-child(2)").all_inner_texts()
        assert cells == ["0.25 ms", "12.5 ms", "340 ms", "1.2 s", "98.8 s"] == [figures.ms(v) for v in latencies]
        stats = dict(zip(section.locator(".stat-name").all_inner_texts(), section.locator(".stat-value").all_inner_texts()))
        shown = [stats[name] for name in ("Mean latency", "p95 latency", "Duration")]
        opened.rows().nth(3).click()
        shown.append(section.locator(".detail-meta span", has_text="Latency").locator("b").inner_text())
        assert shown[-1] == "1.2 s"
        assert all(DURATION.fullmatch(text) for text in shown), shown
        opened.assert_quiet()


def test_an_expanded_item_shows_its_assertions(opened):
    section = opened.section()
    opened.rows().nth(0).click()
    assertions = section.locator("tr.detail section.assertions")
    assert assertions.locator("h4").inner_text().lower() == "assertions"
    assert assertions.locator("li").all_inner_texts() == ASSERTIONS  # markup as text
    opened.rows().nth(0).click()
    opened.rows().nth(1).click()
    assert section.locator("tr.detail section.assertions li").all_inner_texts() == ["must name the zone"]
    opened.rows().nth(1).click()
    opened.rows().nth(2).click()
    assert section.locator("tr.detail").count() == 1
    assert section.locator("tr.detail section.assertions").count() == 0, "a row without assertions shows none"
    assert opened.page.evaluate("window.__pwned") is None
    opened.assert_quiet()


def test_the_run_shows_its_configuration_as_stored_collapsed(browser, tmp_path):
    """The config files as the run stored them: the system prompt in them, ${VAR} as written,
    never the value; collapsed until opened."""
    from conftest import run_cli

    config = tmp_path / "evals.yaml"
    config.write_text(textwrap.dedent("""
        models:
          toy: {model: toy, script: model.yaml, api_key: "${TOY_KEY}"}
        experiments:
          - id: agent
            label: "<b>not bold</b>"
            dataset: {items: [{id: sum, input: "What is 2 + 2?", expected: "4"}]}
            runner: {uses: agent, with: {model: toy, instructions: "Answer with the number only. </script>"}}
            scorers: [exact_match]
    """), encoding="utf-8")
    (tmp_path / "model.yaml").write_text("- when: {role: user}\n  reply: {content: '4'}\n", encoding="utf-8")
    done = run_cli("run", "-q", "--report-dir", "out", cwd=tmp_path, TOY_KEY="sk-toy-secret-value")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "out" / "report.html"
    assert b"sk-toy-secret-value" not in path.read_bytes()
    with open_report(browser, str(path)) as opened:
        details = opened.page.locator("details.config")
        assert details.get_attribute("open") is None, "collapsed until opened"
        assert not details.locator("pre").is_visible()
        details.locator("summary").click()
        assert details.locator("h3").all_inner_texts() == ["evals.yaml"]
        assert details.locator("pre").evaluate("pre => pre.textContent") == config.read_text(encoding="utf-8")
        text = details.locator("pre").inner_text()
        assert 'instructions: "Answer with the number only. </script>"' in text and '"${TOY_KEY}"' in text
        assert opened.page.evaluate("document.querySelectorAll('footer b, footer script').length") == 0
        opened.assert_quiet()


def test_the_trajectory_counts_steps_and_tool_calls_as_its_scorers_do(opened, report):
    """The agent runner's trace of a real (scripted) model: two turns, one tool call between."""
    [item] = list(report[1][3].items)
    scores = item.scores
    section = opened.section(3)
    opened.rows(3).nth(0).click()
    detail = section.locator("tr.detail")
    reasons = dict(zip(detail.locator("table.scores td.mono").all_inner_texts(),
                       detail.locator("table.scores td.reason").all_inner_texts()))
    assert reasons["trajectory"] == scores["trajectory"].reason == "1 of 2 checks failed: 2 steps, at most 1 allowed"
    assert reasons["tool_call_accuracy"].endswith('Actual tools: ["calculator"]')
    trajectory = detail.locator("details.trajectory")
    assert trajectory.locator("summary").inner_text() == "Trajectory · 2 steps · 1 tool call"
    trajectory.locator("summary").click()
    steps = trajectory.locator("li.step")
    assert steps.count() == 2 and trajectory.locator("li.call").count() == 1
    first = steps.nth(0)
    assert first.locator(".step-head").inner_text().startswith("Step 1 · model · ")
    assert first.locator("pre.said").inner_text() == "Let me compute that."
    assert first.locator("li.call .io").all_inner_texts() == ['arguments\n{\n  "expression": "17 * 23"\n}',
                                                             "result\n391"]
    assert steps.nth(1).locator("pre.said").inner_text() == "17 × 23 = 391."
    opened.assert_quiet()


DIFFS = [  # expected, output, the diff as it reads, struck out, inserted
    ("hello world", "hello world again", "hello world again", [], [" again"]),
    ("foo bar", "foo baz", "foo bar baz", ["bar"], ["baz"]),
    ("Paris is the capital", "The capital is Paris", "Paris is the capital The capital is Paris",
     ["Paris is the capital"], ["The capital is Paris"]),
    ("The cat sat on the mat.", "A cat sat on a mat!", "The A cat sat on the a mat.!",
     ["The", "the", "."], ["A", "a", "!"]),
    ("line one\nline two", "line one\nline 2", "line one\nline two 2", ["two"], ["2"]),
]


def test_the_word_diff_keeps_the_spaces_between_words(browser, report, tmp_path):
    """No two words run together: a word that ends a text still matches, and a word replaced
    by another is shown apart from it."""
    crashes = report[1][1]
    fine = next(iter(crashes.items))
    items = [dataclasses.replace(fine, item=dataclasses.replace(fine.item, id=f"d{n}", index=n, expected=expected),
                                 output=output)
             for n, (expected, output, *_) in enumerate(DIFFS)]
    [path] = write_reports(str(tmp_path), ["html"], RunInfo(run_id="diffs", status="completed",
                                                            started_at="2026-01-01T00:00:00.000Z"),
                           [dataclasses.replace(crashes, items=ItemList(items))])
    with open_report(browser, path) as opened:
        for n, (expected, output, reads, struck, inserted) in enumerate(DIFFS):
            opened.rows().nth(n).click()
            diff = opened.section().locator("tr.detail .diff")
            assert diff.inner_text() == reads, (expected, output)
            assert diff.locator("del").all_inner_texts() == struck
            assert diff.locator("ins").evaluate_all("nodes => nodes.map(n => n.textContent)") == inserted
            opened.rows().nth(n).click()
        opened.assert_quiet()


def test_the_scorers_table_fits_its_card_at_1280_px(browser, report, tmp_path):
    """Beside the criteria on a 1280 px screen, every column of the scorers table shows
    (the histogram was cut off and scrolled out of sight)."""
    with open_report(browser, report[0], width=1280) as opened:
        panels = opened.section().locator(".panels")
        card = panels.locator(".panel-wide")
        assert panels.locator(".panel").count() == 2, "the criteria and the scorers side by side"
        scroll, client = card.evaluate("card => [card.scrollWidth, card.clientWidth]")
        assert scroll <= client, f"the scorers table is {scroll - client} px wider than its card"
        right = card.bounding_box()["x"] + card.bounding_box()["width"]
        for histogram in card.locator("svg.hist").all():
            box = histogram.bounding_box()
            assert box["width"] > 50 and box["x"] + box["width"] <= right
        card.screenshot(path=str(tmp_path / "scorers-1280.png"))
        opened.assert_quiet()


@pytest.mark.parametrize("width", [1400, 1300, 1024, 390])
def test_every_figure_fits_its_tile(browser, report, width):
    """The widest figures (intervals such as 43.9–100.0%) stay inside their tiles: they ran into
    the next tile at 1300 px."""
    with open_report(browser, report[0], width=width) as opened:
        tiles = opened.page.locator(".stat")
        assert tiles.count() > 8
        wider = tiles.evaluate_all("""tiles => tiles.filter(t => t.scrollWidth > t.clientWidth
            || t.querySelector('.stat-value').getBoundingClientRect().right > t.getBoundingClientRect().right)
            .map(t => t.textContent.trim())""")
        assert wider == []
        opened.assert_quiet()


@pytest.mark.parametrize("width", [1024, 600])  # at 480 px and below each item is a card (the phone test)
def test_an_opened_item_stays_in_sight_in_a_table_wider_than_the_screen(browser, report, width):
    with open_report(browser, report[0], width=width) as opened:
        scroller = opened.section().locator(".table-scroll").last
        assert scroller.evaluate("box => box.scrollWidth > box.clientWidth"), "the table scrolls sideways"
        opened.rows().first.click()
        grid = opened.section().locator("tr.detail .detail-grid")
        for scrolled in ("box => box.scrollLeft = 0", "box => box.scrollLeft = box.scrollWidth"):
            scroller.evaluate(scrolled)
            seen, shown = scroller.bounding_box(), grid.bounding_box()
            assert seen["x"] <= shown["x"] and shown["x"] + shown["width"] <= seen["x"] + seen["width"], scrolled
            assert shown["width"] >= min(260, seen["width"] - 40)
        opened.assert_quiet()


def test_a_score_reads_on_its_side_of_the_threshold(browser, tmp_path):
    """A score just under a threshold of 0.999 reads 0.998 beside its cross, not 1.00; the
    threshold reads 0.999, not 1.00."""
    from conftest import run_cli

    write_project(tmp_path, "numbers.jsonl", [{"id": "close", "input": "9968", "expected": "10000"},
                                              {"id": "exact", "input": "5", "expected": "5"},
                                              {"id": "far", "input": "1", "expected": "2"}], """
        reports: {formats: [html, json]}
        experiments:
          - id: numbers
            dataset: {file: numbers.jsonl}
            runner: echo
            scorers: [{uses: numeric_diff, threshold: 0.999}]
        """)
    assert run_cli("run", cwd=tmp_path).returncode == 1
    [experiment] = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))["experiments"]
    scores = [item["scores"]["numeric_diff"]["score"] for item in experiment["items"]]
    assert 0.995 <= scores[0] < 0.999 and scores[1] == 1 and f"{scores[2]:.2f}" == "0.67"  # 1.00 in two decimals
    with open_report(browser, str(tmp_path / "reports" / "report.html")) as opened:
        section = opened.section()
        assert section.locator(".panel-wide tbody td.num").first.inner_text() == "0.999"
        pills = [opened.rows().nth(n).locator("td.score .pill").inner_text() for n in range(3)]
        assert pills == ["0.998 ✗", "1.00 ✓", "0.67 ✗"]
        opened.rows().first.click()
        assert section.locator("table.scores .pill").first.inner_text() == "0.998 ✗"
        opened.assert_quiet()


def test_a_flaky_row_is_marked_and_its_expanded_view_shows_each_repeat(browser, tmp_path):
    (tmp_path / "evals.yaml").write_text(textwrap.dedent("""
        experiments:
          - id: coin
            repeats: 5
            dataset: {items: [{id: mostly, input: q3, expected: right}, {id: often, input: q0, expected: right},
                              {id: steady, input: x7, expected: right}]}
            runner: fixture_plugins.behaviours:CoinFlip
            scorers: [exact_match]
    """), encoding="utf-8")
    results = [yamleval.run_experiment(e) for e in yamleval.load_experiments(tmp_path / "evals.yaml")]
    run = RunInfo(run_id="coin-run", status="completed", started_at="2026-01-01T00:00:00.000Z")
    [path] = write_reports(str(tmp_path), ["html"], run, results)
    by_input = {item.item.id: [r.output for r in item.repeats] for item in results[0].items}
    with open_report(browser, path) as opened:
        assert "2\nFlaky items" in opened.section().locator(".stats").inner_text()
        flaky_row = opened.rows().nth(0)
        assert [opened.rows().nth(n).locator(".pill.flaky").count() for n in (0, 1, 2)] == [
            int(item.flaky) for item in results[0].items] == [1, 1, 0]
        assert flaky_row.locator(".pill.flaky").get_attribute("title") == "its repeats disagree: some passed, some failed"
        # the flag is whole in its cell: no ellipsis cuts it off
        cell, pill = flaky_row.locator("td").nth(2).bounding_box(), flaky_row.locator(".pill.flaky").bounding_box()
        assert pill["x"] + pill["width"] <= cell["x"] + cell["width"], (pill, cell)
        # a filter shows only the flaky items, and the counts and the line above the table say so
        chip = opened.section().locator("label.chip-flaky")
        assert " ".join(chip.inner_text().split()) == "Only flaky 2"
        chip.click()
        assert [opened.rows().nth(n).locator(".item-id").inner_text() for n in range(opened.rows().count())] == [
            "mostly", "often"]
        assert opened.section().locator(".showing").inner_text() == "Showing 1–2 of 2 matching items (3 in total)"
        chip.click()
        assert opened.rows().count() == 3
        flaky_row.click()
        repeats = opened.section().locator("tr.detail section.repeats")
        assert repeats.locator("h4").text_content() == "Repeats · 4 of 5 passed"
        rows = repeats.locator("tr").all()[1:]
        assert [row.locator("td").nth(2).inner_text() for row in rows] == by_input["mostly"]
        assert [row.locator("td").nth(1).inner_text() for row in rows] == [
            "pass" if output == "right" else "fail" for output in by_input["mostly"]]
        assert [row.locator("td.score .pill").inner_text() for row in rows] == [
            "1.00 ✓" if output == "right" else "0.00 ✗" for output in by_input["mostly"]]
        opened.assert_quiet()


TOPICS = ("billing", "shipping", "returns")
BREAKDOWN_CONFIG = """
    store: results.db
    reports: {dir: reports, formats: [html], breakdowns: [metadata.topic, tags]}
    experiments:
      - id: topics
        dataset: {file: topics.jsonl, fields: {context: reply}}
        runner: {uses: echo, with: {output: "{{ item.context }}"}}
        scorers: [exact_match, {uses: levenshtein, threshold: 0.9}]
"""


def topic_rows() -> list[dict]:
    """30 items over three topics; billing answers are wrong every second time; texts with commas,
    quotes, line breaks and markup, the first input a mapping (written out as JSON)."""
    rows = []
    for n in range(30):
        topic = TOPICS[n % 3]
        expected = f'Answer {n}, "quoted",\nsecond line <b>é</b>'
        reply = expected if topic != "billing" or n % 2 else f"Wrong answer {n}"
        rows.append({"id": f"t{n:02d}", "input": f"question {n} about {topic}", "expected": expected, "reply": reply,
                     "metadata": {"topic": topic, "tags": ["long"] if n % 5 == 0 else []}})
    rows[0]["input"] = {"question": "a mapping", "n": 0}
    rows[6]["reply"] = '=HYPERLINK("https://example.test","Wrong answer 6")'  # no formula in an exported CSV
    rows[12]["reply"] = "-Wrong answer 12"
    return rows


@pytest.fixture(scope="module")
def topics_run(tmp_path_factory):
    from conftest import run_cli

    folder = tmp_path_factory.mktemp("topics")
    write_project(folder, "topics.jsonl", topic_rows(), BREAKDOWN_CONFIG)
    done = run_cli("run", "evals.yaml", cwd=folder)
    assert done.returncode == 1, done.stderr
    return folder


def test_a_breakdown_value_filters_the_item_table(browser, topics_run):
    with open_report(browser, str(topics_run / "reports" / "report.html")) as opened:
        section = opened.section()
        table = section.locator(".breakdown[data-breakdown='0']")
        assert table.locator("thead th").first.inner_text() == "metadata.topic"
        values = table.locator("button.slice").all_inner_texts()
        assert values[0] == "billing" and sorted(values) == sorted(TOPICS)  # the weakest first
        assert "weakest: billing (50.0% pass rate)" in table.inner_text()
        table.locator("button.slice", has_text="billing").click()
        assert opened.rows().count() == 10
        assert section.locator(".slice-filter").inner_text().startswith("metadata.topic = billing")
        ids = opened.rows().locator("td.item-id").all_inner_texts()
        assert ids == [f"t{n:02d}" for n in range(0, 30, 3)]
        section.locator("input[data-status=passed]").uncheck()
        assert opened.rows().locator("td.item-id").all_inner_texts() == [f"t{n:02d}" for n in range(0, 30, 6)]
        section.locator(".slice-clear").click()
        assert opened.rows().count() == 5  # the other topics all passed
        tags = section.locator(".breakdown[data-breakdown='1'] button.slice").all_inner_texts()
        assert sorted(tags) == ["(none)", "long"]
        opened.assert_quiet()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_export_of_a_filtered_view_equals_yamleval_export(browser, topics_run, fmt):
    from conftest import run_cli

    with open_report(browser, str(topics_run / "reports" / "report.html")) as opened:
        section = opened.section()
        for status in ("passed", "error", "skipped"):
            section.locator(f"input[data-status={status}]").uncheck()
        with opened.page.expect_download() as download:
            section.locator(f"button[data-export={fmt}]").click()
        assert download.value.suggested_filename == f"topics-items.{fmt}"
        exported = pathlib.Path(download.value.path()).read_bytes()
        opened.assert_quiet()
    command = run_cli("export", "--format", fmt, "--status", "failed", "--store", "results.db", "-o", f"failed.{fmt}",
                      cwd=topics_run)
    assert command.returncode == 0, command.stderr
    assert command.stderr == f"export: failed.{fmt} (5 items)\n"
    written = (topics_run / f"failed.{fmt}").read_bytes()
    assert exported == written
    assert written.count(b"Wrong answer") == 5 and b"a mapping" in written
    if fmt == "csv":  # a reply that a spreadsheet would run shows as text
        assert b"\"'=HYPERLINK(" in written and b",'-Wrong answer 12," in written
    else:
        assert b'"=HYPERLINK(' in written and b'"-Wrong answer 12"' in written


def test_items_in_many_chunks_read_as_one_table(browser, report, tmp_path, monkeypatch):
    from yamleval.reporting import html_data

    _, results = report
    monkeypatch.setattr(html_data, "CHUNK_ROWS", 40)  # the 150 items of the first experiment in 4 chunks
    run = RunInfo(run_id="chunks", status="completed", started_at="2026-01-01T00:00:00.000Z")
    [path] = write_reports(str(tmp_path), ["html"], run, results)
    with open_report(browser, path) as opened:
        section = opened.section()
        assert section.locator(".showing").inner_text() == f"Showing 1–100 of {ITEMS} items"
        assert section.locator("[data-count=failed]").inner_text() == str(results[0].summary.failed)
        opened.search("zone 149 ")
        assert opened.rows().locator("td.item-id").all_inner_texts() == ["q149"]
        opened.search("")
        section.locator("th[data-sort=index] button").click()  # descending: the last chunk's items first
        assert opened.rows().first.locator("td.item-id").inner_text() == f"q{ITEMS - 1:03d}"
        opened.assert_quiet()


def test_on_a_phone_each_item_is_a_card_with_its_verdict_first_and_nothing_scrolls_sideways(browser, report):
    with open_report(browser, report[0], width=390) as opened:
        page = opened.page
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, "the page scrolls sideways"
        first = opened.rows().first
        verdict = first.locator("td:nth-child(3) .pill").bounding_box()
        assert verdict is not None and 0 <= verdict["x"] and verdict["x"] + verdict["width"] <= 390
        cells = first.locator("td")
        top = first.locator("td:nth-child(3)").bounding_box()["y"]
        assert top <= min(cells.nth(i).bounding_box()["y"] for i in range(cells.count())), \
            "the verdict comes first in its card"
        assert first.locator("td:nth-child(2)").evaluate("td => getComputedStyle(td, '::before').content") == '"Input: "'
        box = first.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, "the card fits the screen"
        first.click()  # an opened item fits too
        page.wait_for_selector("tr.detail")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        opened.assert_quiet()
