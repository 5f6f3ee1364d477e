"""``yamleval run --retry-errors RUN``: a new run that keeps RUN's items that ended without an
error and runs again those that errored or never ran, and records the run it came from."""
from __future__ import annotations

import json

from conftest import run_cli
from yamleval.store.writer import Store

RUNNER = "fixture_plugins.behaviours:down_for"


def config(extra: str = "", threshold: float = 0.5) -> str:
    """Five items the runner echoes, but for the ids listed in ``down.txt`` while that file exists."""
    return f"""
        store: r.db
        {extra}
        experiments:
          - id: e
            dataset:
              items:
                - {{id: a, input: abcd, expected: abcd}}
                - {{id: b, input: abcd, expected: abcd}}
                - {{id: c, input: abcd, expected: abce}}
                - {{id: d, input: x, expected: yyyy}}
                - {{id: e, input: abcd, expected: abcd}}
            runner: {{uses: "{RUNNER}", with: {{log: calls.log, down: down.txt}}}}
            scorers: [{{uses: levenshtein, threshold: {threshold}}}]
            pass_criteria: [{{type: pass_rate, min: 0.6}}]
    """


def calls(tmp_path) -> list[str]:
    return (tmp_path / "calls.log").read_text().split()


def stored(tmp_path, run_ref: str):
    store = Store(str(tmp_path / "r.db"))
    try:
        run = store.find_run(run_ref)
        [result] = store.results(run.run_id)
        return run, {r.item.id: r for r in result.items}
    finally:
        store.close()


def first_run(write_config, tmp_path, *args: str) -> str:
    """A run in which items a and c find the endpoint down; its id."""
    write_config(config())
    (tmp_path / "down.txt").write_text("a\nc\n")
    done = run_cli("run", "-q", *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 2 errors of 5: pass rate below 0.6
    (tmp_path / "down.txt").unlink()  # the endpoint is back
    [run_id] = [run.run_id for run in Store(str(tmp_path / "r.db")).runs()]
    return run_id


def test_only_the_errored_and_never_run_items_run_again_the_rest_is_kept(write_config, tmp_path):
    origin = first_run(write_config, tmp_path, "--limit", "4")  # e never ran
    _, before = stored(tmp_path, origin)
    assert sorted(i for i, r in before.items() if r.status == "error") == ["a", "c"] and "e" not in before
    ran = calls(tmp_path)

    done = run_cli("run", "--retry-errors", origin, "--report-dir", "again", cwd=tmp_path)

    assert done.returncode == 0, done.stderr  # a, b, c, e pass; d fails: 4 of 5
    assert sorted(calls(tmp_path)[len(ran):]) == ["a", "c", "e"], "only the errored and never-run items were called"
    run, after = stored(tmp_path, "latest")
    assert run.run_id != origin and run.retried_from == origin and run.status == "completed" and run.passed
    assert {i: r.status for i, r in after.items()} == {"a": "passed", "b": "passed", "c": "passed", "d": "failed",
                                                       "e": "passed"}
    for kept in ("b", "d"):  # stored as they were: the same answer, timing and scores
        assert after[kept].output == before[kept].output and after[kept].latency_ms == before[kept].latency_ms
        assert after[kept].scores == before[kept].scores
    assert f"the errored items of run {origin} run again, the others kept" in done.stderr + done.stdout
    report = json.loads((tmp_path / "again" / "results.json").read_text())
    assert report["retried_from"] == origin and report["run_id"] == run.run_id
    assert f"errors of run {origin} retried" in (tmp_path / "again" / "summary.md").read_text()
    _, untouched = stored(tmp_path, origin)  # the source run is left as it was
    assert sorted(i for i, r in untouched.items() if r.status == "error") == ["a", "c"]


def test_a_tag_names_the_run_whose_errors_are_retried(write_config, tmp_path):
    origin = first_run(write_config, tmp_path, "--tag", "nightly")
    done = run_cli("run", "-q", "--retry-errors", "nightly", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run, after = stored(tmp_path, "latest")
    assert run.retried_from == origin and not [r for r in after.values() if r.status == "error"]


def test_a_changed_config_is_refused_unless_forced_then_kept_items_are_scored_again(write_config, tmp_path):
    origin = first_run(write_config, tmp_path)
    write_config(config(threshold=0.9))  # c (levenshtein 0.75) no longer passes
    refused = run_cli("run", "--retry-errors", origin, cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (f"cannot retry the errors of run {origin}: the config files changed since it started (use --force to"
            " retry anyway") in refused.stderr
    ran = calls(tmp_path)
    forced = run_cli("run", "-q", "--retry-errors", origin, "--force", cwd=tmp_path)
    assert sorted(calls(tmp_path)[len(ran):]) == ["a", "c"]
    run, after = stored(tmp_path, "latest")
    assert run.retried_from == origin and after["b"].scores["levenshtein"].passed
    assert {i: r.status for i, r in after.items()} == {"a": "passed", "b": "passed", "c": "failed", "d": "failed",
                                                       "e": "passed"}
    assert forced.returncode == 0, forced.stderr  # 3 of 5 pass: 0.6


def test_retry_errors_starts_a_new_run_so_it_takes_no_resume_or_shard(write_config, tmp_path):
    origin = first_run(write_config, tmp_path)
    for extra in (["--resume", origin], ["--shard", "1/2"]):
        done = run_cli("run", "--retry-errors", origin, *extra, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"--retry-errors starts a new run: it takes no {extra[0]}" in done.stderr
    unknown = run_cli("run", "--retry-errors", "nosuch", cwd=tmp_path)
    assert unknown.returncode == 2 and "no run or tag 'nosuch'" in unknown.stderr


def test_resume_of_a_completed_run_points_at_retry_errors(write_config, tmp_path):
    first_run(write_config, tmp_path)
    done = run_cli("run", "--resume", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("no unfinished run of these experiments to resume (see `yamleval runs`); to"
                                        " run again the items of a finished run that ended in error, use"
                                        " --retry-errors RUN")
