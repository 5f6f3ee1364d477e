"""The Markdown job summary: verdicts, tables, escaping of model text, the 1 MiB cap."""
from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import yamleval
from conftest import run_cli
from yamleval.records.types import Usage
from yamleval.reporting.console import summary_text
from yamleval.reporting import markdown, write_reports
from yamleval.records.types import RunInfo

RUN = RunInfo(run_id="r1", status="completed", started_at="2026-01-01T00:00:00Z", git_commit="0123456789abcdef")

PASSING = """
    experiments:
      - id: fine
        dataset: {items: [{input: a, expected: a}, {input: b, expected: b}]}
        runner: echo
        scorers: [exact_match]
"""
MIXED = """
    experiments:
      - id: answers
        dataset:
          items:
            - {id: good, input: Paris, expected: Paris}
            - {id: close, input: Pariss, expected: Paris}
            - {id: wrong, input: Lyon, expected: Paris}
            - {id: unjudged, input: anything}
        runner: echo
        scorers: [{uses: levenshtein, threshold: 0.8}]
        pass_criteria:
          - {type: mean_score, min: 0.9}
          - {type: pass_rate, min: 0.9, severity: warn}
          - {type: pass_rate, min: 0.1}
      - id: crashes
        dataset: {items: [{id: fine, input: ok}, {id: boom, input: raise}]}
        runner: fixture_plugins.behaviours:per_item
"""


def run_all(write_config, text: str) -> list:
    return [yamleval.run_experiment(e) for e in yamleval.load_experiments(write_config(text))]


def section(text: str, experiment_id: str) -> str:
    """The part of the summary under an experiment's heading, from its verdict mark on."""
    [part] = [p for p in text.split("### ")[1:] if p.split(":", 1)[0].endswith(" " + experiment_id)]
    return part


def test_a_passing_run(write_config):
    text = markdown.render(RUN, run_all(write_config, PASSING))
    assert text.startswith("## ✅ yamleval: 1 experiment passed\n\nrun r1 · commit 0123456789ab · started ")
    assert "### ✅ fine: passed" in text
    assert "| 2 | 2 | 0 | 0 | 0 | 100.0% | 1.000 |" in text
    assert "Worst items" not in text, "nothing to show when every score is perfect"


def test_verdicts_statistics_criteria_and_worst_items(write_config):
    results = run_all(write_config, MIXED)
    text = markdown.render(RUN, results)
    assert text.startswith("## ❌ yamleval: 2 of 2 experiments failed\n")
    answers, crashes = section(text, "answers"), section(text, "crashes")
    assert answers.startswith("❌ answers: failed")
    assert "| 4 | 2 | 1 | 0 | 1 | 66.7% |" in answers
    assert "| ❌ | mean\\_score &gt;= 0.9 |" in answers
    assert "| ⚠️ | pass\\_rate &gt;= 0.9 | 0.667 | 0.9 | warn |" in answers
    assert "| ✅ | pass\\_rate &gt;= 0.1 | 0.667 | 0.1 | error |" in answers
    table = answers.split("**Worst items**")[1].strip().splitlines()
    assert table[0] == "| item | status | why | input | output | expected |"
    rows = table[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| wrong", "| close"], "failed first, then near misses"
    assert "| wrong | failed | levenshtein 0.000 &lt; 0.8: distance 5 (output 4 characters, expected 5) | Lyon | Lyon | Paris |" in rows[0]
    assert "| close | passed | levenshtein 0.833 | Pariss | Pariss | Paris |" in rows[1]
    assert crashes.startswith("❌ crashes: failed")
    assert "| boom | error | runner raised RuntimeError: boom on purpose | raise |" in crashes

    interrupted = markdown.render(dataclasses.replace(RUN, status="interrupted"), results)
    assert interrupted.startswith("## ⏹️ yamleval: interrupted — 0 of 2 experiments passed\n")


def test_at_most_ten_items_per_experiment_errors_first(write_config):
    items = "\n".join(f"                - {{id: f{n:02}, input: x, expected: y}}" for n in range(15))
    results = run_all(write_config, f"""
        experiments:
          - id: many
            dataset:
              items:
                - {{id: e, input: raise}}
{items}
            runner: fixture_plugins.behaviours:per_item
            scorers: [{{uses: fixture_plugins.behaviours:fixed, threshold: 0.9}}]
    """)
    text = markdown.render(RUN, results)
    worst = text.split("**Worst items**")[1]
    rows = [line for line in worst.splitlines() if line.startswith("| e ") or line.startswith("| f")]
    assert [row.split(" | ")[0][2:] for row in rows] == ["e"] + [f"f{n:02}" for n in range(9)]
    assert "6 more failed or errored items in the full report." in text


def test_model_text_cannot_break_the_table_or_inject_html(write_config):
    evil = "a | b <script>alert(1)</script> `code` **bold** [x](javascript:y) ![i](http://t/p.png) $m$\nsecond line"
    results = run_all(write_config, f"""
        experiments:
          - id: evil
            dataset: {{items: [{{id: "x|<i>", input: q, expected: z}}]}}
            runner: {{uses: echo, with: {{output: {json.dumps(evil)}}}}}
            scorers: [exact_match]
    """)
    assert results[0].items[0].output == evil
    text = markdown.render(RUN, results)
    [row] = [line for line in text.splitlines() if line.startswith("| x")]
    assert row.count("|") == 7, "six cells, no separator from the data"
    assert "<script" not in text and "<i>" not in text and "`" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in row
    assert "\\*\\*bold\\*\\*" in row and "\\[x\\](javascript:y)" in row and "\\!\\[i\\]" in row
    assert "\\$m\\$<br>second line" in row
    assert markdown.escape("a\r\nb\rc") == "a<br>b<br>c"


def test_long_texts_are_shortened():
    cell = markdown.shorten("word " * 1000)
    assert len(cell) <= markdown.CELL_LIMIT and cell.endswith("…")
    assert markdown.shorten("1\n2\n3\n4\n5") == "1<br>2<br>3 …"
    assert markdown.shorten({"k": [1, 2]}) == '{"k": \\[1, 2\\]}'
    assert markdown.shorten(None) == ""


def test_the_summary_stays_under_one_mebibyte(write_config, tmp_path):
    items = "\n".join(f"                - {{id: i{n}, input: x, expected: y}}" for n in range(12))
    [result] = run_all(write_config, f"""
        experiments:
          - id: big
            dataset:
              items:
{items}
            runner: {{uses: echo, with: {{output: "{'<&|>' * 100}"}}}}
            scorers: [exact_match]
    """)
    results = [dataclasses.replace(result, experiment_id=f"big-{n}") for n in range(2000)]
    text = markdown.render(RUN, results)
    assert len(text.encode("utf-8")) <= markdown.MAX_BYTES
    assert text.rstrip().endswith("the full results are in the reports.")
    assert markdown.render(RUN, results) == text, "deterministic"
    small = markdown.render(RUN, results[:1])
    assert "cut to stay under" not in small
    [path] = write_reports(str(tmp_path / "out"), ["markdown"], RUN, results[:1])
    assert Path(path).read_text(encoding="utf-8") == small
    assert os.listdir(tmp_path / "out") == ["summary.md"]


def test_durations_read_as_in_the_report_and_the_terminal(write_config):
    [result] = [yamleval.run_experiment(e) for e in yamleval.load_experiments(write_config(PASSING))]
    summary = dataclasses.replace(result.summary, duration_ms=1234.5,
                                  latency_ms=dataclasses.replace(result.summary.latency_ms, p95=340.2))
    text = markdown.render(RUN, [dataclasses.replace(result, summary=summary)])
    assert "| 340 ms |" in text and "| 1.2 s |" in text
    shown = summary_text(dataclasses.replace(result, summary=summary))
    assert "p95 340 ms" in shown and "duration 1.2 s" in shown


def test_a_breakdown_is_a_table_weakest_value_first_with_model_text_escaped(write_config):
    text = markdown.render(RUN, run_all(write_config, """
        experiments:
          - id: topics
            breakdowns: [metadata.topic]
            dataset:
              items:
                - {id: a, input: x, expected: x, metadata: {topic: "<b>bill|ing</b>"}}
                - {id: b, input: y, expected: z, metadata: {topic: "<b>bill|ing</b>"}}
                - {id: c, input: z, expected: z, metadata: {topic: refunds}}
            runner: echo
            scorers: [exact_match]
    """))
    lines = section(text, "topics").splitlines()
    at = lines.index("| metadata.topic | items | pass rate | pass rate 95% CI | mean score | p50 latency | p95 latency"
                     " | tokens | exact\\_match |")
    assert lines[at - 2].startswith("By metadata.topic: weakest: &lt;b&gt;bill&#124;ing&lt;/b&gt; (50.0% pass rate)")
    assert lines[at + 2].startswith("| &lt;b&gt;bill&#124;ing&lt;/b&gt; | 2 | 50.0% | 9.5–90.5% | 0.500 |")
    assert lines[at + 3].startswith("| refunds | 1 | 100.0% |")


def test_the_terminal_counts_one_error_and_thousands_of_tokens_as_a_reader_would(write_config):
    [result] = [yamleval.run_experiment(e) for e in yamleval.load_experiments(write_config(PASSING))]
    summary = dataclasses.replace(result.summary, errored=1, total=1200, completed=1200, tokens=Usage(4100, 1020))
    shown = summary_text(dataclasses.replace(result, summary=summary))
    assert "1,200 total" in shown and "· 1 error" in shown and "1 errors" not in shown
    assert "5,120 tokens (4,100 prompt, 1,020 completion)" in shown
    cut = dataclasses.replace(summary, completed=12)  # a run stopped early: what ran, of what was planned
    assert "  items       12 of 1,200 ran · " in summary_text(dataclasses.replace(result, summary=cut))


def test_summary_and_report_show_cost_judge_tokens_and_the_items_that_ran_of_those_planned(write_config, tmp_path):
    write_config("""
        experiments:
          - id: priced
            dataset: {items: [{input: a, expected: a}, {input: b, expected: b}, {input: c, expected: c}]}
            runner: fixture_plugins.behaviours:priced
            scorers: [exact_match, {uses: "fixture_plugins.behaviours:judged", id: judge}]
    """)
    done = run_cli("run", "--limit", "2", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| 24 tokens (20 prompt, 4 completion), \\$1.00 |" in summary  # 12 tokens and $0.50 an item
    assert "Judges: 12 tokens (10 prompt, 2 completion), \\$0.50." in summary
    page = " ".join(re.sub(r"<[^>]+>", " ", (tmp_path / "out" / "report.html").read_text()).split())
    for tile in ("24 Total tokens", "$1.00 Cost", "12 Judge tokens", "$0.50 Judge cost", "2 Items"):  # value, label
        assert tile in page, tile

    write_config("""
        budget: {max_cost_usd: 0.4}
        experiments:
          - id: priced
            concurrency: 1
            dataset: {items: [{input: a, expected: a}, {input: b, expected: b}, {input: c, expected: c}]}
            runner: fixture_plugins.behaviours:priced
            scorers: [exact_match]
    """)
    done = run_cli("run", "--report-dir", "stopped", cwd=tmp_path)
    assert done.returncode == 4, done.stderr  # the first item's $0.50 reaches the budget
    page = " ".join(re.sub(r"<[^>]+>", " ", (tmp_path / "stopped" / "report.html").read_text()).split())
    assert "1 of 3 Items" in page, "the tile counts what ran of what was planned"
