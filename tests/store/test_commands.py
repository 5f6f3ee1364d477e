"""Every command that reads a stored run, run against each backend (``store_at``): on SQLite
files and on a real PostgreSQL server, a stored run is rescored, tagged, merged, reported,
compared, followed in its history and exported alike."""
from __future__ import annotations

import csv
import io
import json

from conftest import run_cli

RUNNER = "fixture_plugins.behaviours:noted"


def _config(threshold: float) -> str:
    """Three items: a levenshtein threshold of 0.5 passes two, 0.9 one."""
    return f"""
        store: r.db
        reports: {{dir: out, formats: [json]}}
        experiments:
          - id: e
            dataset:
              items:
                - {{id: same, input: abcd, expected: abcd}}
                - {{id: close, input: abcd, expected: abce}}
                - {{id: far, input: x, expected: yyyy}}
            runner: {{uses: "{RUNNER}", with: {{log: calls.log}}}}
            scorers: [{{uses: levenshtein, threshold: {threshold}}}]
            pass_criteria: [{{type: pass_rate, min: 0.5}}]
    """


def _ok(done, code: int = 0):
    assert done.returncode == code and "Traceback" not in done.stderr, (done.returncode, done.stdout, done.stderr)
    return done.stdout


def test_a_stored_run_is_rescored_tagged_reported_compared_followed_and_exported(write_config, tmp_path, store_at):
    write_config(store_at.config(_config(0.5)))
    _ok(run_cli("run", "-q", cwd=tmp_path))
    _ok(run_cli("tag", "latest", "main", cwd=tmp_path))
    calls = (tmp_path / "calls.log").read_text()
    write_config(store_at.config(_config(0.9)))
    rescored = _ok(run_cli("rescore", "latest", "--report-dir", "again", cwd=tmp_path), 1)  # 1 of 3 passes
    assert (tmp_path / "calls.log").read_text() == calls, "no runner was called"
    source, latest = (line.split()[0] for line in _ok(run_cli("runs", "--ids", cwd=tmp_path)).split()[::-1])
    assert f"run {latest}: run {source} scored again" in rescored

    listed = _ok(run_cli("runs", cwd=tmp_path)).splitlines()
    assert any(line.startswith(source) and line.rstrip().endswith("main") for line in listed), listed
    _ok(run_cli("report", source, "--format", "json", "--report-dir", "rendered", cwd=tmp_path))
    report = json.loads((tmp_path / "rendered" / "results.json").read_text())
    assert {item["id"]: item["status"] for item in report["experiments"][0]["items"]} == {
        "same": "passed", "close": "passed", "far": "failed"}
    compared = _ok(run_cli("compare", source, latest, cwd=tmp_path))
    assert "close: passed → failed (regressed)" in compared
    assert "e" in _ok(run_cli("history", cwd=tmp_path))
    exported = _ok(run_cli("export", latest, cwd=tmp_path))
    assert {row["id"]: row["status"] for row in csv.DictReader(io.StringIO(exported))} == {
        "same": "passed", "close": "failed", "far": "failed"}


def test_shards_stored_apart_are_merged(write_config, tmp_path, store_at):
    write_config(store_at.config(_config(0.5)))
    shards = [store_at.url(f"shard{n}.db") for n in (1, 2)]
    for number, store in enumerate(shards, 1):
        _ok(run_cli("run", "-q", "--shard", f"{number}/2", "--run-id", "ci-3", "--store", store,
                    "--report-dir", f"job{number}", cwd=tmp_path))
    merged = store_at.url("merged.db")
    _ok(run_cli("merge", merged, *shards, cwd=tmp_path))
    _ok(run_cli("report", "ci-3", "--store", merged, "--format", "json", "--report-dir", "merged", "--gate",
                cwd=tmp_path))
    [experiment] = json.loads((tmp_path / "merged" / "results.json").read_text())["experiments"]
    assert sorted(item["id"] for item in experiment["items"]) == ["close", "far", "same"]
    again = run_cli("merge", merged, *shards, cwd=tmp_path)
    assert again.returncode == 2 and "it was merged before" in again.stderr


def test_a_store_that_is_not_there_is_one_line_and_exit_2(tmp_path, store_at, write_config):
    write_config(store_at.config(_config(0.5)))
    for command in (["rescore", "latest", "--store", "none.db"], ["merge", "out.db", "none.db"]):
        done = run_cli(*command, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith("error: no results database at none.db"), done.stderr
