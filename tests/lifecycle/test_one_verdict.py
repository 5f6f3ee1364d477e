"""One reviewed run, one verdict and one count everywhere: a rescore keeps people's verdicts as
reviews, a review given while a later experiment runs reaches the run's verdict, and `runs`, `show`,
the gate and the Eval Center's JSON count a reviewed run alike."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time

import requests

from conftest import cli_env, run_cli
from serve.test_app import serving

PROJECT = """
store: r.db
reports: {{formats: [json]}}
experiments:
  - id: answers
    dataset: {{items: [{items}]}}
    runner: {{uses: echo}}
    scorers:
      - {{id: judge, uses: "fixture_plugins.verdicts:given"}}
    pass_criteria: [{criteria}]
{more}"""
LATER = """
  - id: later
    dataset: {items: [{id: x, input: q}]}
    runner: {uses: fixture_plugins.behaviours:held, with: {log: started.log, release: go}}
"""


def _project(write_config, store_at, judge, criteria: str, more: str = "") -> None:
    items = ", ".join(f"{{id: i{n:02d}, input: q{n}, metadata: {{judge: {str(judge(n)).lower()}}}}}" for n in range(12))
    write_config(store_at.config(PROJECT.format(items=items, criteria=criteria, more=more)))


def _reviews(tmp_path, verdicts: dict[int, str]) -> str:
    rows = ["experiment,item,verdict,note,by", *(f"answers,i{n:02d},{v},,ana" for n, v in verdicts.items())]
    (tmp_path / "reviews.csv").write_text("\n".join(rows) + "\n")
    return "reviews.csv"


def _wait_for_items(db, count: int, timeout: float = 60) -> None:
    """Wait until the run has stored ``count`` items (so that its signal handlers are in place)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
                if con.execute("SELECT count(*) FROM items").fetchone()[0] >= count:
                    return
        except sqlite3.Error:
            pass
        time.sleep(0.01)
    raise AssertionError(f"{count} items were not stored within {timeout}s")


def _latest(tmp_path, db: str) -> str:
    return run_cli("runs", "--ids", "--store", db, cwd=tmp_path).stdout.split()[0]


def test_a_rescore_of_a_reviewed_run_stores_its_scorers_verdicts(write_config, tmp_path, store_at):
    # the judge passes 4 of 12; people pass all 12; a baseline made by rescoring the reviewed run
    _project(write_config, store_at, lambda n: n % 3 == 0, "{type: no_regression, baseline: base}")
    db = store_at.url("r.db")
    assert run_cli("run", "-q", cwd=tmp_path).returncode in (0, 1)
    reviewed = run_cli("review", "latest", "--import", _reviews(tmp_path, {n: "pass" for n in range(12)}),
                       "--store", db, cwd=tmp_path)
    assert reviewed.returncode == 0, reviewed.stderr
    rescored = run_cli("rescore", "latest", "--format", "json", "--store", db, cwd=tmp_path)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    base = _latest(tmp_path, db)
    written = json.loads((tmp_path / "reports" / "results.json").read_text())
    assert written["run_id"] == base and written["experiments"][0]["summary"]["passed"] == 12  # people's count
    # the items keep their scorers' verdicts; people's stay reviews
    assert store_at.query("r.db", "SELECT status, COUNT(*) FROM items WHERE run_id = ? GROUP BY status"
                                  " ORDER BY status", (base,)) == [("failed", 8), ("passed", 4)]
    assert run_cli("tag", base, "base", "--store", db, cwd=tmp_path).returncode == 0
    # the same system again: nothing changed, so nothing regressed
    again = run_cli("run", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    [criterion] = json.loads((tmp_path / "reports" / "results.json").read_text())["experiments"][0]["summary"]["criteria"]
    assert criterion["passed"] and not criterion["skipped"] and base in criterion["detail"], criterion
    assert "regressed" not in criterion["detail"]


def test_reviews_given_while_a_later_experiment_runs_reach_the_runs_verdict(write_config, tmp_path, store_at):
    # the judge passes every answer; people fail 7 of them while the next experiment still runs
    _project(write_config, store_at, lambda n: True, "{type: pass_rate, min: 0.7}", LATER)
    db = store_at.url("r.db")
    running = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started.log").exists() and running.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "started.log").exists(), running.communicate()
        reviewed = run_cli("review", "latest", "--import", _reviews(tmp_path, {n: "fail" for n in range(7)}),
                           "--store", db, cwd=tmp_path)
        assert reviewed.returncode == 0, reviewed.stderr
        (tmp_path / "go").write_text("")
        out, err = running.communicate(timeout=120)
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    assert running.returncode == 1, out + err  # 5/12 < 0.7 as people count it
    listed = run_cli("runs", "--store", db, cwd=tmp_path).stdout
    assert "FAILED" in listed and "PASSED" not in listed, listed
    gated = run_cli("report", "latest", "--gate", "--format", "json", "--store", db, cwd=tmp_path)
    assert gated.returncode == 1, gated.stdout + gated.stderr


def test_one_reviewed_run_one_count_in_runs_show_and_the_eval_center(write_config, tmp_path, store_at):
    # the judge passes 8 of 12 (66.7%); people fail 4 of those: 4 of 12 (33.3%)
    _project(write_config, store_at, lambda n: n % 3 != 0, "{type: pass_rate, min: 0.6}")
    db = store_at.url("r.db")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    run_id = _latest(tmp_path, db)
    assert run_cli("review", "latest", "--import", _reviews(tmp_path, {1: "fail", 2: "fail", 4: "fail", 5: "fail"}),
                   "--store", db, cwd=tmp_path).returncode == 0
    listed = run_cli("runs", "--store", db, cwd=tmp_path).stdout
    assert "33.3%" in listed and "66.7%" not in listed and "FAILED" in listed, listed
    shown = run_cli("show", "latest", "--store", db, cwd=tmp_path).stdout
    assert "pass rate 33.3%" in shown and "4 passed · 8 failed" in shown, shown
    # the figures people's verdicts give are stored as the review lands: no reader counts them again
    [(kept,)] = store_at.query("r.db", "SELECT reviewed FROM experiments WHERE run_id = ?", (run_id,))
    reviews, _, counts, figures = kept.split("\t", 3)
    assert (reviews, counts, json.loads(figures)["passed"]) == ("4", "4,8,0,0", 4)
    with serving(db, tmp_path) as base:
        summary = requests.get(f"{base}/api/runs/{run_id}", timeout=30).json()
        assert summary["experiments"][0]["summary"]["passed"] == 4
        assert summary["progress"]["counts"] == {"passed": 4, "failed": 8, "error": 0, "skipped": 0}
        assert summary["passed"] is False
        [listed_run] = requests.get(f"{base}/api/runs", timeout=30).json()["runs"]
        assert listed_run["verdict"] == "failed" and listed_run["progress"]["counts"]["passed"] == 4
        rows = requests.get(f"{base}/api/runs/{run_id}/rows", params={"experiment": "answers"}, timeout=30).json()
        assert [row[1] for row in rows["rows"]].count("passed") == 4


# Acceptance: a reviewed run (people's verdicts on 11 of 12 items, one of them overruling the judge),
# an errored item, two variants, a warn criterion and a judge_agreement gate
ACCEPTANCE = """
store: {store}
reports: {{formats: [json]}}
experiments:
  - id: answers
    dataset: {{file: items.jsonl}}
    runner: {{uses: "fixture_plugins.behaviours:per_item"}}
    variants:
      - {{id: base, baseline: true}}
      - {{id: other, vars: {{unused: 1}}}}
    scorers:
      - {{id: judge, uses: "fixture_plugins.verdicts:given"}}
    pass_criteria:
      - {{type: error_rate, max: 0.1}}
      - {{type: pass_rate, min: 0.9, severity: warn}}
      - {{type: judge_agreement, scorer: judge, min: 0.5}}
"""


def _acceptance_items(tmp_path) -> None:
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for n in range(12):
            said = "raise" if n == 11 else "slow" if n >= 5 else f"q{n}"  # slow: 0.3 s, time to interrupt a run
            out.write(json.dumps({"id": f"i{n:02d}", "input": said,
                                  "human_verdict": "fail" if n in (0, 1, 4, 8) else "pass",
                                  "metadata": {"judge": n % 4 != 0}}) + "\n")


def _counted(document: dict) -> tuple:
    """What must agree: each experiment's (or variant's) counts, pass rate and verdict, the run's verdict and status."""
    found = []
    for entry in document["experiments"]:
        for shown in entry.get("variants") or [entry]:
            s = shown["summary"]
            found.append((shown.get("experiment_id", shown["id"]), s["passed"], s["failed"], s["errored"],
                          round(s["pass_rate"], 6), shown["passed"], [c["passed"] for c in s["criteria"]]))
    return tuple(sorted(found)), document["passed"], document["status"]


def _results(tmp_path, folder: str = "reports") -> tuple:
    return _counted(json.loads((tmp_path / folder / "results.json").read_text()))


def test_one_reviewed_run_has_one_verdict_every_way(write_config, tmp_path):
    _acceptance_items(tmp_path)
    write_config(ACCEPTANCE.format(store="r.db"))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = _results(tmp_path)
    # per variant: 7 passed, 4 failed (people's verdicts), 1 errored; the warn criterion fails, the others hold
    assert [row[1:] for row in expected[0]] == [(7, 4, 1, round(7 / 12, 6), True, [True, False, True])] * 2, expected
    assert expected[1:] == (True, "completed")
    run_id = _latest(tmp_path, "r.db")

    gated = run_cli("report", run_id, "--gate", "--format", "json", "--report-dir", "gated", cwd=tmp_path)
    assert gated.returncode == 0 and _results(tmp_path, "gated") == expected, gated.stdout + gated.stderr
    listed = run_cli("runs", cwd=tmp_path).stdout
    assert "58.3%" in listed and "PASSED" in listed, listed
    shown = run_cli("show", run_id, cwd=tmp_path).stdout
    assert shown.count("pass rate 58.3%") == 2, shown
    with serving("r.db", tmp_path) as base:
        served = requests.get(f"{base}/api/runs/{run_id}", timeout=30).json()
        assert _counted(served) == expected
        assert served["progress"]["counts"] == {"passed": 14, "failed": 8, "error": 2, "skipped": 0}

    # interrupted (one item at a time, so that it is still running), then resumed
    interrupted = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--concurrency", "1", "--store",
                                    "interrupted.db", "--report-dir", "interrupted"], cwd=tmp_path, env=cli_env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_items(tmp_path / "interrupted.db", 3)
    interrupted.send_signal(signal.SIGINT)
    out, err = interrupted.communicate(timeout=60)
    assert interrupted.returncode == 130, out + err
    resumed = run_cli("run", "--resume", "latest", "--store", "interrupted.db", "--report-dir", "resumed", cwd=tmp_path)
    assert resumed.returncode == 0 and _results(tmp_path, "resumed") == expected, resumed.stdout + resumed.stderr

    retried = run_cli("run", "--retry-errors", run_id, "--report-dir", "retried", cwd=tmp_path)
    assert retried.returncode == 0 and _results(tmp_path, "retried") == expected, retried.stdout + retried.stderr
    rescored = run_cli("rescore", run_id, "--format", "json", "--report-dir", "rescored", cwd=tmp_path)
    assert rescored.returncode == 0 and _results(tmp_path, "rescored") == expected, rescored.stdout + rescored.stderr

    for number in (1, 2):
        shard = run_cli("run", "--shard", f"{number}/2", "--store", f"shard{number}.db", "-q", "--report-dir",
                        f"shard{number}", cwd=tmp_path)
        assert shard.returncode in (0, 1), shard.stdout + shard.stderr
    merged = run_cli("merge", "merged.db", "shard1.db", "shard2.db", cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    again = run_cli("report", "latest", "--gate", "--store", "merged.db", "--format", "json", "--report-dir", "merged",
                    cwd=tmp_path)
    assert again.returncode == 0 and _results(tmp_path, "merged") == expected, again.stdout + again.stderr

    itself = run_cli("compare", "latest", "latest", cwd=tmp_path)
    assert itself.returncode == 2 and "a run compared with itself" in itself.stderr, itself.stdout + itself.stderr
