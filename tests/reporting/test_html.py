"""report.html as a string: escaping, the CSP, no network references, truncation, content."""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import gzip
import json
import pathlib
import string
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

import yamleval
from yamleval.reporting import html, html_data, write_reports
from yamleval.records.types import RunInfo

RUN = RunInfo(run_id="run-42", status="completed", started_at="2026-01-01T00:00:00.000Z",
              completed_at="2026-01-01T00:00:05.000Z", yamleval_version="0.1.0", git_commit="0123abc",
              config_files=("evals.yaml", "experiments/extra.yaml"), config_hash="c0ffee")

BREAKOUT = "</script><script>alert(1)</script>"
HOSTILE = f"""
    experiments:
      - id: hostile
        label: Hostile <b>text</b>
        dataset:
          items:
            - {{id: breakout, input: "{BREAKOUT}", expected: "a <!-- comment"}}
            - {{id: separators, input: "line\\u2028separator\\u2029paragraph", expected: x}}
            - {{id: tag-in-id-</script>, input: "& <img src=x onerror=alert(1)>", expected: "& <img src=x onerror=alert(1)>"}}
        runner: echo
        scorers: [exact_match, {{uses: levenshtein, threshold: 0.8}}]
        pass_criteria:
          - {{type: pass_rate, min: 0.3, label: "some <i>pass</i>"}}
"""

MIXED = """
    experiments:
      - id: answers
        label: Capital cities
        dataset:
          items:
            - {id: good, input: Paris, expected: Paris}
            - {id: wrong, input: Parsi, expected: Paris}
            - {id: unjudged, input: anything}
            - {id: structured, input: {city: Paris}, expected: {city: Paris}}
        runner: echo
        scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
        pass_criteria:
          - {type: mean_score, min: 0.9}
          - {type: pass_rate, scorer: exact_match, min: 0.5, severity: warn}
      - id: crashes
        label: Second experiment
        dataset: {items: [{id: fine, input: ok, expected: ok}, {id: boom, input: raise, expected: x}]}
        runner: fixture_plugins.behaviours:per_item
        scorers: [exact_match]
"""


def run_all(write_config, text: str) -> list:
    return [yamleval.run_experiment(e) for e in yamleval.load_experiments(write_config(text))]


class Elements(HTMLParser):
    """The document as the browser's tokenizer sees it: elements, their attributes and raw text."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.styles: list[str] = []
        self._open: str | None = None
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open, self._attrs, self._text = tag, dict(attrs), []

    def handle_data(self, data):
        if self._open:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == self._open == "script":
            self.scripts.append((self._attrs, "".join(self._text)))
        elif tag == self._open == "style":
            self.styles.append("".join(self._text))
        if tag == self._open:
            self._open = None


def embedded(document: str) -> dict:
    """The data blob, each experiment's compressed chunks inflated into its ``items``."""
    [data] = [text for attrs, text in Elements(document).scripts if attrs.get("id") == "data"]
    found = json.loads(data)
    for exp in found["experiments"]:
        exp["items"] = [row for chunk in exp["chunks"] for row in json.loads(gzip.decompress(base64.b64decode(chunk)))]
    return found


def items_of(document: str, experiment: int = 0) -> dict[str, dict]:
    """Item rows by id, read as the page reads them (an output of 0 is the expected text)."""
    data = embedded(document)
    fields = data["fields"]
    items = {row[0]: dict(zip(fields, row)) for row in data["experiments"][experiment]["items"]}
    for item in items.values():
        if item["output"] == 0:
            item["output"] = item["expected"]
    return items


BASE64 = set(string.ascii_letters + string.digits + "+/=")


@pytest.fixture
def hostile(write_config) -> str:
    return html.render(RUN, run_all(write_config, HOSTILE))


def test_model_text_cannot_leave_the_data_element(hostile):
    parsed = Elements(hostile)
    assert [attrs.get("type") for attrs, _ in parsed.scripts] == ["application/json", None]
    assert "alert(1)</script>" not in hostile and "<!--" not in hostile
    assert "\u2028" not in hostile and "\u2029" not in hostile
    assert BREAKOUT not in hostile  # model text travels compressed, in base64
    assert all(set(chunk) <= BASE64 for exp in embedded(hostile)["experiments"] for chunk in exp["chunks"])
    items = items_of(hostile)
    assert items["breakout"]["input"] == items["breakout"]["output"] == BREAKOUT
    assert items["breakout"]["expected"] == "a <!-- comment"
    assert items["separators"]["input"] == "line\u2028separator\u2029paragraph"
    assert "tag-in-id-</script>" in items


def test_headers_are_escaped_by_the_template(hostile):
    assert "Hostile &lt;b&gt;text&lt;/b&gt;" in hostile and "<b>text</b>" not in hostile
    assert "some &lt;i&gt;pass&lt;/i&gt;" in hostile
    assert hostile.count('<span class="badge badge-passed">PASSED</span>') == 2  # the run and its experiment
    assert not [tag for tag, _ in Elements(hostile).tags if tag in ("img", "i", "b")]


def test_csp_pins_the_inline_script_and_style_and_allows_no_network(hostile):
    parsed = Elements(hostile)
    metas = [attrs for tag, attrs in parsed.tags if tag == "meta"]
    assert metas[0] == {"charset": "utf-8"}
    assert metas[1]["http-equiv"] == "Content-Security-Policy"
    policy = dict(part.strip().split(" ", 1) for part in metas[1]["content"].split(";"))
    [script] = [text for attrs, text in parsed.scripts if "type" not in attrs]
    [style] = parsed.styles

    def digest(text):
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == digest(script)
    assert policy["style-src"] == digest(style)
    assert policy["connect-src"] == policy["form-action"] == policy["object-src"] == "'none'"
    assert policy["img-src"] == "data:"
    assert "unsafe" not in metas[1]["content"]
    # CSP hashes do not cover event-handler or style attributes: there must be none
    assert not [name for _, attrs in parsed.tags for name in attrs if name.startswith("on") or name == "style"]


def test_the_document_references_nothing_outside_itself(write_config):
    document = html.render(RUN, run_all(write_config, MIXED))
    assert "http://" not in document and "https://" not in document
    parsed = Elements(document)
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "srcset", "xlink:href"):
            value = attrs.get(name)
            assert value is None or value.startswith(("#", "data:")), (tag, name, value)
        assert tag not in ("iframe", "object", "embed", "base", "form")
    assert [attrs.get("rel") for tag, attrs in parsed.tags if tag == "link"] == ["icon"]


def test_long_fields_are_cut_with_a_visible_marker(write_config):
    long_text = "word " * 6000
    document = html.render(RUN, run_all(write_config, f"""
        experiments:
          - id: long
            dataset: {{items: [{{id: big, input: "{long_text}", expected: short}}]}}
            runner: echo
            scorers: [exact_match]
    """))
    item = items_of(document)["big"]
    assert len(long_text) > html_data.FIELD_CAP
    assert item["input"] == long_text[:html_data.FIELD_CAP] + html_data.TRUNCATED
    assert item["output"] == item["input"]
    assert item["expected"] == "short"
    assert embedded(document)["cut"] == {"texts": 2, "cap": html_data.FIELD_CAP, "max_mb": html_data.MAX_MB, "budget": False}
    assert long_text not in document


def test_a_page_over_its_size_cuts_long_texts_and_says_so(write_config, tmp_path):
    texts = [f"answer {n}: " + " ".join(f"{n * k % 9973:x}" for k in range(4000)) for n in range(60)]
    items = ", ".join(f'{{id: i{n}, input: "{t}", expected: "{t}"}}' for n, t in enumerate(texts))
    results = run_all(write_config, f"""
        experiments:
          - id: big
            dataset: {{items: [{items}]}}
            runner: echo
            scorers: [exact_match]
    """)
    [path] = write_reports(str(tmp_path), ["html:0.3"], RUN, results)
    document = pathlib.Path(path).read_text(encoding="utf-8")
    cut = embedded(document)["cut"]
    assert len(document.encode()) <= 0.3e6
    assert cut["budget"] and cut["texts"] >= 60 and html_data.MIN_CAP <= cut["cap"] < html_data.FIELD_CAP
    item = items_of(document)["i7"]
    assert item["input"] == texts[7][:cut["cap"]] + html_data.TRUNCATED
    assert "cut-notice" in document


def test_the_stored_config_text_keeps_within_the_pages_size(write_config, tmp_path):
    results = run_all(write_config, """
        experiments:
          - id: small
            dataset: {items: [{id: a, input: x, expected: x}]}
            runner: echo
            scorers: [exact_match]
    """)
    config = "version: 1\n" + "".join(f"# {n:07d} " + "x" * 90 + "\n" for n in range(60_000))  # 6 MB
    run = dataclasses.replace(RUN, config_text={"evals.yaml": config})
    [path] = write_reports(str(tmp_path), ["html:1"], run, results)
    document = pathlib.Path(path).read_text(encoding="utf-8")
    assert len(document.encode()) <= 1e6
    assert "# 0000000 " in document and "# 0059999 " not in document
    assert "cut here: the file is 6,060,011 bytes, more than this page keeps of it" in document


def test_header_statistics_criteria_and_run_footer(write_config):
    results = run_all(write_config, MIXED)
    document = html.render(RUN, results)
    text = re.sub(r"\s+", " ", document)
    for expected in ("Capital cities", "fixture_plugins.behaviours:per_item", "4 inline items", "echo",
                     "Pass rate", "Mean latency", "p95 latency", "Total tokens", "Duration",
                     "run-42", "0123abc", "evals.yaml", "experiments/extra.yaml", "0.1.0",
                     "2026-01-01 00:00:00 UTC"):
        assert expected in text, expected
    assert '<span class="badge badge-failed">FAILED</span>' in text
    # the criteria table: actual against min, severity and result
    plain = " ".join(re.sub(r"<[^>]+>", " ", document).split())
    actual = f"{results[0].summary.mean_score:.3f}"
    assert f"mean_score {actual} 0.9 error not met" in plain  # the bound as written
    assert "pass_rate of exact_match 0.667 0.5 warn met" in plain
    # a histogram of 10 bars per scorer, and the verdict bar with one share per status present
    assert text.count('<svg class="hist"') == 3
    assert len(re.findall(r'<rect x="[0-9.]+" y="[0-9.]+" width="9"', text)) == 30
    summary = results[0].summary
    assert f"{summary.passed} passed, {summary.failed} failed, {summary.errored} error, 1 skipped" in text
    # two experiments: a navigation list pointing at both
    assert 'href="#exp-0"' in document and 'href="#exp-1"' in document


def test_item_rows_carry_status_texts_scores_and_reasons(write_config):
    results = run_all(write_config, MIXED)
    document = html.render(RUN, results)
    items, crashes = items_of(document), items_of(document, 1)
    assert {k: v["status"] for k, v in items.items()} == {
        "good": "passed", "wrong": "failed", "unjudged": "skipped", "structured": "passed"}
    assert {k: v["status"] for k, v in crashes.items()} == {"fine": "passed", "boom": "error"}
    assert crashes["boom"]["output"] is None and crashes["boom"]["error"] == "runner raised RuntimeError: boom on purpose"
    assert crashes["boom"]["scores"] == [None]
    assert items["good"]["output"] == "Paris"
    assert items["unjudged"]["expected"] is None
    assert json.loads(items["structured"]["output"]) == {"city": "Paris"}
    wrong_exact, wrong_similar = items["wrong"]["scores"]
    assert wrong_exact == [0.0, "fail", None]
    assert wrong_similar == [0.6, "fail", "distance 2 (output 5 characters, expected 5)"]
    assert items["unjudged"]["scores"][0] == [None, "skipped", "the item has no expected value"]
    assert isinstance(items["good"]["latency_ms"], float)


def test_an_output_equal_to_expected_is_embedded_once(write_config):
    document = html.render(RUN, run_all(write_config, MIXED))
    rows = {row[0]: row for row in embedded(document)["experiments"][0]["items"]}
    output = html_data.ROW_FIELDS.index("output")
    assert rows["good"][output] == html_data.SAME_AS_EXPECTED == 0
    assert rows["wrong"][output] == "Parsi"
    assert [row[html_data.ROW_FIELDS.index("expected")] for row in rows.values()].count("Paris") == 2


def test_histogram_bins_scores_from_zero_to_one(write_config):
    results = run_all(write_config, MIXED)
    document = html.render(RUN, results)
    # exact_match: 0.0 once (wrong), 1.0 twice (good, structured)
    assert 'aria-label="score histogram: 1, 0, 0, 0, 0, 0, 0, 0, 0, 2"' in document


def test_interrupted_experiment_and_run(write_config):
    [result] = run_all(write_config, HOSTILE)
    run = dataclasses.replace(RUN, status="interrupted")
    document = html.render(run, [dataclasses.replace(result, interrupted=True, passed=False)])
    assert document.count(">INTERRUPTED</span>") == 2


def test_a_run_without_experiments_still_renders():
    document = html.render(RUN, [])
    assert document.startswith("<!DOCTYPE html>") and "This run has no experiments." in document
    assert embedded(document)["experiments"] == []


def test_write_is_atomic_and_returns_the_path(tmp_path, write_config):
    results = run_all(write_config, MIXED)
    path = tmp_path / "reports" / "report.html"
    assert write_reports(str(path.parent), ["html"], RUN, results) == [str(path)]
    assert path.read_text(encoding="utf-8") == html.render(RUN, results)
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]


def test_the_script_cannot_end_its_own_element():
    from yamleval.reporting.html import asset

    for name in ("report.js", "report.css"):
        text = asset(name).lower()
        assert "</script" not in text and "</style" not in text and "<!--" not in text
    assert "innerhtml" not in asset("report.js").lower()


def test_importing_the_module_leaves_jinja2_unloaded():
    code = "import sys, yamleval.reporting.html; print('jinja2' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_runners_trace_is_embedded_as_the_steps_its_scorers_count(write_config):
    path = write_config("""
        experiments:
          - id: traced
            dataset: {items: [{id: a, input: a}]}
            runner: fixture_plugins.behaviours:agentish
    """)
    [experiment] = yamleval.load_experiments(path)
    page = html.render(RunInfo(run_id="r", status="completed", started_at="2026-01-01T00:00:00Z"),
                       [yamleval.run_experiment(experiment)])
    steps, calls, shown = items_of(page)["a"]["trajectory"]
    assert (steps, calls) == (2, 1)
    assert shown == [
        [1, "model", 12.5, 13, None, None,
         [["calculator", '{\n  "expression": "2+2"\n}', '4 <img src=x onerror="window.__pwned=1">', None, 0.3]]],
        [2, "model", 9.0, 23, "4", None, []]]


def test_a_step_latency_json_cannot_carry_is_left_out(write_config):
    from yamleval.records.types import Item, ItemList, ItemResult

    [result] = run_all(write_config, MIXED)[1:]
    trace = [{"type": "model", "latency_ms": float("nan")}, {"type": "model", "latency_ms": float("inf")}]
    item = ItemResult(Item("odd", 0, "x"), "passed", output="x", trace=trace)
    page = html.render(RUN, [dataclasses.replace(result, items=ItemList([item]))])
    assert [step[2] for step in items_of(page)["odd"]["trajectory"][2]] == [None, None]
