"""The results database: what a run stores, resuming after a crash, re-rendering, listing. Every
test given ``store_at`` runs twice: on SQLite files and on a real PostgreSQL server (tests/servers/postgres.py)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

import pytest
import requests

from conftest import cli_env, run_cli
from yamleval.store.writer import SCHEMA_VERSION, Store

BIG = """
    store: results.db
    reports: {dir: out, formats: [json]}
    experiments:
      - id: big
        concurrency: 4
        dataset: {file: items.jsonl}
        runner: {uses: fixture_plugins.behaviours:counting, with: {log: LOG}}
        scorers: [exact_match, {uses: levenshtein, threshold: 0.5}]
        pass_criteria: [{type: pass_rate, min: 0.5}]
"""


def _dataset(tmp_path, n):
    with open(tmp_path / "items.jsonl", "w") as out:
        for i in range(n):
            out.write(json.dumps({"id": f"i-{i}", "input": f"answer {i}", "expected": f"answer {i}"}) + "\n")


def _stored_ids(store_at, name="results.db"):
    return [row[0] for row in store_at.query(name, "SELECT item_id FROM items")]


def _calls(log):
    calls = [line.split() for line in log.read_text().splitlines()]
    return [(int(pid), item) for pid, item in calls]


def test_sigkill_then_resume_finishes_without_rerunning_finished_items(write_config, tmp_path, store_at):
    _dataset(tmp_path, 2000)
    log = tmp_path / "calls.log"
    write_config(store_at.config(BIG.replace("LOG", str(log))))
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 1000):
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    before = set(_stored_ids(store_at))
    assert 0 < len(before) < 2000, "killed halfway"

    listed = run_cli("runs", "--store", store_at.url("results.db"), cwd=tmp_path)
    assert " crashed " in listed.stdout

    resumed = run_cli("run", "-q", "--resume", cwd=tmp_path, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    after = _stored_ids(store_at)
    assert len(after) == 2000 and len(set(after)) == 2000
    first_pid = child.pid
    rerun = {item for pid, item in _calls(log) if pid != first_pid}
    assert not rerun & before, "items stored before the crash must not run again"

    # the same data run without interruption gives the same summary
    log2 = tmp_path / "calls2.log"
    write_config(store_at.config(BIG.replace("LOG", str(log2)).replace("results.db", "fresh.db")
                                 .replace("dir: out", "dir: out2")))
    fresh = run_cli("run", "-q", cwd=tmp_path, timeout=120)
    assert fresh.returncode == 0, fresh.stderr
    one = json.loads((tmp_path / "out" / "results.json").read_text())["experiments"][0]
    two = json.loads((tmp_path / "out2" / "results.json").read_text())["experiments"][0]
    for key in ("total", "completed", "passed", "failed", "errored", "skipped", "mean_score", "pass_rate",
                "scorers", "criteria"):
        assert one["summary"][key] == two["summary"][key], key
    assert [i["id"] for i in one["items"]] == [i["id"] for i in two["items"]]


def test_resume_refuses_a_run_whose_process_still_runs(write_config, tmp_path, store_at):
    _dataset(tmp_path, 60)
    log = tmp_path / "calls.log"
    write_config(store_at.config(BIG.replace("LOG", str(log)).replace("concurrency: 4", "concurrency: 1")
                                 .replace("log: %s}" % log, "log: %s, seconds: 0.05}" % log)))
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 5):
            time.sleep(0.05)
        refused = run_cli("run", "--resume", cwd=tmp_path)
        assert refused.returncode == 2, refused.stderr
        assert "is still running (on this machine)" in refused.stderr and "--force" in refused.stderr
        assert child.poll() is None, "the first run goes on"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    resumed = run_cli("run", "-q", "--resume", cwd=tmp_path, timeout=120)  # its process has ended: crashed
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(_stored_ids(store_at)) == sorted(f"i-{i}" for i in range(60))


def test_resume_refuses_a_changed_config_unless_forced(write_config, tmp_path, store_at):
    _dataset(tmp_path, 50)
    log = tmp_path / "calls.log"
    config = store_at.config(BIG.replace("LOG", f"{log}, seconds: 0.05"))
    write_config(config)
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < 4):
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=30) == 130
    write_config(config.replace("min: 0.5", "min: 0.6"))
    refused = run_cli("run", "--resume", cwd=tmp_path)
    assert refused.returncode == 2
    assert "the config files changed" in refused.stderr and "--force" in refused.stderr
    forced = run_cli("run", "-q", "--resume", "--force", cwd=tmp_path)
    assert forced.returncode in (0, 1), forced.stderr
    assert len(_stored_ids(store_at)) == 50


def test_run_records_provenance_and_no_secret(write_config, tmp_path, store_at):
    secret = "sk-live-0123456789"
    write_config(store_at.config("""
        store: r.db
        reports: {dir: out, formats: [json]}
        experiments:
          - id: e
            metadata: {token: "${TOKEN}"}
            dataset: {items: [{input: a, expected: a}, {input: "${TOKEN}", expected: x}]}
            runner: echo
            scorers: [exact_match]
    """))
    done = run_cli("run", cwd=tmp_path, TOKEN=secret)
    assert done.returncode == 1
    store = Store(store_at.absolute("r.db"))
    [info] = store.runs()
    assert info.status == "completed" and info.passed is False
    assert info.config_files == ("evals.yaml",) and len(info.config_hash) == 64
    assert info.host and info.python_version.startswith("CPython")
    assert "${TOKEN}" in info.config_text["evals.yaml"]
    assert store.run_detail(info.run_id, "plugin_versions") == {"echo": "yamleval 0.1.0",
                                                                "exact_match": "yamleval 0.1.0"}
    [result] = store.results(info.run_id)
    assert [r.status for r in result.items] == ["passed", "failed"]
    store.close()
    everything = "".join(str(row) for table in ("runs", "experiments", "items")
                         for row in store_at.query("r.db", f"SELECT * FROM {table}"))
    assert secret not in everything and "${TOKEN}" in everything
    if store_at.postgres:
        assert store_at.query("r.db", "SELECT version FROM yamleval_schema") == [(SCHEMA_VERSION,)]
        return
    assert store_at.query("r.db", "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert store_at.query("r.db", "PRAGMA journal_mode") == [("wal",)]


def test_run_records_the_git_commit_and_whether_the_work_tree_has_changes(write_config, tmp_path):
    write_config("""
        store: r.db
        reports: {dir: out, formats: [json]}
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}]}
            runner: echo
            scorers: [exact_match]
    """)
    (tmp_path / ".gitignore").write_text("r.db*\nout/\n", encoding="utf-8")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    assert run_cli("run", cwd=tmp_path).returncode == 0  # not a git work tree yet
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "config")
    assert run_cli("run", cwd=tmp_path).returncode == 0
    (tmp_path / "evals.yaml").write_text((tmp_path / "evals.yaml").read_text(encoding="utf-8") + "# changed\n",
                                         encoding="utf-8")
    assert run_cli("run", cwd=tmp_path).returncode == 0
    store = Store(str(tmp_path / "r.db"))
    runs = sorted(store.runs(), key=lambda r: r.started_at)
    store.close()
    assert [(r.git_commit, r.git_dirty) for r in runs] == [(None, None), (git("rev-parse", "HEAD"), False),
                                                          (git("rev-parse", "HEAD"), True)]


def test_report_rerenders_byte_identically(write_config, tmp_path, store_at):
    write_config(store_at.config("""
        store: r.db
        reports: {dir: out}
        experiments:
          - id: e
            dataset:
              items:
                - {input: a, expected: a, metadata: {when: 2024-05-01, 7: seven}}
                - {input: b, expected: c, label: tricky}
            runner: fixture_plugins.behaviours:with_usage
            scorers: [exact_match, {uses: levenshtein, threshold: 0.5}]
            pass_criteria: [{type: mean_score, min: 0.1, severity: warn}]
    """))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0  # the only criterion is a warning
    again = run_cli("report", "latest", "--store", store_at.url("r.db"), "--format", "json,junit,markdown,html",
                    "--report-dir", "again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for name in ("results.json", "junit.xml", "summary.md", "report.html"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes(), name

    # as a yamleval from before histograms, throttling and intervals stored it
    [(text,)] = store_at.query("r.db", "SELECT summary FROM experiments")
    summary = json.loads(text)
    assert all(scorer[11] and scorer[12] and scorer[13] for scorer in summary["scorers"])
    summary["scorers"] = [scorer[:11] for scorer in summary["scorers"]]
    assert summary.pop("throttling") == [0, 0, 0.0]
    assert [summary.pop(key) for key in ("confidence", "pass_rate_ci", "mean_score_ci")][0] == 0.95
    store_at.query("r.db", "UPDATE experiments SET summary = ?", (json.dumps(summary),))
    older = run_cli("report", "latest", "--store", store_at.url("r.db"), "--format", "json,html", "--report-dir", "older",
                    cwd=tmp_path)
    assert older.returncode == 0, older.stderr
    for name in ("results.json", "report.html"):  # the histograms and intervals are counted from the items
        assert (tmp_path / "older" / name).read_bytes() == (tmp_path / "out" / name).read_bytes(), name


def test_compare_lists_flips_and_the_strict_gate_fails_on_one(write_config, tmp_path, store_at):
    config = store_at.config("""
        store: r.db
        reports: {dir: out, formats: [json]}
        experiments:
          - id: e
            dataset: {items: [{id: a, input: x, expected: x}, {id: b, input: y, expected: EXPECTED_B}]}
            runner: echo
            scorers: [exact_match]
    """)
    write_config(config.replace("EXPECTED_B", "y"))
    run_cli("run", "-q", cwd=tmp_path)
    write_config(config.replace("EXPECTED_B", "z"))
    run_cli("run", "-q", cwd=tmp_path)
    store = Store(store_at.absolute("r.db"))
    runs = store.runs()
    store.close()
    base, candidate = runs[1].run_id, runs[0].run_id
    db = store_at.url("r.db")
    # a unique prefix of the base's id (two runs in one second share the time; their random parts may share digits)
    prefix = next(base[:n] for n in range(20, len(base) + 1) if not candidate.startswith(base[:n]))
    done = run_cli("compare", prefix, candidate, "--store", db, cwd=tmp_path)
    assert done.returncode == 0
    assert "b: passed → failed (regressed)" in done.stdout
    gate = run_cli("compare", base, "latest", "--store", db, "--fail-on-any-regression", "--format", "json",
                   cwd=tmp_path)
    assert gate.returncode == 1
    assert run_cli("compare", base, "latest", "--store", db, "--fail-on-regression", cwd=tmp_path).returncode == 0
    data = json.loads(gate.stdout)
    assert data["regressions"] == 1
    assert data["experiments"][0]["flips"] == [{"item": "b", "before": "passed", "after": "failed",
                                                "regression": True}]


@pytest.mark.parametrize("ending, status, code", [("interrupt", "interrupted", 130), ("crash", "crashed", 9)])
def test_a_candidate_that_did_not_complete_fails_the_regression_gate(write_config, tmp_path, ending, status, code,
                                                                      store_at):
    config = store_at.config("""
        store: r.db
        reports: {dir: out, formats: [json]}
        experiments:
          - id: e
            concurrency: 1
            dataset: {items: [{id: a, input: a}, {id: b, input: B}, {id: c, input: c}]}
            runner: fixture_plugins.behaviours:ends_the_run
    """)
    write_config(config.replace("B", "b"))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    write_config(config.replace("B", ending))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == code
    store = Store(store_at.absolute("r.db"))
    [candidate, base] = [run.run_id for run in store.runs()]
    store.close()
    db = store_at.url("r.db")
    gate = run_cli("compare", base, "latest", "--store", db, "--fail-on-regression", cwd=tmp_path)
    assert gate.returncode == 1
    assert gate.stdout.startswith(f"{base} (completed) → {candidate} ({status}): 0 regressions\n")
    assert gate.stderr == (f"regression gate failed: the candidate run {candidate} is {status}, not completed: "
                           "the items it did not reach are not compared\n")
    data = json.loads(run_cli("compare", base, "--store", db, "--format", "json", cwd=tmp_path).stdout)
    assert (data["base_status"], data["candidate_status"]) == ("completed", status)
    markdown = run_cli("compare", base, "--store", db, "--format", "markdown", cwd=tmp_path)
    assert markdown.returncode == 0 and markdown.stdout.startswith(f"## {base} (completed) → {candidate} ({status})")
    itself = run_cli("compare", base, base, "--store", db, "--fail-on-regression", cwd=tmp_path)
    assert itself.returncode == 2 and "a run compared with itself" in itself.stderr  # refused, not passed


def test_unknown_run_and_ambiguous_prefix(write_config, tmp_path, store_at):
    write_config(store_at.config("""
        store: r.db
        reports: {dir: out, formats: [json]}
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
    """))
    run_cli("run", "-q", cwd=tmp_path)
    missing = run_cli("show", "nope", "--store", store_at.url("r.db"), cwd=tmp_path)
    assert missing.returncode == 2 and "no run or tag 'nope'" in missing.stderr
    assert run_cli("show", "--store", store_at.url("r.db"), cwd=tmp_path).returncode == 0
    nothing = run_cli("runs", "--store", "elsewhere.db", cwd=tmp_path)
    assert nothing.returncode == 2 and "no results database" in nothing.stderr


def test_a_newer_database_is_refused(tmp_path, store_at):
    if store_at.postgres:
        store_at.query("new.db", "CREATE TABLE yamleval_schema (version INTEGER NOT NULL)")
        store_at.query("new.db", "INSERT INTO yamleval_schema VALUES (?)", (SCHEMA_VERSION + 1,))
    else:
        store_at.query("new.db", f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    from yamleval.records.errors import UsageError

    with pytest.raises(UsageError, match="newer yamleval"):
        Store(store_at.absolute("new.db"))


def test_a_repeated_item_id_past_those_a_dataset_remembers_is_caught_by_the_database(write_config, tmp_path,
                                                                                     monkeypatch, capsys, store_at):
    """Datasets remember only so many ids (bounded memory); the database's key finds the rest."""
    import yamleval.builtins.datasets
    from yamleval.cli import main

    monkeypatch.setattr(yamleval.builtins.datasets, "REMEMBERED_IDS", 2)
    rows = [{"id": f"i{n}", "input": "x", "expected": "x"} for n in range(5)] + [{"id": "i3", "input": "y"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    config = write_config(store_at.config("""
        store: r.db
        experiments:
          - id: e
            dataset: {file: data.jsonl}
            runner: echo
            scorers: [exact_match]
    """))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(["run", str(config), "--quiet", "--report-dir", "out"])
    assert stopped.value.code == 2
    assert ("duplicate item id 'i3' in experiment 'e': items 4 and 6 of the dataset; ids must be unique"
            in capsys.readouterr().err)
    assert store_at.query("r.db", "SELECT count(*) FROM items") == [(5,)]


# -- many processes on one store -------------------------------------------------------------

HEAVY = """
    store: results.db
    reports: {dir: out, formats: [json]}
    experiments:
      - id: heavy
        concurrency: 4
        dataset: {file: items.jsonl}
        runner: {uses: fixture_plugins.steady:answer, with: {pad: 3000}}
        scorers: [exact_match]
"""


def _start_runs(folder, count):
    return [subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--report-dir", f"out-{n}"],
                             cwd=folder, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in range(count)]


def _has_open(pid, path):
    """Whether process ``pid`` has the file ``path`` open (read from /proc, outside the process)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _wait_until_connected(children, db):
    """Until every child has opened ``db`` in write-ahead logging mode (its shared-memory file is
    open): from there, each is about to read the schema version and write."""
    deadline = time.monotonic() + 60
    while not all(_has_open(child.pid, f"{db}-shm") for child in children):
        assert all(child.poll() is None for child in children), [child.communicate() for child in children]
        assert time.monotonic() < deadline, "the runs never opened the store"
        time.sleep(0.005)


def _holding_the_write_lock(db):
    """A connection of another program that holds the database's write lock until it ends."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")
    return holder


def _completed_runs(db):
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = con.execute("SELECT run_id, status FROM runs").fetchall()
        counts = [con.execute("SELECT count(*), count(DISTINCT item_id) FROM items WHERE run_id = ?", (run_id,))
                  .fetchone() for run_id, _ in runs]
    return [status for _, status in runs], counts


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="watches the runs' open files in /proc")
def test_heavy_runs_started_at_once_on_a_store_that_does_not_exist_yet_all_finish(write_config, tmp_path):
    """Six runs open a new store while it is being created (here, while another program holds
    its write lock: every run has read that it has no tables yet), then write megabyte batches
    side by side. The schema is created once; no run fails on the lock or on the schema."""
    _dataset(tmp_path, 1500)
    write_config(HEAVY)
    db = tmp_path / "results.db"
    holder = _holding_the_write_lock(db)
    children = _start_runs(tmp_path, 6)
    try:
        _wait_until_connected(children, db)
    finally:
        holder.rollback()
        holder.close()
    for child in children:
        _, stderr = child.communicate(timeout=300)
        assert child.returncode == 1 and "error:" not in stderr, (child.returncode, stderr)  # failing items: exit 1
    assert _completed_runs(db) == (["completed"] * 6, [(1500, 1500)] * 6)


def test_runs_started_at_once_on_a_new_postgresql_database_create_its_schema_once(write_config, tmp_path,
                                                                                 postgres_server):
    """Six processes open one new database at once: one creates the tables, under PostgreSQL's
    lock for the schema; the others wait for it and then write their runs side by side."""
    _dataset(tmp_path, 300)
    url = postgres_server.new_database()
    write_config(HEAVY.replace("store: results.db", f"store: {url}"))
    children = _start_runs(tmp_path, 6)
    for child in children:
        _, stderr = child.communicate(timeout=300)
        assert child.returncode == 1 and "error:" not in stderr, (child.returncode, stderr)
    store = Store(url)
    runs = store.runs()
    assert [run.status for run in runs] == ["completed"] * 6
    assert [len(list(result.items)) for run in runs for result in store.results(run.run_id)] == [300] * 6
    store.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="watches the run's open files in /proc")
def test_a_run_waits_for_a_write_lock_another_process_holds_for_several_seconds(write_config, tmp_path):
    _dataset(tmp_path, 50)
    write_config(HEAVY)
    db = tmp_path / "results.db"
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    holder = _holding_the_write_lock(db)
    [child] = _start_runs(tmp_path, 1)
    try:
        _wait_until_connected([child], db)
        time.sleep(6)  # the lock is held longer than SQLite's usual wait of five seconds
        assert child.poll() is None, "the run waits for the lock"
    finally:
        holder.rollback()
        holder.close()
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 1 and "error:" not in stderr, stderr
    assert _completed_runs(db) == (["completed"] * 2, [(50, 50)] * 2)


# -- a run that crashed ----------------------------------------------------------------------

CRASHING = """
    store: results.db
    reports: {dir: out}
    experiments:
      - id: first
        dataset: {file: items.jsonl, limit: 20}
        runner: fixture_plugins.steady:answer
        scorers: [exact_match]
      - id: second
        concurrency: 2
        dataset: {file: items.jsonl}
        runner: {uses: fixture_plugins.steady:answer, with: {seconds: 0.01}}
        scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
        pass_criteria: [{type: pass_rate, min: 0.5}]
"""


def _crashed_in_second_experiment(tmp_path, store_at):
    """A run killed once some items of its second experiment are stored; how many are."""
    _dataset(tmp_path, 1000)
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stored() -> int:
        if not store_at.postgres and not (tmp_path / "results.db").exists():
            return 0
        try:
            return store_at.query("results.db", "SELECT count(*) FROM items WHERE experiment_id = 'second'")[0][0]
        except Exception:  # its tables not created yet
            return 0

    deadline = time.monotonic() + 60
    while not stored() and time.monotonic() < deadline:
        assert child.poll() is None, "the run ends only when killed"
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    count = stored()
    assert 0 < count < 1000
    return count


def test_the_reports_of_a_crashed_run_show_what_is_stored_marked_incomplete(write_config, tmp_path, store_at):
    write_config(store_at.config(CRASHING))
    n = _crashed_in_second_experiment(tmp_path, store_at)
    note = "the run stopped before this experiment finished; these figures count only the items stored"
    done = run_cli("report", "latest", "--store", store_at.url("results.db"), "--report-dir", "again", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    again = tmp_path / "again"

    report = json.loads((again / "results.json").read_text(encoding="utf-8"))
    assert report["status"] == "crashed"
    first, second = report["experiments"]
    assert (first["id"], first["incomplete"], second["id"], second["incomplete"]) == ("first", False, "second", True)
    assert second["passed"] is False and len(second["items"]) == n
    assert (second["summary"]["total"], second["summary"]["completed"]) == (n, n)
    assert set(second["summary"]["scorers"]) == {"exact_match", "levenshtein"}
    assert second["summary"]["scorers"]["levenshtein"]["threshold"] == 0.8
    [criterion] = second["summary"]["criteria"]
    assert criterion["type"] == "pass_rate" and criterion["actual"] == second["summary"]["pass_rate"]

    summary = (again / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("## ❌ yamleval: the run crashed — its results are incomplete\n")
    assert "### ❌ first: failed\n" in summary
    assert f"### ❌ second: incomplete\n\nIncomplete: {note}.\n\n| items |" in summary
    assert f"\n| {n} | {second['summary']['passed']} | " in summary

    suites = {suite.get("name"): suite for suite in ElementTree.parse(again / "junit.xml").getroot()}
    assert list(suites) == ["first", "second"]
    assert suites["second"].get("tests") == str(n + 2)  # the items, the criterion, and the run not completed
    [stopped] = [case for case in suites["second"] if case.get("name") == "run completed"]
    assert [(e.tag, e.get("type"), e.get("message")) for e in stopped] == [("error", "incomplete", f"incomplete: {note}")]

    page = (again / "report.html").read_text(encoding="utf-8")
    assert '<span class="badge badge-crashed">CRASHED — INCOMPLETE</span>' in page
    assert '<span class="badge badge-incomplete">INCOMPLETE</span>' in page
    assert f'<p class="notice notice-error"><strong>Incomplete:</strong> {note}.</p>' in page
    assert "This run has no experiments" not in page

    shown = run_cli("show", "--store", store_at.url("results.db"), cwd=tmp_path)
    assert shown.returncode == 0 and f"  INCOMPLETE: {note}\n" in shown.stdout


TAGGED = """
    store: r.db
    reports: {dir: out, formats: [json]}
    experiments:
      - id: e
        dataset: {items: [{id: a, input: x, expected: x}]}
        runner: echo
        scorers: [exact_match]
"""


def test_runs_are_tagged_when_run_and_afterwards_and_listed_with_their_tags(write_config, tmp_path, store_at):
    write_config(store_at.config(TAGGED))
    db = store_at.url("r.db")
    assert run_cli("run", "-q", "--tag", "main", "--tag", "v1.2", "--tag", "main", cwd=tmp_path).returncode == 0
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    tagged = run_cli("tag", "latest", "feature/x", "--store", db, cwd=tmp_path)
    assert tagged.returncode == 0 and "tagged feature/x" in tagged.stdout
    listing = run_cli("runs", "--store", db, cwd=tmp_path).stdout.splitlines()
    assert listing[0].split()[-1] == "tags"
    assert listing[1].endswith(" feature/x") and listing[2].endswith(" main,v1.2")
    bad = run_cli("tag", "latest", "no spaces", "--store", db, cwd=tmp_path)
    assert bad.returncode == 2 and "bad tag 'no spaces'" in bad.stderr and "Traceback" not in bad.stderr
    refused = run_cli("run", "-q", "--tag", "a b", cwd=tmp_path)
    assert refused.returncode == 2 and "bad tag" in refused.stderr


def test_the_api_tags_its_run(write_config, tmp_path, monkeypatch, store_at):
    from yamleval import api
    from yamleval.store import tags as run_tags

    monkeypatch.chdir(tmp_path)
    outcome = api.run(write_config(store_at.config(TAGGED)), formats=(), tags=["nightly"])
    store = Store(store_at.absolute("r.db"))
    assert run_tags.of_run(store, outcome.run.run_id) == ("nightly",)
    store.close()


def test_a_database_of_an_older_schema_opens_and_takes_tags(write_config, tmp_path, store_at):
    write_config(store_at.config(TAGGED))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    # as version 3 left it: no tags, no stored repeats, no shards, no source
    for statement in ("DROP TABLE run_tags", "DROP TABLE repeats", "DROP TABLE run_shards", "DROP TABLE reviews",
                      "ALTER TABLE runs DROP COLUMN rescored_from", "ALTER TABLE runs DROP COLUMN retried_from",
                      "ALTER TABLE experiments DROP COLUMN variant", "DROP INDEX items_written",
                      "ALTER TABLE items DROP COLUMN written", "ALTER TABLE experiments DROP COLUMN planned",
                      "ALTER TABLE experiments DROP COLUMN reviewed",
                      "UPDATE yamleval_schema SET version = 3" if store_at.postgres else "PRAGMA user_version = 3"):
        store_at.query("r.db", statement)
    db = store_at.url("r.db")
    if not store_at.postgres:
        os.chmod(tmp_path / "r.db", 0o444)
        assert run_cli("runs", "--store", db, cwd=tmp_path).returncode == 0  # read-only: read unmigrated
        os.chmod(tmp_path / "r.db", 0o644)
    assert run_cli("tag", "latest", "main", "--store", db, cwd=tmp_path).returncode == 0
    version = "SELECT version FROM yamleval_schema" if store_at.postgres else "PRAGMA user_version"
    assert store_at.query("r.db", version) == [(SCHEMA_VERSION,)]
    assert store_at.query("r.db", "SELECT tag FROM run_tags") == [("main",)]
    assert store_at.query("r.db", "SELECT count(*) FROM repeats") == [(0,)]
    listed = run_cli("runs", "--store", db, cwd=tmp_path)
    assert listed.returncode == 0 and "main" in listed.stdout


def test_what_compare_reads_of_stored_items_is_what_their_whole_records_say(write_config, tmp_path, store_at):
    from yamleval import api
    from yamleval.records.types import ItemList

    config = write_config(store_at.config(f"""
        store: r.db
        experiments:
          - id: mixed
            dataset: {{items: [{", ".join(f"{{id: q-{i}, input: a, expected: a}}" for i in range(15))}]}}
            runner: fixture_plugins.steady:answer
            scorers:
              - exact_match
              - {{uses: levenshtein, id: close.enough, threshold: 0.9}}
              - {{uses: fixture_plugins.behaviours:skipping, id: skips}}
              - {{uses: fixture_plugins.behaviours:fixed, id: half, with: {{value: 0.5}}}}
    """))
    outcome = api.run(config, formats=())
    [experiment] = outcome.results
    scorers = ["exact_match", "close.enough", "skips", "half", "not-a-scorer"]
    stored = list(experiment.items.verdicts(scorers))
    whole = list(ItemList(list(experiment.items)).verdicts(scorers))
    assert stored == whole
    statuses = {status for _, _, status, _ in stored}
    assert statuses == {"passed", "failed", "error"}, "errors (no scores), failures and passes are all read"
    assert {sid for *_, found in stored for sid in found} == {"exact_match", "close.enough", "skips", "half"}
    assert all(isinstance(passed, (bool, type(None))) for *_, found in stored for _, passed, _ in found.values())


SLOW_ONE = """
    store: results.db
    experiments:
      - id: waits
        concurrency: 2
        dataset: {file: items.jsonl}
        runner: {uses: fixture_plugins.behaviours:per_item}
        scorers: [exact_match]
"""


def _has_run(store_at) -> bool:
    try:
        return bool(store_at.query("results.db", "SELECT COUNT(*) FROM runs")[0][0])
    except Exception:  # not made yet
        return False


def test_items_finished_while_one_runs_on_are_stored_within_a_second(write_config, tmp_path, store_at):
    from serve.test_app import serving

    with open(tmp_path / "items.jsonl", "w") as out:  # the first item hangs 30 s; the other eleven answer at once
        out.writelines(json.dumps({"id": f"i-{n}", "input": "hang" if n == 0 else f"a{n}", "expected": f"a{n}"}) + "\n"
                       for n in range(12))
    write_config(store_at.config(SLOW_ONE))
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=tmp_path, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _has_run(store_at):
            time.sleep(0.05)
        with serving(store_at.url("results.db"), tmp_path) as base:
            deadline, seen = time.monotonic() + 20, None
            while time.monotonic() < deadline and (seen is None or seen["finished"] < 11):
                time.sleep(0.1)
                runs = requests.get(f"{base}/api/runs", timeout=10).json()["runs"]
                seen = runs[0]["progress"] if runs else None
            assert seen is not None and seen["status"] == "running" and seen["finished"] == 11, seen
        assert child.poll() is None  # the first item still runs
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    assert sorted(_stored_ids(store_at)) == sorted(f"i-{n}" for n in range(1, 12))


def _as_version_3(store_at) -> None:
    for statement in ("DROP TABLE run_tags", "DROP TABLE repeats", "DROP TABLE run_shards", "DROP TABLE reviews",
                      "ALTER TABLE runs DROP COLUMN rescored_from", "ALTER TABLE runs DROP COLUMN retried_from",
                      "ALTER TABLE experiments DROP COLUMN variant", "DROP INDEX items_written",
                      "ALTER TABLE items DROP COLUMN written", "ALTER TABLE experiments DROP COLUMN planned",
                      "ALTER TABLE experiments DROP COLUMN reviewed",
                      "UPDATE yamleval_schema SET version = 3" if store_at.postgres else "PRAGMA user_version = 3"):
        store_at.query("r.db", statement)


def test_readers_never_migrate_a_store_of_an_older_schema(write_config, tmp_path, store_at):
    from serve.test_app import serving

    write_config(store_at.config(TAGGED))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    _as_version_3(store_at)
    db = store_at.url("r.db")
    version = "SELECT version FROM yamleval_schema" if store_at.postgres else "PRAGMA user_version"
    for command in (("runs",), ("show", "latest"), ("report", "latest", "--format", "json", "--report-dir", "again")):
        done = run_cli(*command, "--store", db, cwd=tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
    with serving(db, tmp_path) as base:
        listed = requests.get(f"{base}/api/runs", timeout=10).json()["runs"]
        assert requests.get(f"{base}/runs/{listed[0]['run_id']}", timeout=10).status_code == 200
    assert store_at.query("r.db", version) == [(3,)]  # read as it is
    assert run_cli("tag", "latest", "main", "--store", db, cwd=tmp_path).returncode == 0
    assert store_at.query("r.db", version) == [(SCHEMA_VERSION,)]  # a writer brings it up to date


def test_a_store_on_a_read_only_mount_is_listed_shown_rendered_and_served(write_config, tmp_path):
    from serve.test_app import serving

    folder = tmp_path / "share"
    folder.mkdir()
    write_config(TAGGED.replace("store: r.db", "store: share/r.db"))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    db = sqlite3.connect(folder / "r.db")
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()  # the last connection gone: no -wal or -shm file beside it, as a copied artefact has none
    assert sorted(p.name for p in folder.iterdir()) == ["r.db"]
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    if os.geteuid() == 0:  # root writes through permission bits: a read-only bind mount, as a `:ro` volume is
        subprocess.run(["mount", "--bind", str(folder), str(mounted)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(mounted)], check=True)
    else:
        mounted.rmdir()
        folder.rename(mounted)
        os.chmod(mounted / "r.db", 0o444)
        os.chmod(mounted, 0o555)
    try:
        db = str(mounted / "r.db")
        for command in (("runs",), ("show", "latest"), ("report", "latest", "--format", "json,html", "--report-dir",
                                                        str(tmp_path / "rendered"))):
            done = run_cli(*command, "--store", db, cwd=tmp_path)
            assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
        assert (tmp_path / "rendered" / "report.html").exists()
        with serving(db, tmp_path) as base:
            listed = requests.get(f"{base}/api/runs", timeout=10).json()["runs"]
            assert len(listed) == 1 and listed[0]["status"] == "completed"
            assert requests.get(f"{base}/runs/{listed[0]['run_id']}", timeout=10).status_code == 200
        refused = run_cli("tag", "latest", "main", "--store", db, cwd=tmp_path)
        assert refused.returncode in (2, 3) and "Traceback" not in refused.stderr
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(mounted)], check=True)
        else:
            os.chmod(mounted, 0o755)
