"""``yamleval serve``: the Eval Center as a user runs it, a real uvicorn process over a real store
(SQLite and PostgreSQL) that ``yamleval run`` writes from another process, its pages in Chromium."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from conftest import cli_env, run_cli
from reporting.test_html_browser import browser  # noqa: F401  (a fixture: Chromium, launched once)
from security.hostile import BY_NAME

XSS = ["script", "img-onerror", "end-script", "comment-open", "javascript-url", "svg-onload", "style-break",
       "iframe", "details"]  # the payloads that would run in a page, were they markup
TOKEN = "a-token-of-the-team-0123456789"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving(store: str, cwd: Path, *args: str, **env: str):
    """``yamleval serve --store STORE ARGS`` on a free port, until the block ends: its address."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "yamleval", "serve", "--store", store, "--port", str(port), *args],
                               cwd=cwd, env=cli_env(**env), stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert line.startswith("serving http://"), line + process.stderr.read()
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stderr.close()


SLOW = """
    store: {store}
    experiments:
      - id: slow
        label: A slow runner
        dataset: {{items: [{items}]}}
        runner: {{uses: "fixture_plugins.behaviours:sleeper", with: {{seconds: 0.4}}}}
        scorers: [exact_match]
        concurrency: 1
        pass_criteria: [{{type: pass_rate, min: 0.5}}]
"""


def _running(base: str, timeout: float = 60) -> str:
    """The id of the first run the server lists as running, once it does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = requests.get(base + "/api/runs", timeout=10).json()["runs"]
        if runs and runs[0]["status"] == "running" and runs[0]["progress"]["planned"]:
            return runs[0]["run_id"]
        time.sleep(0.1)
    raise AssertionError("no run started")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_running_runs_page_fills_its_progress_bar_and_ends_with_the_verdict(backend, tmp_path, request, browser):  # noqa: F811
    if backend == "postgresql":
        store = request.getfixturevalue("postgres_server").new_database()
    else:
        store = str(tmp_path / "results.db")
    items = ", ".join(f"{{id: i{n}, input: a{n}, expected: a{n}}}" for n in range(16))
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(SLOW.format(store=store, items=items)), encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "evals.yaml"], cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while backend == "sqlite" and not os.path.exists(store) and time.monotonic() < deadline:
            time.sleep(0.05)  # the server opens a store that is there
        with serving(store, tmp_path) as base:
            run_id = _running(base)
            page = browser.new_page()
            outside = []
            page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
            page.goto(f"{base}/runs/{run_id}")
            count = page.locator("#live [data-live=finished]")
            bar = page.locator("#live [data-live-bar=passed]")
            start, width = int(count.text_content()), float(bar.get_attribute("width"))
            assert start < 16
            page.wait_for_function("n => +document.querySelector('#live [data-live=finished]').textContent > n", arg=start)
            page.wait_for_function("w => +document.querySelector('#live [data-live-bar=passed]').getAttribute('width') > w",
                                   arg=width)
            page.wait_for_selector("#live [data-live=latest] li:not(.none-yet)")
            page.wait_for_selector("#live[data-ended]", timeout=60_000)
            assert page.locator(".run-title .badge").text_content() == "PASSED"
            assert count.text_content() == "16"
            assert float(bar.get_attribute("width")) == 100
            assert outside == []
            page.reload()
            page.wait_for_selector("html[data-ready=true]")
            assert page.locator("section.experiment .items-table tbody tr.row").count() == 16
            page.close()
        assert writer.wait(timeout=60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


HOSTILE_CONFIG = """
    store: results.db
    experiments:
      - id: hostile
        dataset: {file: hostile.jsonl, fields: {context: reply}}
        runner: {uses: echo, with: {output: "{{ item.context }}"}}
        scorers: [exact_match]
        tags: [release]
"""


@pytest.fixture(scope="module")
def hostile_store(tmp_path_factory):
    """A store with two runs whose items hold the payloads as ids, inputs and answers; the
    second run tagged ``candidate``, the first ``base``; and the first run's results.json."""
    folder = tmp_path_factory.mktemp("hostile")
    rows = [{"id": f"{name} {BY_NAME[name]}", "input": BY_NAME[name], "expected": "safe", "reply": BY_NAME[name]}
            for name in XSS]
    with open(folder / "hostile.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    (folder / "evals.yaml").write_text(textwrap.dedent(HOSTILE_CONFIG), encoding="utf-8")
    for tag in ("base", "candidate"):
        done = run_cli("run", "evals.yaml", cwd=folder)
        assert done.returncode == 1, done.stderr  # every answer is wrong
        results = json.loads((folder / "reports" / "results.json").read_text(encoding="utf-8"))
        assert run_cli("tag", results["run_id"], tag, "--store", "results.db", cwd=folder).returncode == 0
        if tag == "base":
            base_results = results
    return folder, base_results


def test_the_api_gives_results_json_without_its_items(hostile_store):
    folder, results = hostile_store
    with serving("results.db", folder) as base:
        answer = requests.get(f"{base}/api/runs/{results['run_id']}", timeout=10)
        assert answer.status_code == 200
        served = answer.json()
        assert served.pop("progress")["finished"] == len(XSS)
        assert served.pop("tags") == ["base"]
        for entry in results["experiments"]:
            assert len(entry.pop("items")) == len(XSS)
        assert served == results
        listed = requests.get(f"{base}/api/runs", timeout=10).json()
        assert [r["tags"] for r in listed["runs"]] == [["candidate"], ["base"]]
        tagged = requests.get(f"{base}/api/runs", params={"tag": "base"}, timeout=10).json()
        assert tagged["total"] == 1 and tagged["runs"][0]["run_id"] == results["run_id"]
        failed = requests.get(f"{base}/api/runs", params={"status": "failed", "limit": 1, "offset": 1}, timeout=10).json()
        assert failed["total"] == 2 and [r["run_id"] for r in failed["runs"]] == [results["run_id"]]
        assert requests.get(f"{base}/api/runs", params={"status": "passed"}, timeout=10).json()["total"] == 0
        items = requests.get(f"{base}/api/runs/base/items", params={"limit": 3, "offset": 2}, timeout=10).json()
        assert items["total"] == len(XSS)
        assert [i["id"] for i in items["items"]] == [i["id"] for i in json.loads(
            (folder / "reports" / "results.json").read_text(encoding="utf-8"))["experiments"][0]["items"]][2:5]
        missing = requests.get(f"{base}/api/runs/nothing-by-this-name", timeout=10)
        assert missing.status_code == 404 and "no run or tag 'nothing-by-this-name'" in missing.json()["error"]
        wrong = requests.get(f"{base}/api/runs/base/items", params={"limit": "many"}, timeout=10)
        assert wrong.status_code == 400 and "limit" in wrong.json()["error"]


def _pages(base: str, run_id: str) -> list[str]:
    from urllib.parse import quote

    item = quote(f"script {BY_NAME['script']}", safe="")
    return [f"{base}/", f"{base}/runs/{run_id}", f"{base}/runs/{run_id}/items/hostile/{item}",
            f"{base}/compare/base/candidate", f"{base}/history", f"{base}/experiments/hostile"]


def test_the_pages_show_hostile_output_as_text_and_run_none_of_it(hostile_store, browser):  # noqa: F811
    folder, results = hostile_store
    with serving("results.db", folder) as base:
        page = browser.new_page()
        outside, dialogs, errors = [], [], []
        page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        for url in _pages(base, results["run_id"]):
            answer = page.goto(url)
            assert answer.status == 200, url
            page.wait_for_selector("html[data-ready=true]")
            assert page.evaluate("window.__pwned") is None, url
            assert page.locator("script").count() <= 3, url  # the page's own: data, served.js, report.js
        # the run's page: every item opened shows the payloads as text
        page.goto(f"{base}/runs/{results['run_id']}")
        page.wait_for_selector("html[data-ready=true]")
        rows = page.locator(".items-table tbody tr.row")
        assert rows.count() == len(XSS)
        for n in range(len(XSS)):
            rows.nth(n).click()
        assert page.locator(".detail").count() == len(XSS)
        shown = page.locator(".items-table").inner_text()
        assert BY_NAME["img-onerror"] in shown
        assert page.evaluate("window.__pwned") is None
        # the item's page: the item opened, its link from the run's page
        link = page.locator(".detail a.item-link").first
        link.click()
        page.wait_for_selector(".detail")
        assert page.locator(".items-table tbody tr.row").count() == 1
        assert page.locator(".detail a.item-link").count() == 0  # no link to the page it is on
        assert BY_NAME["script"] in page.locator(".detail").inner_text()
        # the compare page found the runs by their tags
        page.goto(f"{base}/compare/base/candidate")
        assert "base" in page.content() or results["run_id"] in page.content()
        page.close()
        assert outside == [] and dialogs == [] and errors == []


def test_another_host_needs_a_token(hostile_store):
    folder, results = hostile_store
    refused = run_cli("serve", "--store", "results.db", "--host", "0.0.0.0", "--port", str(free_port()), cwd=folder)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: --host 0.0.0.0 lets other machines read every stored run: give a token")
    assert "Traceback" not in refused.stderr
    unset = run_cli("serve", "--store", "results.db", "--host", "0.0.0.0", "--token-env", "NOT_SET_HERE", cwd=folder)
    assert unset.returncode == 2 and "NOT_SET_HERE is not set" in unset.stderr
    with serving("results.db", folder, "--host", "0.0.0.0", "--token-env", "TEAM_TOKEN", TEAM_TOKEN=TOKEN) as base:
        api = f"{base}/api/runs/{results['run_id']}"
        assert requests.get(api, timeout=10).status_code == 401
        assert requests.get(api, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        assert requests.get(api, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).json()["run_id"] == results["run_id"]
        page = requests.get(f"{base}/runs/{results['run_id']}", timeout=10, allow_redirects=False)
        assert page.status_code == 401 and "/sign-in?next=" in page.text and TOKEN not in page.text
        session = requests.Session()
        wrong = session.post(f"{base}/sign-in", data={"token": "nope", "next": "/history"}, timeout=10)
        assert wrong.status_code == 401
        signed = session.post(f"{base}/sign-in", data={"token": TOKEN, "next": "/history"}, timeout=10,
                              allow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/history"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and TOKEN not in cookie
        assert session.get(f"{base}/history", timeout=10).status_code == 200
        away = session.post(f"{base}/sign-in", data={"token": TOKEN, "next": "//elsewhere.example/"}, timeout=10,
                            allow_redirects=False)
        assert away.headers["location"] == "/"


def test_a_store_that_cannot_be_read_is_a_message_not_a_traceback(tmp_path):
    missing = run_cli("serve", "--store", str(tmp_path / "none.db"), "--port", str(free_port()), cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: no results database at ")
    assert "Traceback" not in missing.stderr


VARIANTS = """
    store: results.db
    experiments:
      - id: choice
        dataset: {items: [{id: "a/1", input: x, expected: x}, {id: b, input: y, expected: y}]}
        runner: {uses: echo, with: {output: "{{ input }}"}}
        variants:
          - {id: plain, baseline: true}
          - {id: loud, with: {output: "{{ input | upper }}"}}
        scorers: [exact_match]
"""


def test_a_variants_items_and_experiment_pages_are_served_though_their_ids_hold_a_slash(tmp_path, browser):  # noqa: F811
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(VARIANTS), encoding="utf-8")
    done = run_cli("run", "evals.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the loud variant fails
    run_id = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))["run_id"]
    assert run_cli("tag", run_id, "team/nightly", "--store", "results.db", cwd=tmp_path).returncode == 0
    with serving("results.db", tmp_path) as base:
        page = browser.new_page()
        page.goto(f"{base}/runs/{run_id}")
        page.wait_for_selector("html[data-ready=true]")
        section = page.locator("section.experiment[data-id='choice/loud']")
        section.locator("tbody tr.row").first.click()
        section.locator(".detail a.item-link").click()
        page.wait_for_selector(".detail")
        assert page.locator(".detail").inner_text().count("a/1") >= 1
        assert page.url == f"{base}/runs/{run_id}/items/choice%2Floud/a%2F1"
        page.close()
        assert requests.get(f"{base}/experiments/choice/loud", timeout=10).status_code == 200
        assert requests.get(f"{base}/compare/team%2Fnightly/{run_id}", timeout=10).status_code == 200
        tagged = requests.get(f"{base}/runs/team%2Fnightly", timeout=10, allow_redirects=False)
        assert tagged.status_code == 303 and tagged.headers["location"] == f"/runs/{run_id}"
        huge = requests.get(f"{base}/api/runs", params={"offset": 10 ** 30}, timeout=10)
        assert huge.status_code == 400 and "offset" in huge.json()["error"]
        rows = requests.get(f"{base}/api/runs/{run_id}/rows", timeout=10)
        assert rows.status_code == 400
        unknown = requests.get(f"{base}/api/runs/{run_id}/items", params={"experiment": "nope"}, timeout=10)
        assert unknown.status_code == 404


def test_a_store_that_fails_while_served_is_a_503_with_the_reason_and_is_read_again_once_mended(tmp_path):
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(VARIANTS), encoding="utf-8")
    assert run_cli("run", "evals.yaml", cwd=tmp_path).returncode == 1
    store = tmp_path / "results.db"
    kept = store.read_bytes()
    with serving("results.db", tmp_path) as base:
        assert requests.get(f"{base}/api/runs", timeout=10).status_code == 200
        store.write_bytes(b"not a database at all" * 1000)
        broken = requests.get(f"{base}/api/runs", timeout=10)
        assert broken.status_code == 503
        assert broken.json()["error"].startswith("cannot read the results database")
        assert "Traceback" not in broken.text
        page = requests.get(f"{base}/", timeout=10)
        assert page.status_code == 503 and "it is not a yamleval results database" in page.text  # opened again
        store.write_bytes(kept)
        assert requests.get(f"{base}/api/runs", timeout=10).status_code == 200


VARIANTS_SLOW = """
    store: {store}
    experiments:
      - id: prompts
        label: Two prompts
        dataset: {{items: [{items}]}}
        runner: {{uses: "fixture_plugins.behaviours:sleeper", with: {{seconds: 0.5}}}}
        variants: [{{id: baseline}}, {{id: new-prompt, with: {{seconds: 0.4}}}}]
        scorers: [exact_match]
        concurrency: 1
"""


def _no_sideways_scroll(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    for box in page.locator(".badge").evaluate_all("els => els.map(e => e.getBoundingClientRect().right)"):
        assert box <= width, "a verdict badge is cut at the screen's edge"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_running_variants_run_names_its_variants_counts_what_is_planned_and_lists_what_finished(
        backend, tmp_path, request, browser):  # noqa: F811
    store = request.getfixturevalue("postgres_server").new_database() if backend == "postgresql" \
        else str(tmp_path / "results.db")
    items = ", ".join(f"{{id: i{n}, input: a{n}, expected: a{n}}}" for n in range(6))
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(VARIANTS_SLOW.format(store=store, items=items)),
                                         encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "evals.yaml"], cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while backend == "sqlite" and not os.path.exists(store) and time.monotonic() < deadline:
            time.sleep(0.05)
        with serving(store, tmp_path) as base:
            run_id = _running(base)
            while requests.get(f"{base}/api/runs/{run_id}", timeout=10).json()["progress"]["finished"] < 2:
                assert time.monotonic() < deadline, "no item finished"
                time.sleep(0.05)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/runs/{run_id}")
            live = page.locator("#live")
            finished, width = live.evaluate("l => [+l.querySelector('[data-live=finished]').textContent,"
                                            " +l.querySelector('[data-live-bar=passed]').getAttribute('width')]")
            planned = live.locator("[data-live=planned]").inner_text()
            assert planned == "12" or finished == 12, "the variant not started runs the items of the one started"
            assert width == pytest.approx(100 * finished / 12, abs=0.01), "the bar is the share finished, not all of it"
            assert "2 experiments" in page.locator(".run-meta").inner_text()
            names = live.locator("[data-live=experiments] tr td:first-child .mono").all_inner_texts()
            assert names == ["prompts/baseline", "prompts/new-prompt"]
            page.wait_for_selector("#live [data-live=latest] li:not(.none-yet)", timeout=5_000)
            page.set_viewport_size({"width": 390, "height": 800})
            _no_sideways_scroll(page, 390)
            page.wait_for_selector("#live[data-ended]", timeout=60_000)
            page.close()
            assert writer.wait(timeout=60) == 0

            served = requests.get(f"{base}/runs/{run_id}", timeout=10).text
            assert "Reading each variant's answers…" in served, "the side-by-side table says it is loading"
            for width in (1280, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{base}/runs/{run_id}/items/prompts%2Fnew-prompt/i1")
                page.wait_for_selector("html[data-ready=true]")
                text = page.locator("body").inner_text()
                assert page.title() == f"yamleval · item i1 · prompts/new-prompt · {run_id}"
                assert page.locator("h1").inner_text() == "Item i1"
                assert "of experiment prompts/new-prompt" in page.locator(".run-meta").inner_text()
                assert page.locator("section.variants").count() == 0, "one variant has nothing to compare with"
                assert "1 variants" not in text and "(baseline)" not in text and "1 experiment" not in text
                _no_sideways_scroll(page, width)
                page.goto(f"{base}/")
                assert page.locator(".runs-table .badge").first.inner_text() == "PASSED"
                _no_sideways_scroll(page, width)
                scroller = page.locator(".runs-table").evaluate("t => [t.scrollWidth, t.parentElement.clientWidth]")
                assert scroller[0] <= scroller[1], "the runs list is cut"
                page.close()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


UNKNOWN_TOTAL = """
    store: {store}
    experiments:
      - id: first
        dataset: {{uses: "fixture_plugins.behaviours:countdown", limit: 8}}
        runner: {{uses: "fixture_plugins.behaviours:sleeper", with: {{seconds: 0.4}}}}
        scorers: [exact_match]
        concurrency: 1
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_run_of_unknown_size_fills_no_share_of_its_bar(backend, tmp_path, request):
    store = request.getfixturevalue("postgres_server").new_database() if backend == "postgresql" \
        else str(tmp_path / "results.db")
    # a dataset plugin's items are known only as they come: a full bar of the first two would read as all the run
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(UNKNOWN_TOTAL.format(store=store)), encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "evals.yaml"], cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while backend == "sqlite" and not os.path.exists(store) and time.monotonic() < deadline:
            time.sleep(0.05)
        with serving(store, tmp_path) as base:
            while True:
                assert time.monotonic() < deadline, "no item finished while the run ran"
                runs = requests.get(base + "/api/runs", timeout=10).json()["runs"]
                progress = runs[0]["progress"] if runs else None
                if progress and progress["status"] == "running" and progress["finished"] >= 2:
                    break
                time.sleep(0.05)
            assert progress["planned"] is None
            assert sum(progress["counts"].values()) >= 2
            assert [share["width"] for share in progress["shares"]] == [0, 0, 0, 0] and progress["done"] == 0
        assert writer.wait(timeout=60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()


def test_without_a_token_every_request_naming_another_host_is_refused(hostile_store):
    folder, results = hostile_store
    with serving("results.db", folder) as base:
        port = base.rsplit(":", 1)[1]
        api = f"{base}/api/runs/{results['run_id']}"
        for address in (api, f"{base}/", f"{base}/runs/{results['run_id']}", f"{api}/items"):
            # a page elsewhere whose name was made to point here (DNS rebinding) names its own host
            rebound = requests.get(address, headers={"Host": f"rebound.example:{port}"}, timeout=10)
            assert rebound.status_code == 403, address
            assert results["run_id"] not in rebound.text
            forwarded = requests.get(address, headers={"X-Forwarded-Host": "rebound.example"}, timeout=10)
            assert forwarded.status_code == 403, address
        assert requests.get(api, headers={"Host": f"localhost:{port}"}, timeout=10).status_code == 200
        assert requests.get(api, timeout=10).status_code == 200


def test_a_last_event_id_past_what_the_store_can_be_asked_is_a_400(hostile_store):
    folder, results = hostile_store
    with serving("results.db", folder) as base:
        events = f"{base}/api/runs/{results['run_id']}/events"
        for given in (str(2 ** 64), "²", "-1", "12abc"):
            answer = requests.get(events, headers={"Last-Event-ID": given.encode("utf-8")}, timeout=10)
            assert answer.status_code == 400, (given, answer.text)
            assert "Last-Event-ID" in answer.json()["error"]
        ended = requests.get(events, headers={"Last-Event-ID": "3"}, timeout=10)
        assert ended.status_code == 200 and "event: end" in ended.text


DOTS = """
    store: results.db
    experiments:
      - id: odd
        dataset: {items: [{id: ".", input: x, expected: x}, {id: "..", input: y, expected: y},
                          {id: "two\\nlines", input: z, expected: z}]}
        runner: {uses: echo, with: {output: "{{ input }}"}}
        scorers: [exact_match]
"""


def test_items_whose_ids_are_dots_or_hold_a_newline_open_from_their_rows(tmp_path, browser):  # noqa: F811
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(DOTS), encoding="utf-8")
    done = run_cli("run", "evals.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))["run_id"]
    with serving("results.db", tmp_path) as base:
        for number, item_id in enumerate([".", "..", "two\nlines"]):
            page = browser.new_page()
            page.goto(f"{base}/runs/{run_id}")
            page.wait_for_selector("html[data-ready=true]")
            page.locator("tbody tr.row").nth(number).click()
            page.locator(".detail a.item-link").click()
            page.wait_for_selector("tr.detail")
            assert "Not found" not in page.content()
            assert page.locator("tbody tr.row").count() == 1
            assert item_id.split("\n")[0] in page.locator("tr.detail").inner_text()
            page.close()
