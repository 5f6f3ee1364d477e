"""Hostile outputs through every report: one real run of the command line, then each artefact.

Each payload of the corpus gets an experiment of its own (label and description are the
payload) with two items: one whose id, label, input, expected text, output, metadata, trace
and scorer reason carry the payload, and one whose runner raises it as an error.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import yamleval
from yamleval.reporting.console import summary_text
from yamleval.reporting import github
from yamleval.reporting.text import clean_text

from conftest import run_cli
from reporting.test_html_browser import browser  # noqa: F401  (a fixture: Chromium, launched once)
from security.hostile import BY_NAME, MARKUP, PAYLOADS

pytestmark = pytest.mark.security

TESTS = Path(__file__).parent.parent
JUNIT_XSD = TESTS / "data" / "junit" / "junit-10.xsd"
SMALL = 1000  # payloads shorter than this also go into ids, labels and descriptions

PLUGIN = '''
from yamleval import RunnerResult, Score
from security.hostile import ABORT, BY_NAME

SMALL = 1000


def items(name):
    text = BY_NAME[name]
    small = len(text) < SMALL
    return [
        {"id": text if small else "big-output", "label": text if small else "big", "input": text,
         "expected": "expected " + text[:SMALL], "metadata": {"payload": name, "note": text[:SMALL]}},
        {"id": "raise " + (text if small else name), "input": "raise", "expected": text[:SMALL],
         "metadata": {"payload": name}},
    ]


def answer(input, metadata):
    text = BY_NAME[metadata["payload"]]
    if input == "raise":
        raise RuntimeError(text[:SMALL])
    return RunnerResult(output=text, metadata={"note": text[:SMALL]},
                        trace=[{"type": "tool", "name": "lookup", "arguments": {"q": text[:SMALL]},
                                "result": text[:SMALL]}])


def broken(name):
    """One item, then a failure whose message is hostile: the run stops with it."""
    yield {"id": "first", "input": "ok", "expected": "ok", "metadata": {"payload": name}}
    raise RuntimeError(ABORT)


def judge(output, metadata):
    return Score(score=0.0, passed=False, reason=BY_NAME[metadata["payload"]][:SMALL])
'''


def experiment_id(number: int, name: str) -> str:
    return f"p{number:02d}-{name}"


def literal(text: str) -> str:
    """Config text that reads back as ``text``: ``${`` would be a reference."""
    return text.replace("${", "$${")


def config() -> dict:
    experiments = []
    for number, (name, text) in enumerate(PAYLOADS):
        small = len(text) < SMALL and name != "lone-surrogate"  # YAML cannot hold a lone surrogate
        experiments.append({
            "id": experiment_id(number, name),
            **({"label": literal(text), "description": literal(text)} if small else {}),
            "dataset": {"uses": "hostile_plugin:items", "with": {"name": name}},
            "runner": {"uses": "hostile_plugin:answer"},
            "scorers": [{"uses": "hostile_plugin:judge", "id": "judge"}, "exact_match"],
            "breakdowns": ["metadata.note", "metadata.payload"],  # the payload as a breakdown value too
        })
    experiments.append({"id": "stopped", "dataset": {"uses": "hostile_plugin:broken", "with": {"name": "script"}},
                        "runner": {"uses": "hostile_plugin:answer"}, "scorers": ["exact_match"]})
    return {"version": 1, "reports": {"dir": "reports"}, "experiments": experiments}


def yaml_text(data: dict) -> str:
    """``data`` as YAML (JSON is YAML): characters YAML cannot hold raw, or would fold as
    line breaks, as escapes; astral characters raw, as PyYAML reads no surrogate pairs."""
    text = json.dumps(data, ensure_ascii=False)
    return re.sub("[\x7f-\x9f\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", text)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The project folder after ``yamleval run`` inside a simulated GitHub Actions job."""
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "hostile_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "evals.yaml").write_text(yaml_text(config()), encoding="utf-8")
    summary = folder / "step-summary.md"
    done = run_cli("run", "evals.yaml", "--store", "results.db", cwd=folder, timeout=120,
                   PYTHONPATH=os.pathsep.join([str(folder), str(TESTS), str(TESTS / "data")]),
                   GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary), COLUMNS="200")
    done.folder = folder
    return done


@pytest.fixture(scope="module")
def results(run):
    """The same experiments run in this process, for checks one experiment at a time."""
    sys.path.insert(0, str(run.folder))
    try:
        return [yamleval.run_experiment(e) for e in yamleval.load_experiments(run.folder / "evals.yaml")]
    finally:
        sys.path.remove(str(run.folder))


def test_the_run_finishes_and_writes_every_report(run):
    assert run.returncode == 2, run.stderr[-3000:]  # every experiment fails, one stopped by its dataset
    for name in ("report.html", "junit.xml", "results.json", "summary.md"):
        assert (run.folder / "reports" / name).stat().st_size > 0, name
    assert (run.folder / "step-summary.md").stat().st_size > 0


# ---- HTML in Chromium -------------------------------------------------------------------------

INSTRUMENT = """
window.__calls = [];
for (const name of ["alert", "confirm", "prompt", "print", "open"]) {
  window[name] = function () { window.__calls.push(name); };
}
"""


def test_html_runs_nothing_and_requests_nothing(run, browser):  # noqa: F811
    path = run.folder / "reports" / "report.html"
    url = path.as_uri()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    requests, dialogs, problems = [], [], []

    def route(r):
        if r.request.url == url:
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    context.add_init_script(INSTRUMENT)
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("request", lambda r: None if r.url == url else requests.append(r.url))
    try:
        page.goto(url)
        page.wait_for_selector("html[data-ready=true]")
        shown = []
        for number, (name, text) in enumerate(PAYLOADS):
            section = page.locator(f"#exp-{number}")
            rows = section.locator("tbody tr.row")
            assert rows.count() == 2, name
            rows.nth(0).click()
            texts = section.locator("tr.detail pre").evaluate_all("nodes => nodes.map(n => n.textContent)")
            shown.append((name, text, texts))
            rows.nth(0).click()
            rows.nth(1).click()
            error_texts = section.locator("tr.detail").evaluate_all("nodes => nodes.map(n => n.textContent)")
            assert any(text[:200] in t for t in error_texts) or name == "lone-surrogate", name
            rows.nth(1).click()
            section.locator(".breakdown button.slice").first.click()  # a payload as a filter of the table
            assert rows.count() == 1, name
            with page.expect_download():
                section.locator("button[data-export=csv]").click()
        for details in page.locator("details.trajectory summary").all():
            details.click()
        state = page.evaluate("""() => ({
            pwned: window.__pwned === undefined ? null : window.__pwned, calls: window.__calls,
            href: location.href, base: document.baseURI,
            markup: document.querySelectorAll('img, iframe, object, embed, base, form, link:not([href="data:,"]), '
                                              + 'meta[http-equiv]:not([http-equiv=Content-Security-Policy]), [onload], [onerror], a[href^=javascript], '
                                              + 'main script, main style, main svg svg').length,
            styles: document.querySelectorAll('style').length,
            scripts: document.scripts.length, metas: document.querySelectorAll('meta[http-equiv=refresh]').length,
        })""")
        page.wait_for_timeout(300)  # a refresh or a late load would show by now
    finally:
        context.close()
    assert dialogs == [] and state["calls"] == [], (dialogs, state["calls"])
    assert state["pwned"] is None
    assert requests == [], f"the page made requests: {requests}"
    assert state["href"] == url and state["base"] == url
    assert state["markup"] == 0 and state["scripts"] == 2 and state["styles"] == 1 and state["metas"] == 0, state
    assert problems == [], problems
    for name, text, texts in shown:
        if name == "lone-surrogate":
            continue  # checked below: JSON cannot carry it into the page as such
        wanted = text if len(text) <= 20_000 else text[:20_000]
        assert any(wanted in t for t in texts), f"{name}: the payload is not shown as text"


# ---- JUnit ------------------------------------------------------------------------------------

def test_junit_is_valid_and_holds_the_payloads_as_text(run):
    from lxml import etree

    data = (run.folder / "reports" / "junit.xml").read_bytes()
    document = etree.fromstring(data)
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    assert schema.validate(document), schema.error_log
    bodies = "\n".join(document.xpath("//failure/text() | //error/text()"))
    assert BY_NAME["script"] in bodies and BY_NAME["cdata-end"] in bodies and BY_NAME["xml-quote"] in bodies
    names = document.xpath("//testcase/@name")
    assert BY_NAME["end-script"] in names
    assert len(data) < 30 * 1024 * 1024


# ---- Markdown: summary.md and the job summary -------------------------------------------------

_TAG = re.compile(r"<(?!br>)[A-Za-z!/?]")


def _check_markdown(text: str) -> None:
    for line in text.splitlines():
        assert not _TAG.search(line), f"raw markup passed into the summary: {line[:300]!r}"
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", line), repr(line[:300])
        assert not re.search(r"(?<!\\)\]\(javascript:", line), line[:300]
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) in _CELLS, f"table broken: {line[:300]!r}"


_CELLS = (7, 8, 12)  # split on "|": scorers (5 columns + 2 edges), the items table (6 + 2), statistics (10 + 2)


def test_markdown_summaries_escape_every_payload(run):
    for path in (run.folder / "reports" / "summary.md", run.folder / "step-summary.md"):
        text = path.read_text(encoding="utf-8")
        _check_markdown(text)
        assert "&lt;script&gt;window.\\_\\_pwned=1;alert(1)&lt;/script&gt;" in text
        assert "&#124; injected &#124; row &#124;" in text


# ---- GitHub workflow commands -----------------------------------------------------------------

_COMMAND = re.compile(r"::(error|warning|notice)( title=yamleval[^:\r\n]*)::[^\r\n]*\Z")


def _check_commands(lines: list[str]) -> None:
    for line in lines:
        assert "\n" not in line and "\r" not in line
        match = _COMMAND.match(line)
        assert match, f"not one of yamleval's commands: {line[:300]!r}"
        title = match.group(2) or ""
        assert "," not in title, line


def test_no_output_line_is_a_workflow_command_but_ours(run):
    for stream in (run.stdout, run.stderr):
        commands = [line for line in stream.split("\n") if line.lstrip().startswith("::")
                    or "::" in line.split(" ", 1)[0]]
        _check_commands(commands)
    assert any(line.startswith("::error title=yamleval") for line in run.stdout.split("\n"))


def test_annotations_for_each_payload_stay_one_command(results):
    for result, (name, text) in zip(results, PAYLOADS):
        lines = github.annotations([result])
        _check_commands(lines)
        assert len(lines) >= 2, name
        if "%0A::warning" in text:  # a literal % arrives as %25: GitHub cannot decode a new line
            assert "harmless%250A::warning" in "".join(lines)


def test_workflow_command_escaping_follows_githubs_rules():
    hostile = "50% done\r\n::error::x, y: z"
    assert github.escape_data(hostile) == "50%25 done%0D%0A::error::x, y: z"
    assert github.escape_property(hostile) == "50%25 done%0D%0A%3A%3Aerror%3A%3Ax%2C y%3A z"
    line = github.command("error", hostile, title=hostile)
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::error title=50%25 done ") and line.endswith("::50%25 done%0D%0A::error::x, y: z")


# ---- the terminal -----------------------------------------------------------------------------

_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_terminal_output_has_no_control_characters_from_payloads(run):
    for stream in (run.stdout, run.stderr):
        found = _TERMINAL_UNSAFE.search(stream)
        assert found is None, f"{found.group()!r} reached the terminal near {stream[max(0, found.start() - 80):found.end() + 80]!r}"
    assert "window.__pwned" in run.stdout  # the payloads are shown, as text
    assert "invoice[U+202E]gpj.exe" in run.stdout  # the override is named, not obeyed


@pytest.mark.parametrize("command", [["show", "latest"], ["show", "latest", "--config"], ["compare", "latest", "latest"],
                                     ["runs"]])
def test_commands_reading_the_stored_run_print_no_control_characters(run, command):
    store = "results.db"
    if command[0] == "compare":  # with a second run of the same project in a copy of the store: not with itself
        store = "compared.db"
        shutil.copyfile(run.folder / "results.db", run.folder / store)
        again = run_cli("run", "evals.yaml", "--store", store, "--report-dir", "compared", cwd=run.folder, timeout=120,
                        PYTHONPATH=os.pathsep.join([str(run.folder), str(TESTS), str(TESTS / "data"),
                                                    os.environ.get("PYTHONPATH", "")]))
        listed = run_cli("runs", "--ids", "--store", store, cwd=run.folder).stdout.split()
        assert len(listed) == 2, again.stdout[-2000:] + again.stderr[-2000:]
        command = ["compare", listed[-1], "latest"]
    done = run_cli(*command, "--store", store, cwd=run.folder, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    for stream in (done.stdout, done.stderr):
        found = _TERMINAL_UNSAFE.search(stream)
        assert found is None, f"{found.group()!r} near {stream[max(0, found.start() - 80):found.end() + 80]!r}"
        assert not any(line.lstrip().startswith("::") for line in stream.split("\n"))


def test_console_summary_keeps_each_payload_on_its_line(results):
    for result, (name, text) in zip(results, PAYLOADS):
        summary = summary_text(result)
        assert not _TERMINAL_UNSAFE.search(summary), name
        for line in summary.split("\n"):
            assert not line.startswith("::"), (name, line)


# ---- compare --format html --------------------------------------------------------------------

FLIPPING = '''
from security.hostile import BY_NAME


def items():
    return [{"id": text if len(text) < 1000 else name, "input": name, "expected": text}
            for name, text in BY_NAME.items() if name != "lone-surrogate"]


def answer(input, broken: bool):
    if broken and len(BY_NAME[input]) % 2:
        raise RuntimeError(BY_NAME[input][:1000])
    return BY_NAME[input] + ("!" if broken else "")
'''


def test_the_compare_page_shows_flipped_payloads_as_text_and_runs_nothing(tmp_path, browser):  # noqa: F811
    (tmp_path / "flipping.py").write_text(FLIPPING, encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(TESTS), str(TESTS / "data")])}
    experiment = {"id": "e", "dataset": {"uses": "flipping:items"}, "scorers": ["exact_match"],
                  "pass_criteria": [{"type": "no_regression", "baseline": literal(BY_NAME["script"])[:200]}]}
    for broken in (False, True):
        experiment["runner"] = {"uses": "flipping:answer", "with": {"broken": broken}}
        (tmp_path / "evals.yaml").write_text(yaml_text({"version": 1, "store": "r.db", "reports": {
            "dir": "reports", "formats": ["html"]}, "experiments": [experiment]}), encoding="utf-8")
        assert run_cli("run", "-q", cwd=tmp_path, timeout=120, **env).returncode == (1 if broken else 0)
    ids = run_cli("runs", "--ids", "--store", "r.db", cwd=tmp_path).stdout.split()
    done = run_cli("compare", ids[1], ids[0], "--store", "r.db", "--format", "html", cwd=tmp_path, timeout=120, **env)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "compare.html"
    path.write_text(done.stdout, encoding="utf-8")
    url = path.as_uri()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    requests, dialogs, problems = [], [], []
    context.route("**/*", lambda r: r.continue_() if r.request.url == url else (requests.append(r.request.url),
                                                                                 r.abort()))
    context.add_init_script(INSTRUMENT)
    page = context.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(url)
        shown = page.locator("table.flips pre").evaluate_all("nodes => nodes.map(n => n.textContent)")
        ids_shown = page.locator("table.flips td:first-child").evaluate_all("nodes => nodes.map(n => n.textContent)")
        state = page.evaluate("""() => ({calls: window.__calls, scripts: document.scripts.length,
            markup: document.querySelectorAll('main img, main iframe, main script, main style, main svg, main form,'
                                              + ' main a, [onload], [onerror], base').length})""")
        page.wait_for_timeout(300)  # a refresh or a late load would show by now
    finally:
        context.close()
    assert dialogs == [] and state["calls"] == [] and requests == [] and problems == [], (dialogs, requests)
    assert state["scripts"] == 0 and state["markup"] == 0, state
    for name, text in PAYLOADS:
        if name == "lone-surrogate":
            continue
        # without the controls a page cannot show, and its line breaks as HTML reads them
        wanted = clean_text(text[:20_000], limit=10 ** 9).replace("\r\n", "\n").replace("\r", "\n")
        assert any(wanted in t for t in shown), f"{name}: the payload is not shown as text"
        if len(text) < 1000 and text == wanted:
            assert any(t.startswith(text) for t in ids_shown), f"{name}: the id is not shown as text"
    body = done.stdout.split("</style>", 1)[1]
    assert not [fragment for fragment in MARKUP if fragment in body and fragment != "<details"]  # ours: the diff
