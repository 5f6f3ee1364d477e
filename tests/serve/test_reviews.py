"""Reviews in the Eval Center: a reviewer signs in to ``yamleval serve --reviews`` in Chromium,
overrules an item, and the run's page counts it at once; a server without ``--reviews`` offers
no controls and refuses writes."""
from __future__ import annotations

import json

import requests

from conftest import run_cli
from reporting.test_html_browser import browser  # noqa: F401  (a fixture: Chromium, launched once)
from serve.test_app import TOKEN, serving

BO = "bo-holds-this-token-0123456789"

# 12 items: the judge passes 8; exact_match passes the ones whose answer is right (i0–i5)
PROJECT = """
store: results.db
experiments:
  - id: answers
    dataset: {{items: [{items}]}}
    runner: {{uses: echo}}
    scorers:
      - {{id: judge, uses: "fixture_plugins.verdicts:judged"}}
    pass_criteria: [{{type: pass_rate, min: 0.6}}]
"""


def _project(tmp_path) -> str:
    items = ", ".join(f"{{id: i{n}, input: q{n}, metadata: {{judge: {str(n % 3 != 0).lower()}}}}}" for n in range(12))
    (tmp_path / "evals.yaml").write_text(PROJECT.format(items=items), encoding="utf-8")
    done = run_cli("run", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # 8 of 12 pass: 0.667 ≥ 0.6
    return run_cli("runs", "--ids", cwd=tmp_path).stdout.split()[0]


def test_a_reviewer_signs_in_overrules_an_item_and_the_page_counts_it(tmp_path, browser):  # noqa: F811
    run_id = _project(tmp_path)
    tokens = f"{TOKEN} bo={BO}"  # one token for the team (each names themselves), one that is bo's
    with serving("results.db", tmp_path, "--reviews", "--token-env", "REVIEW_TOKEN", REVIEW_TOKEN=tokens) as base:
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/runs/{run_id}")
        page.click("text=sign in")  # the page a browser gets without the token
        page.fill("input[name=token]", TOKEN)
        page.click("form button, form input[type=submit]")
        page.wait_for_selector("html[data-ready=true]")
        page.evaluate("() => { window.notReloaded = true; }")
        section = page.locator("section.experiment")
        assert section.locator("[data-stat='Pass rate'] .stat-value").text_content() == "66.7%"
        assert section.locator("[data-stat='Reviewed']").count() == 0
        assert section.locator("[data-criteria] .pill").text_content() == "met"
        # a person fails an item its judge passed
        page.locator("tr.row", has_text="i1").first.click()
        form = page.locator("tr.detail .review")
        form.locator("input").fill("ana")
        form.locator("textarea").fill("names the wrong city")
        form.locator("button.review-fail").click()
        page.wait_for_function("() => document.querySelector(\"[data-stat='Reviewed'] .stat-value\") !== null")
        assert section.locator("[data-stat='Reviewed'] .stat-value").text_content() == "1 · 1 overruled"
        assert section.locator("[data-stat='Pass rate'] .stat-value").text_content() == "58.3%"
        assert section.locator("[data-share=failed] strong").text_content() == "5"
        assert section.locator(".exp-title .badge").text_content() == "FAILED"  # 7 of 12 < 0.6
        assert page.locator(".run-title .badge").text_content() == "FAILED"
        assert section.locator("[data-criteria] .pill").text_content() == "not met"
        assert section.locator("[data-criteria] td.num").first.text_content() == "0.583"
        assert "Stored: failed by ana (its scorers: passed)" in page.locator("tr.detail .review-said").text_content()
        assert "Counts: failed, by ana" in page.locator("tr.detail").text_content()
        assert page.evaluate("() => window.notReloaded") is True
        assert errors == []
        page.close()
        # signed in with bo's token, the form knows who reviews
        page = browser.new_page()
        page.goto(f"{base}/sign-in?next=/runs/{run_id}/items/answers/i2")
        page.fill("input[name=token]", BO)
        page.click("form button, form input[type=submit]")
        page.wait_for_selector("tr.detail .review button.review-pass")
        assert page.locator("tr.detail .review input").count() == 0
        page.close()
        # the runs list shows the run's verdict as people reviewed it
        assert requests.get(f"{base}/api/runs?status=failed", headers={"Authorization": f"Bearer {TOKEN}"},
                            timeout=10).json()["runs"][0]["run_id"] == run_id
        listed = requests.get(f"{base}/api/runs/{run_id}/reviews", headers={"Authorization": f"Bearer {TOKEN}"},
                              timeout=10).json()["reviews"]
        assert [(r["verdict"], r["machine"], r["by"], r["note"]) for r in listed] == [
            ("failed", "passed", "ana", "names the wrong city")]
        # no review without the token, none sent as a form from elsewhere, none from another site
        post = f"{base}/api/runs/{run_id}/reviews"
        body = json.dumps({"experiment": "answers", "item": "i2", "verdict": "fail", "by": "eve"})
        assert requests.post(post, data=body, headers={"Content-Type": "application/json"}, timeout=10).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert requests.post(post, data=body, headers={**bearer, "Content-Type": "text/plain"},
                             timeout=10).status_code == 415
        assert requests.post(post, data=body, headers={**bearer, "Content-Type": "application/json",
                                                       "Origin": "https://elsewhere.example"}, timeout=10).status_code == 403
        # bo's token names bo, whoever the body says
        bos = requests.post(post, data=body, headers={"Authorization": f"Bearer {BO}", "Content-Type": "application/json"},
                            timeout=10)
        assert bos.status_code == 200 and bos.json()["review"]["by"] == "bo", bos.text
        bad = requests.post(post, data=json.dumps({"experiment": "answers", "item": "nope", "verdict": "fail", "by": "x"}),
                            headers={**bearer, "Content-Type": "application/json"}, timeout=10)
        assert bad.status_code == 400 and "has no item 'nope'" in bad.json()["error"]
    # what the server stored is what `yamleval report` counts
    shown = run_cli("agreement", "--format", "json", cwd=tmp_path)
    assert json.loads(shown.stdout)["experiments"]["answers"]["overruled"] == 2


def test_without_reviews_the_pages_offer_none_and_the_api_refuses_writes(tmp_path, browser):  # noqa: F811
    run_id = _project(tmp_path)
    with serving("results.db", tmp_path) as base:
        page = browser.new_page()
        page.goto(f"{base}/runs/{run_id}/items/answers/i1")
        page.wait_for_selector("tr.detail")
        assert page.locator(".review").count() == 0 and page.locator("#queue").count() == 0
        page.close()
        refused = requests.post(f"{base}/api/runs/{run_id}/reviews", timeout=10, headers={"Content-Type": "application/json"},
                                data=json.dumps({"experiment": "answers", "item": "i1", "verdict": "fail", "by": "x"}))
        assert refused.status_code == 403 and "--reviews" in refused.json()["error"]
    assert json.loads(run_cli("agreement", "--format", "json", cwd=tmp_path).stdout)["experiments"]["answers"][
        "reviewed"] == 0


def test_without_a_token_only_this_machines_address_may_send_a_review(tmp_path):
    run_id = _project(tmp_path)
    with serving("results.db", tmp_path, "--reviews", "--reviewer", "cy") as base:
        post = f"{base}/api/runs/{run_id}/reviews"
        body = json.dumps({"experiment": "answers", "item": "i1", "verdict": "fail"})
        port = base.rsplit(":", 1)[1]
        # a page elsewhere whose name was made to point here (DNS rebinding) sends its own Host and Origin
        rebound = requests.post(post, data=body, timeout=10, headers={
            "Content-Type": "application/json", "Host": f"rebound.example:{port}", "Origin": f"http://rebound.example:{port}"})
        assert rebound.status_code == 403
        assert requests.post(f"{base}/api/runs/nope/reviews", data=body, timeout=10,
                             headers={"Content-Type": "application/json"}).status_code == 404
        taken = requests.post(post, data=body, timeout=10, headers={"Content-Type": "application/json"})
        assert taken.status_code == 200 and taken.json()["review"]["by"] == "cy", taken.text
        assert requests.post(post, data=b"[" * 70_000, timeout=10,
                             headers={"Content-Type": "application/json"}).status_code == 413


def test_a_review_whose_text_cannot_be_stored_is_a_400_on_both_backends(tmp_path, store_at):
    items = ", ".join(f"{{id: i{n}, input: q{n}, metadata: {{judge: true}}}}" for n in range(3))
    (tmp_path / "evals.yaml").write_text(store_at.config(PROJECT.format(items=items)), encoding="utf-8")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    with serving(store_at.url("results.db"), tmp_path, "--reviews") as base:
        run_id = requests.get(f"{base}/api/runs", timeout=10).json()["runs"][0]["run_id"]
        post = f"{base}/api/runs/{run_id}/reviews"
        for field, text in (("note", "\ud800"), ("by", "\ud800"), ("note", "a\x00b"), ("by", "a\x00b")):
            body = json.dumps({"experiment": "answers", "item": "i1", "verdict": "fail", "by": "ana", field: text})
            refused = requests.post(post, data=body, timeout=10, headers={"Content-Type": "application/json"})
            assert refused.status_code == 400, (field, text, refused.text)
            assert "cannot be stored" in refused.json()["error"]
        assert requests.get(post, timeout=10).json()["reviews"] == []


DISAGREEING = """
store: results.db
experiments:
  - id: answers
    dataset: {{items: [{items}]}}
    runner: {{uses: echo}}
    scorers:
      - {{id: judge, uses: "fixture_plugins.verdicts:judged"}}
      - exact_match
"""


def test_the_items_worth_a_review_are_read_once_the_page_is_open(tmp_path, browser):  # noqa: F811
    # the judge passes i1, i2, i4, i5; exact_match the even ones: they disagree on i1, i5 (pass) and i0 (fail)
    items = ", ".join(f"{{id: i{n}, input: q{n}, expected: {'q' if n % 2 == 0 else 'x'}{n},"
                      f" metadata: {{judge: {str(n % 3 != 0).lower()}}}}}" for n in range(6))
    (tmp_path / "evals.yaml").write_text(DISAGREEING.format(items=items), encoding="utf-8")
    run_cli("run", "-q", cwd=tmp_path)
    run_id = run_cli("runs", "--ids", cwd=tmp_path).stdout.split()[0]
    with serving("results.db", tmp_path, "--reviews") as base:
        opened = requests.get(f"{base}/runs/{run_id}", timeout=10).text
        assert f"/api/runs/{run_id}/queue" in opened and "judge and exact_match disagree" not in opened
        listed = requests.get(f"{base}/api/runs/{run_id}/queue", timeout=10).json()
        assert sorted(entry["id"] for entry in listed) == ["i0", "i1", "i5"]
        assert all(entry["reasons"] == ["judge and exact_match disagree"] for entry in listed)
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/runs/{run_id}")
        page.wait_for_selector("#queue li")
        assert page.locator("#queue li").count() == 3 and errors == []
        page.close()
    with serving("results.db", tmp_path) as base:  # without --reviews: no queue, and its address says why
        refused = requests.get(f"{base}/api/runs/{run_id}/queue", timeout=10)
        assert refused.status_code == 403 and "--reviews" in refused.json()["error"]
