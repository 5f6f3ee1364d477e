"""An outage is not a verdict on the items: a judge whose server stops halfway leaves its run
"could not evaluate" (exit 3, aborted) with the command that finishes it, and ``--resume`` with
the judge back runs again the items the outage left in error, not only those never started.
On SQLite and on PostgreSQL, through the command line, against a judge served on 127.0.0.1."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from servers.outage import StoppingJudge

ITEMS = 12
ANSWERED = 5  # the judge stops listening as it sends its fifth answer


def _config(store_at, judge: StoppingJudge) -> str:
    items = ", ".join(f"{{id: q{n:02d}, input: q{n:02d}}}" for n in range(ITEMS))
    return store_at.config(f"""
        store: r.db
        models:
          grader: {{base_url: "{judge.base_url}", model: tiny-judge, api_key: none, retries: 0}}
        reports: {{dir: out}}
        experiments:
          - id: chat
            concurrency: 1
            dataset: {{items: [{items}]}}
            runner: echo
            scorers: [{{uses: judge, with: {{model: grader, rubric: "says something"}}}}]
    """)


def _stored(store_at) -> tuple[str, dict[str, int]]:
    [(status,)] = store_at.query("r.db", "SELECT status FROM runs")
    counts = dict(store_at.query("r.db", "SELECT status, COUNT(*) FROM items GROUP BY status"))
    return status, counts


@pytest.fixture
def judge():
    server = StoppingJudge(stop_after=ANSWERED).start()
    try:
        yield server
    finally:
        server.stop()


def _stopped_halfway(tmp_path, write_config, store_at, judge):
    write_config(_config(store_at, judge))
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "ABORTED (could not evaluate)" in done.stdout
    run_id = json.loads((tmp_path / "out" / "results.json").read_text())["run_id"]
    assert f"finish the run with `yamleval run --resume {run_id}`" in done.stderr
    status, counts = _stored(store_at)
    assert status == "aborted"
    assert counts.get("passed") == ANSWERED and counts.get("error", 0) >= 1, counts
    return run_id, counts


def test_a_judge_that_stops_halfway_makes_the_run_could_not_evaluate_and_resume_finishes_it(
        write_config, tmp_path, store_at, judge):
    run_id, counts = _stopped_halfway(tmp_path, write_config, store_at, judge)
    assert counts["error"] == 3, "three refusals in a row stop it: the rest are never started"
    port = judge.port
    judge.stop()
    back = StoppingJudge().start(port)
    try:
        resumed = run_cli("run", "--resume", run_id, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert back.answers == ITEMS - ANSWERED, "the outage's errors and the items never started, once each"
    finally:
        back.stop()
    assert _stored(store_at) == ("completed", {"passed": ITEMS})
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["status"] == "completed" and report["experiments"][0]["summary"]["passed"] == ITEMS


def test_a_resume_while_the_judge_is_still_down_stays_could_not_evaluate(write_config, tmp_path, store_at, judge):
    run_id, _ = _stopped_halfway(tmp_path, write_config, store_at, judge)
    again = run_cli("run", "--resume", run_id, cwd=tmp_path)
    assert again.returncode == 3, again.stdout + again.stderr
    status, counts = _stored(store_at)
    assert status == "aborted", "nothing was evaluated: the run is not completed"
    assert counts["passed"] == ANSWERED and counts["error"] >= 1
    assert f"finish the run with `yamleval run --resume {run_id}`" in again.stderr


def test_a_limited_run_against_a_judge_that_is_down_is_finished_only_by_a_resume_that_judges_it(
        write_config, tmp_path, store_at):
    judge = StoppingJudge().start()
    port = judge.port
    write_config(_config(store_at, judge))
    judge.stop()  # nothing listens there now
    first = run_cli("run", "--limit", "4", cwd=tmp_path)
    assert first.returncode == 3, first.stdout + first.stderr
    assert "the first 3 requests all failed (connection refused)" in first.stderr
    assert _stored(store_at) == ("aborted", {"error": 3}), "three refusals stop it before the fourth item"
    still_down = run_cli("run", "--resume", "--limit", "4", cwd=tmp_path)
    assert still_down.returncode == 3, "the items were tried again, and none could be evaluated"
    assert _stored(store_at) == ("aborted", {"error": 3}), "not completed: nothing was evaluated"
    back = StoppingJudge().start(port)
    try:
        done = run_cli("run", "--resume", "--limit", "4", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert back.answers == 4
    finally:
        back.stop()
    assert _stored(store_at) == ("completed", {"passed": 4})


def test_a_shard_whose_judge_stopped_halfway_resumes_its_outage_errors_too(write_config, tmp_path, store_at):
    judge = StoppingJudge(stop_after=2).start()
    try:
        write_config(_config(store_at, judge))
        first = run_cli("run", "--shard", "1/2", "--run-id", "split-1", cwd=tmp_path)
        assert first.returncode == 3, first.stdout + first.stderr
        port = judge.port
    finally:
        judge.stop()
    assert dict(store_at.query("r.db", "SELECT status, COUNT(*) FROM items GROUP BY status")) == {"passed": 2, "error": 3}
    back = StoppingJudge().start(port)
    try:
        resumed = run_cli("run", "--resume", "split-1", "--shard", "1/2", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    finally:
        back.stop()
    counts = dict(store_at.query("r.db", "SELECT status, COUNT(*) FROM items GROUP BY status"))
    assert "error" not in counts and counts["passed"] == 2 + back.answers, counts
    assert store_at.query("r.db", "SELECT status FROM run_shards WHERE shard = 1") == [("completed",)]
