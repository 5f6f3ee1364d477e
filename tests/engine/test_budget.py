"""Budgets: a run stops where its tokens, cost or time reach a budget, is stored and reported as
stopped by it (exit 4), and ``--resume`` with a larger budget finishes it."""
from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import assert_golden, run_cli
from yamleval.config.loader import load_project

GOLDEN = Path(__file__).parent.parent / "data" / "budget"


def _config(tmp_path, budget: str, *, items: int = 10, with_: str = "", project: str = "", more: str = "") -> str:
    listed = ", ".join(f"{{id: i{n}, input: x{n}}}" for n in range(items))
    return f"""\
        {project}
        experiments:
          - id: spend
            concurrency: 1
            budget: {budget}
            dataset: {{items: [{listed}]}}
            runner: {{uses: "fixture_plugins.behaviours:spending", with: {{log: "{tmp_path / 'calls.log'}"{with_}}}}}
        {more}
    """


def _calls(tmp_path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().split() if log.exists() else []


def _report(tmp_path) -> dict:
    return json.loads((tmp_path / "reports" / "results.json").read_text())


def _stored_statuses(tmp_path) -> tuple[str, dict[str, str]]:
    with sqlite3.connect(tmp_path / ".yamleval" / "results.db") as db:
        [(run,)] = db.execute("SELECT status FROM runs").fetchall()
        return run, dict(db.execute("SELECT experiment_id, status FROM experiments"))


def _check_golden(case: str, stderr: str, run_id: str) -> None:
    shown = "\n".join(line for line in stderr.splitlines() if "budget" in line).replace(run_id, "RUN") + "\n"
    assert_golden(GOLDEN / f"{case}.expected.txt", shown)


def test_a_token_budget_stops_the_run_and_resume_with_a_larger_one_finishes_it(write_config, tmp_path):
    config = write_config(_config(tmp_path, "{max_tokens: 22}"))
    done = run_cli("run", "--report-dir", "reports", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    report = _report(tmp_path)
    run_id = report["run_id"]
    _check_golden("tokens", done.stderr, run_id)
    assert "STOPPED (budget reached)" in done.stdout
    # each item uses 5 tokens: the fifth reaches 22; what finished is stored, nothing more ran
    [experiment] = report["experiments"]
    stored = [item["id"] for item in experiment["items"]]
    assert stored == _calls(tmp_path) and 5 <= len(stored) < 10
    assert experiment["summary"]["tokens"]["total"] == 5 * len(stored)
    assert experiment["aborted"] == "stopped by its budget: max_tokens 22 reached at 25 tokens"
    assert experiment["stopped_by_budget"] and not experiment["passed"]
    assert report["status"] == "stopped" and report["stopped_by_budget"] and report["passed"] is False
    assert _stored_statuses(tmp_path) == ("stopped", {"spend": "stopped"})
    listed = run_cli("runs", cwd=tmp_path)
    assert re.search(rf"{run_id} .* stopped", listed.stdout), listed.stdout

    config.write_text(config.read_text().replace("max_tokens: 22", "max_tokens: 1000"))
    resumed = run_cli("run", "--report-dir", "reports", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming run {run_id}" in resumed.stderr
    calls = _calls(tmp_path)
    assert sorted(calls) == sorted(f"i{n}" for n in range(10)), "every item ran exactly once"
    report = _report(tmp_path)
    assert report["run_id"] == run_id and report["status"] == "completed" and report["passed"]
    [experiment] = report["experiments"]
    assert [item["id"] for item in experiment["items"]] == [f"i{n}" for n in range(10)]
    assert experiment["summary"]["tokens"]["total"] == 50
    assert not experiment["stopped_by_budget"] and experiment["aborted"] is None
    assert _stored_statuses(tmp_path) == ("completed", {"spend": "completed"})


def test_resuming_with_the_budget_still_reached_stops_at_once_with_the_same_reason(write_config, tmp_path):
    write_config(_config(tmp_path, "{max_tokens: 22}"))
    first = run_cli("run", "--report-dir", "reports", cwd=tmp_path)
    assert first.returncode == 4, first.stderr
    ran = _calls(tmp_path)
    again = run_cli("run", "--report-dir", "reports", "--resume", cwd=tmp_path)
    assert again.returncode == 4, again.stdout + again.stderr
    assert _calls(tmp_path) == ran, "no item started"
    assert "stopped by its budget: max_tokens 22 reached at 25 tokens" in again.stderr
    assert _stored_statuses(tmp_path) == ("stopped", {"spend": "stopped"})


def test_the_resume_command_it_prints_names_the_files_values_store_and_folder_of_the_run(write_config, tmp_path):
    config = write_config(_config(tmp_path, "{max_tokens: 22}"))
    first = run_cli("run", str(config), "--set", "spend:timeout=30", "--limit", "9", "--store", "my results.db",
                    "--report-dir", "out", cwd=tmp_path)
    assert first.returncode == 4, first.stderr
    run_id = json.loads((tmp_path / "out" / "results.json").read_text())["run_id"]
    [command] = re.findall(r"resume it with `([^`]+)`", first.stderr)
    assert shlex.split(command) == ["yamleval", "run", str(config), "--resume", run_id, "--set", "spend:timeout=30",
                                    "--limit", "9", "--store", "my results.db", "--report-dir", "out"]
    config.write_text(config.read_text().replace("max_tokens: 22", "max_tokens: 1000"))
    followed = run_cli(*shlex.split(command)[1:], cwd=tmp_path)
    assert followed.returncode == 0 and f"resuming run {run_id}" in followed.stderr, followed.stderr
    assert sorted(_calls(tmp_path)) == sorted(f"i{n}" for n in range(9)), "the limit holds for the rest too"
    assert json.loads((tmp_path / "out" / "results.json").read_text())["status"] == "completed"


def test_resume_still_refuses_a_change_beside_the_budget(write_config, tmp_path):
    config = write_config(_config(tmp_path, "{max_tokens: 22}"))
    assert run_cli("run", "--report-dir", "reports", cwd=tmp_path).returncode == 4
    config.write_text(config.read_text().replace("max_tokens: 22", "max_tokens: 1000")
                      .replace("concurrency: 1", "concurrency: 2"))
    refused = run_cli("run", "--report-dir", "reports", "--resume", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "the config files changed" in refused.stderr


def test_a_cost_budget_counts_runners_and_judges(write_config, tmp_path):
    # each item: $0.5 of the runner and $0.25 of its judge; $2 is reached at the third item
    write_config(_config(tmp_path, "{max_cost_usd: 2}", with_=", cost: 0.5",
                         more="    scorers: [fixture_plugins.behaviours:judged]"))
    done = run_cli("run", "--report-dir", "reports", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "stopped by its budget: max_cost_usd $2 reached at $2.25" in done.stderr
    [experiment] = _report(tmp_path)["experiments"]
    assert 3 <= len(experiment["items"]) < 10 and len(_calls(tmp_path)) == len(experiment["items"])


def test_a_duration_budget_stops_the_run(write_config, tmp_path):
    write_config(_config(tmp_path, "{max_duration: 1s}", items=100, with_=", seconds: 0.05"))
    done = run_cli("run", "--report-dir", "reports", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert re.search(r"stopped by its budget: max_duration 1s reached at 1\.\d+s", done.stderr), done.stderr
    [experiment] = _report(tmp_path)["experiments"]
    assert 0 < len(experiment["items"]) < 100 and len(_calls(tmp_path)) == len(experiment["items"])


def test_a_project_budget_spans_the_run_s_experiments(write_config, tmp_path):
    runner = f'{{uses: "fixture_plugins.behaviours:spending", with: {{log: "{tmp_path / "calls.log"}"}}}}'
    # the first experiment's 4 items use 20 tokens; the run's 30 are reached in the second
    write_config(f"""\
        budget: {{max_tokens: 30}}
        defaults: {{concurrency: 1}}
        experiments:
          - id: spend
            dataset: {{items: [{{id: i0, input: a}}, {{id: i1, input: a}}, {{id: i2, input: a}}, {{id: i3, input: a}}]}}
            runner: {runner}
          - id: next
            dataset: {{items: [{{id: n0, input: a}}, {{id: n1, input: a}}, {{id: n2, input: a}}, {{id: n3, input: a}},
                               {{id: n4, input: a}}]}}
            runner: {runner}
          - id: after
            dataset: {{items: [{{input: a}}, {{input: b}}]}}
            runner: echo
    """)
    done = run_cli("run", "--report-dir", "reports", cwd=tmp_path)
    assert done.returncode == 4, done.stdout + done.stderr
    spend, following, after = _report(tmp_path)["experiments"]
    assert spend["passed"] and len(spend["items"]) == 4
    assert following["aborted"] == "stopped by the run's budget: max_tokens 30 reached at 30 tokens"
    assert len(following["items"]) == 2
    assert after["aborted"] == following["aborted"] and after["items"] == [], "it stopped before its first item"
    assert _stored_statuses(tmp_path) == ("stopped", {"spend": "completed", "next": "stopped", "after": "stopped"})

    config = tmp_path / "evals.yaml"
    config.write_text(config.read_text().replace("max_tokens: 30", "max_tokens: 100"))
    resumed = run_cli("run", "--report-dir", "reports", "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert sorted(_calls(tmp_path)) == sorted([f"i{n}" for n in range(4)] + [f"n{n}" for n in range(5)])
    assert [len(e["items"]) for e in _report(tmp_path)["experiments"]] == [4, 5, 2]


def test_the_reports_name_the_budget_that_stopped_the_run(write_config, tmp_path):
    write_config(_config(tmp_path, "{max_tokens: 22}"))
    assert run_cli("run", "--report-dir", "reports", cwd=tmp_path).returncode == 4
    reason = "stopped by its budget: max_tokens 22 reached at 25 tokens"
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert "## ⏹️ yamleval: stopped by a budget" in summary
    assert "### ⏹️ spend: stopped (budget reached)" in summary
    assert reason.replace("_", "\\_") in summary
    junit = (tmp_path / "reports" / "junit.xml").read_text()
    assert f'<error type="stopped" message="{reason}">' in junit
    html = (tmp_path / "reports" / "report.html").read_text()
    assert f"<strong>Incomplete:</strong> {reason}; resume the run with a larger budget" in html
    assert 'class="badge badge-stopped"' in html


def test_an_experiment_inherits_each_limit_of_its_defaults_budget(write_config):
    path = write_config("""\
        defaults: {budget: {max_tokens: 100, max_duration: 2h}}
        budget: {max_cost_usd: 3.5}
        experiments:
          - id: own
            budget: {max_tokens: 10, max_duration: 90}
            dataset: {items: [{input: a}]}
            runner: echo
          - id: inherited
            dataset: {items: [{input: a}]}
            runner: echo
    """)
    project = load_project([str(path)])
    own, inherited = project.experiments
    assert (own.budget.max_tokens, own.budget.max_duration, own.budget.max_cost_usd) == (10, 90.0, None)
    assert (inherited.budget.max_tokens, inherited.budget.max_duration) == (100, 7200.0)
    assert project.budget.max_cost_usd == 3.5 and project.budget.max_tokens is None


@pytest.mark.parametrize("written, seconds", [("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400),
                                              ("1.5m", 90), (45, 45)])
def test_durations_read_as_written(written, seconds):
    from yamleval.config.budget import seconds as read

    assert read(written) == seconds


SHARDS, CALL_TOKENS, BUDGET_CALLS = 4, 100, 10


@pytest.mark.parametrize("concurrency", [1, 2])
def test_shards_started_together_in_one_store_share_the_run_budget(write_config, tmp_path, store_at, concurrency):
    """Each shard stores each item it finishes and counts what the others have stored: past the
    budget, a shard can have an item in each running slot and one finished but not yet counted
    (recorded by another thread while its worker took the next item), so the calls stay within
    the budget plus shards x (concurrency + 1), however the shards interleave; each shard alone
    would spend the whole budget (about 40 calls)."""
    from conftest import cli_env
    from servers.outage import CountingService

    items = ", ".join(f"{{id: q{n:02d}, input: q{n:02d}}}" for n in range(60))
    with CountingService(tokens=CALL_TOKENS, seconds=0.1) as service:  # the shards' runs overlap
        write_config(store_at.config(f"""
            store: r.db
            budget: {{max_tokens: {BUDGET_CALLS * CALL_TOKENS}}}
            reports: {{formats: [json]}}
            experiments:
              - id: spend
                concurrency: {concurrency}
                dataset: {{items: [{items}]}}
                runner: {{uses: http, with: {{url: "{service.url}/answer", body: {{q: "{{{{ input }}}}"}},
                          output: output, usage: usage, retries: 0}}}}
        """))
        shards = [subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--shard", f"{n}/{SHARDS}",
                                    "--run-id", "shared-1", "--report-dir", f"reports{n}"], cwd=tmp_path,
                                   env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for n in range(1, SHARDS + 1)]
        ended = [(shard.wait(120), shard.communicate()) for shard in shards]
    assert all(code in (0, 4) for code, _ in ended), ended
    assert any(code == 4 for code, _ in ended), "the run's budget stopped a shard"
    assert BUDGET_CALLS <= service.calls <= BUDGET_CALLS + SHARDS * (concurrency + 1), service.calls
    [(stored,)] = store_at.query("r.db", "SELECT COUNT(*) FROM items")
    assert stored == service.calls, "every call made is a stored item"
    shard_statuses = dict(store_at.query("r.db", "SELECT shard, status FROM run_shards"))
    assert {n: "stopped" for n, (code, _) in enumerate(ended, 1) if code == 4}.items() <= shard_statuses.items()
