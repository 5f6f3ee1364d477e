"""``yamleval export`` and ``yamleval show --by``: a stored run's items as CSV / JSON lines, and
its figures broken down by an item field."""
from __future__ import annotations

import csv
import io
import json
import re
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from conftest import assert_golden, run_cli
from yamleval.analysis.aggregate import Aggregator
from yamleval.reporting import export, html_data
from yamleval.records.types import ExperimentResult, Item, ItemResult, ItemResults, ScoreResult

GOLDEN = Path(__file__).parent.parent / "data" / "export"
CONFIG = """
    store: results.db
    reports: {dir: reports, formats: [json]}
    experiments:
      - id: support
        breakdowns: [metadata.topic]
        dataset:
          items:
            - {id: a, input: "1, 2", expected: "x", metadata: {topic: billing, lang: en}}
            - {id: b, input: "say \\"hi\\"\\nplease", expected: "y", metadata: {topic: billing, lang: es}}
            - {id: c, input: {q: 3}, expected: "z", metadata: {topic: refunds, lang: es}}
            - {id: d, input: "é", expected: "é", metadata: {topic: refunds, lang: en}}
        runner: {uses: echo}
        scorers: [exact_match]
      - id: other
        dataset: {items: [{id: e, input: "q", expected: "q"}]}
        runner: {uses: echo}
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    (folder / "evals.yaml").write_text(textwrap.dedent(CONFIG), encoding="utf-8")
    done = run_cli("run", "evals.yaml", cwd=folder)
    assert done.returncode == 1, done.stderr
    return folder


def _timeless(text: str) -> str:
    """Latencies vary from run to run: each as ``T``, and which value is slowest as ``V``."""
    return re.sub(r"slowest: \S+", "slowest: V", re.sub(r"\b\d+(\.\d+)? ms\b", "T", text))


def test_csv_has_a_row_per_item_and_a_column_per_scorer(stored):
    done = run_cli("export", "-o", "all.csv", cwd=stored)
    assert done.returncode == 0 and done.stderr == "export: all.csv (5 items)\n"
    raw = (stored / "all.csv").read_bytes()
    assert raw.count(b"\r\n") == 6 and b'"say ""hi""\nplease"' in raw  # rows end in CRLF, a cell's line break stays
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8"), newline="")))
    assert [r["id"] for r in rows] == ["a", "b", "c", "d", "e"]
    assert [r["experiment"] for r in rows] == ["support"] * 4 + ["other"]
    assert rows[1]["input"] == 'say "hi"\nplease' and rows[0]["input"] == "1, 2"
    assert json.loads(rows[2]["input"]) == {"q": 3}
    assert [r["exact_match score"] for r in rows] == ["0", "0", "0", "1", ""]
    assert rows[3]["status"] == "passed" and rows[4]["tokens"] == ""
    assert all(float(r["latency_ms"]) >= 0 for r in rows)


def test_jsonl_filters_by_experiment_and_status(stored):
    done = run_cli("export", "--format", "jsonl", "--experiment", "support", "--status", "passed", cwd=stored)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    row = json.loads(line)
    assert (row["experiment"], row["id"], row["output"], row["scores"]) == ("support", "d", "é", {"exact_match": 1})
    assert list(row) == [*export.COLUMNS, "scores"]


def test_no_text_becomes_a_spreadsheet_formula(tmp_path):
    texts = ['=HYPERLINK("https://example.test","open")', "+1+1", "-2-2", "@SUM(A1)", "\tx", "\r=1", "-5", "+3.25",
             "1e3", "- a list item", "plain", "a=b"]
    config = {"store": "results.db", "reports": {"formats": ["json"]}, "experiments": [
        {"id": "formulas", "dataset": {"items": [{"id": f"t{n}", "input": text, "expected": "-"}
                                                 for n, text in enumerate(texts)]}, "runner": {"uses": "echo"}}]}
    (tmp_path / "evals.yaml").write_text(json.dumps(config), encoding="utf-8")
    assert run_cli("run", "evals.yaml", cwd=tmp_path).returncode == 0  # no scorers: every item passes
    done = run_cli("export", "-o", "all.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "all.csv").read_bytes().decode("utf-8"), newline="")))
    assert [r["output"] for r in rows] == [
        '\'=HYPERLINK("https://example.test","open")', "'+1+1", "'-2-2", "'@SUM(A1)", "'\tx", "'\r=1", "-5", "+3.25",
        "1e3", "'- a list item", "plain", "a=b"]
    assert {r["expected"] for r in rows} == {"'-"}
    assert float(rows[0]["latency_ms"]) >= 0  # numbers stay numbers
    lines = run_cli("export", "--format", "jsonl", cwd=tmp_path).stdout.splitlines()
    assert [json.loads(line)["output"] for line in lines] == texts  # JSON lines keep every text as it is


@pytest.mark.parametrize("score, threshold, shown", [
    (0.123456, None, 0.1235), (0.99896, 0.999, 0.99896), (0.9990004, 0.999, 0.999), (0.79999996, 0.8, 0.79999996),
    (1.0, 0.999, 1), (0.5, 0.9, 0.5)])
def test_a_score_is_written_on_its_side_of_the_threshold(score, threshold, shown):
    """To 4 decimals, unless that would carry a failing score up to its threshold."""
    value = html_data.score_value(ScoreResult("s", "success", score, score >= (threshold or 0), threshold))
    assert value == shown and (threshold is None or (value >= threshold) == (score >= threshold))


def test_an_unknown_experiment_is_a_usage_error(stored):
    done = run_cli("export", "--experiment", "nope", cwd=stored)
    assert done.returncode == 2 and done.stdout == ""
    assert_golden(GOLDEN / "unknown-experiment.expected.txt", re.sub(r"run \S+ has", "run RUN has", done.stderr))


def test_show_by_a_field_as_stored_or_counted_from_the_items(stored):
    stored_one = run_cli("show", "--by", "metadata.topic", cwd=stored)
    counted = run_cli("show", "--by", "metadata.lang", cwd=stored)
    assert stored_one.returncode == counted.returncode == 0, stored_one.stderr + counted.stderr
    text = "".join(_timeless(done.stdout.split("\n", 1)[1]) for done in (stored_one, counted))
    assert_golden(GOLDEN / "show-by.expected.txt", text)
    wrong = run_cli("show", "--by", "topic", cwd=stored)
    assert wrong.returncode == 2
    assert_golden(GOLDEN / "show-by-wrong-field.expected.txt", wrong.stderr)


def test_results_json_carries_the_breakdowns(stored):
    [support, other] = json.loads((stored / "reports" / "results.json").read_text(encoding="utf-8"))["experiments"]
    [topic] = support["breakdowns"]
    assert (topic["field"], topic["weakest"], topic["other"]) == ("metadata.topic", "billing", 0)
    assert [(v["value"], v["items"], v["pass_rate"], v["scorers"]) for v in topic["values"]] == [
        ("billing", 2, 0.0, {"exact_match": 0.0}), ("refunds", 2, 0.5, {"exact_match": 0.5})]
    assert other["breakdowns"] == []  # no metadata: nothing to break down by default


class _Generated(ItemResults):
    """``count`` items made as they are read, none kept."""

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for n in range(self.count):
            yield ItemResult(Item(id=f"i{n}", index=n, input="question " * 20, expected="answer " * 20),
                             "passed", "answer " * 20, latency_ms=1.5,
                             scores={"s": ScoreResult("s", "success", 1.0, True, 0.5)})


class _Discard(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def _peak(count: int) -> int:
    summary = Aggregator({"s": ("s", 0.5)}).summary(0.0)
    result = ExperimentResult("e", None, True, summary, _Generated(count), "", "")
    tracemalloc.start()
    try:
        assert export.write(_Discard(), [result], "csv") == count
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_export_streams_in_flat_memory():
    small, large = _peak(2_000), _peak(40_000)
    assert large < small * 1.5 + 64 * 1024
