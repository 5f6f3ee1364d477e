"""Resume continues exactly the run it names, and refuses (or, with --force, re-scores) when
what decides the answers changed since the run started. Runs are stopped for real: SIGKILL
and SIGINT, then resumed from the command line."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env, run_cli
from yamleval.records import figures

pytestmark = pytest.mark.crash

CONFIG = """
store: results.db
reports: {dir: out}
experiments:
  - id: first
    concurrency: 2
    dataset: {file: items.jsonl}
    runner: {uses: fixture_plugins.steady:answer, with: {seconds: 0.01, pad: 0}}
    scorers: [{uses: exact_match, id: SCORER_ID}]
  - id: second
    concurrency: 2
    dataset: {file: items.jsonl}
    runner: {uses: fixture_plugins.steady:answer, with: {seconds: 0.01, pad: 0}}
    scorers: [exact_match]
"""


def _project(folder: Path, items: int = 200, scorer_id: str = "exact", config: str = CONFIG) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(items):
            out.write(json.dumps({"id": f"q-{i}", "input": f"question {i}", "expected": f"answer {i}"}) + "\n")
    (folder / "evals.yaml").write_text(config.replace("SCORER_ID", scorer_id), encoding="utf-8")
    return folder


def _stored(db: Path) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return dict(con.execute("SELECT experiment_id, count(*) FROM items GROUP BY experiment_id").fetchall())
    except sqlite3.Error:
        return {}


def _stop_after(folder: Path, signum: int, *args: str, items: int = 20, **env: str) -> subprocess.CompletedProcess:
    """Start a run, let it store ``items`` items of 'first', then send ``signum``."""
    with subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", *args], cwd=folder,
                          env=cli_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        deadline = time.monotonic() + 60
        while _stored(folder / "results.db").get("first", 0) < items:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no items were stored"
            time.sleep(0.01)
        child.send_signal(signum)
        stdout, stderr = child.communicate(timeout=60)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def _runs(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as con:
        return con.execute("SELECT run_id, status FROM runs").fetchall()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_plain_resume_finds_a_run_of_one_experiment_and_continues_only_it(tmp_path, signum):
    folder = _project(tmp_path)
    stopped = _stop_after(folder, signum, "-e", "first")
    assert stopped.returncode in (130, -signal.SIGKILL)
    if signum == signal.SIGINT:
        assert "--resume" in stopped.stderr
    resumed = run_cli("run", "-q", "--resume", cwd=folder, timeout=120)
    assert resumed.returncode == 1, resumed.stderr  # every seventh item errs in the steady runner
    assert [status for _, status in _runs(folder / "results.db")] == ["completed"]
    assert _stored(folder / "results.db") == {"first": 200}, "only the run's own experiment ran"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_resume_of_one_experiment_of_a_run_continues_the_whole_run(tmp_path, signum):
    folder = _project(tmp_path)
    _stop_after(folder, signum)
    resumed = run_cli("run", "-q", "--resume", "-e", "first", cwd=folder, timeout=120)
    assert resumed.returncode == 1, resumed.stderr
    assert [status for _, status in _runs(folder / "results.db")] == ["completed"]
    assert _stored(folder / "results.db") == {"first": 200, "second": 200}
    again = run_cli("run", "-q", "--resume", "-e", "second", cwd=folder)
    assert again.returncode == 2 and "no unfinished run" in again.stderr


OWN_PLUGIN = "import time\n\ndef answer(input, item, model=''):\n    time.sleep(0.01)\n    return item.expected\n"


def _with_own_runner(folder: Path, runner: str) -> Path:
    (folder / "own.py").write_text(OWN_PLUGIN, encoding="utf-8")
    (folder / "evals.yaml").write_text(CONFIG.replace("SCORER_ID", "exact").replace(
        "{uses: fixture_plugins.steady:answer, with: {seconds: 0.01, pad: 0}}", runner), encoding="utf-8")
    return folder


def test_a_changed_environment_value_is_refused_naming_it(tmp_path):
    folder = _with_own_runner(_project(tmp_path), '{uses: "own:answer", with: {model: "${MODEL}"}}')
    _stop_after(folder, signal.SIGKILL, MODEL="big-model-2")

    refused = run_cli("run", "-q", "--resume", cwd=folder, MODEL="cheap-model")
    assert refused.returncode == 2
    assert "the value of ${MODEL} changed" in refused.stderr and "--force" in refused.stderr
    with sqlite3.connect(folder / "results.db") as con:
        stored = " ".join(str(v) for row in con.execute("SELECT * FROM runs") for v in row)
    assert "big-model-2" not in stored, "only a digest of the value is kept"

    same = run_cli("run", "-q", "--resume", cwd=folder, MODEL="big-model-2")  # unchanged: it resumes
    assert same.returncode == 0, same.stderr
    assert _stored(folder / "results.db") == {"first": 200, "second": 200}


def test_force_after_renaming_a_scorer_scores_every_item_under_the_new_config(tmp_path):
    folder = _project(tmp_path, scorer_id="exact")
    _stop_after(folder, signal.SIGKILL)
    _project(tmp_path, scorer_id="renamed")  # the same project, its scorer renamed
    refused = run_cli("run", "-q", "--resume", cwd=folder)
    assert refused.returncode == 2 and "the config files changed" in refused.stderr

    forced = run_cli("run", "-q", "--resume", "--force", cwd=folder, timeout=120)
    assert forced.returncode == 1, forced.stderr
    assert "Traceback" not in forced.stderr
    report = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    first = report["experiments"][0]
    scored = [item for item in first["items"] if not (item["error"] or "").startswith("runner raised")]
    assert len(scored) > 150 and {tuple(item["scores"]) for item in scored} == {("renamed",)}
    assert set(first["summary"]["scorers"]) == {"renamed"}
    with sqlite3.connect(folder / "results.db") as con:
        [(text,)] = con.execute("SELECT config_text FROM runs").fetchall()
    assert "id: renamed" in json.loads(text)["evals.yaml"], "the stored config is the one that scored them"
    fresh = _project(tmp_path / "fresh", scorer_id="renamed")
    assert run_cli("run", "-q", cwd=fresh, timeout=120).returncode == 1
    again = json.loads((fresh / "out" / "results.json").read_text(encoding="utf-8"))
    assert [e["summary"]["passed"] for e in report["experiments"]] == [
        e["summary"]["passed"] for e in again["experiments"]]


def test_a_changed_plugin_source_is_refused(tmp_path):
    folder = _with_own_runner(_project(tmp_path), "own:answer")
    _stop_after(folder, signal.SIGKILL)
    with open(folder / "own.py", "a", encoding="utf-8") as plugin:
        plugin.write("\n# changed\n")
    refused = run_cli("run", "-q", "--resume", cwd=folder)
    assert refused.returncode == 2 and "the source of own:answer changed" in refused.stderr, refused.stderr


def test_a_duplicate_id_past_those_a_dataset_remembers_is_an_error_on_resume_too(tmp_path):
    """Datasets remember 100,000 ids; the database's key finds a repeat past them, and a resume
    of that run finds it again instead of dropping the repeated item."""
    folder = tmp_path
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(100_020):
            out.write(json.dumps({"id": f"q-{100_005 if i == 100_015 else i}", "input": "x", "expected": "x"}) + "\n")
    (folder / "evals.yaml").write_text("store: results.db\nreports: {dir: out}\nexperiments:\n"
                                       "  - {id: big, dataset: {file: items.jsonl}, runner: echo,"
                                       " scorers: [exact_match]}\n", encoding="utf-8")
    first = run_cli("run", "-q", cwd=folder, timeout=300)
    assert first.returncode == 2 and "duplicate item id 'q-100005'" in first.stderr, first.stderr
    resumed = run_cli("run", "-q", "--resume", cwd=folder, timeout=300)
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert "duplicate item id 'q-100005'" in resumed.stderr


REPEATED = """
store: results.db
reports: {dir: out, formats: [json]}
experiments:
  - id: first
    concurrency: 2
    dataset: {file: items.jsonl}
    runner: {uses: fixture_plugins.behaviours:counting, with: {log: calls.log, seconds: 0.15}}
    scorers: [exact_match]
"""
# 150 repeats of 0.15 s, two at a time: about 11 s, so that many of the store's writes (about one a
# second while items run) hold unfinished items' repeats before the kill


def _repeats_stored(db: Path) -> list[tuple[str, int]]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT item_id, number FROM repeats").fetchall()
    except sqlite3.Error:
        return []


def test_a_run_killed_mid_repeats_resumes_with_its_repeats_and_runs_only_the_missing_ones(tmp_path):
    folder = _project(tmp_path, items=30, config=REPEATED)
    with subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--repeats", "5"], cwd=folder,
                          env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        deadline = time.monotonic() + 60
        while len(_repeats_stored(folder / "results.db")) < 3 or not _stored(folder / "results.db"):
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no repeats were stored"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        first_pid = str(child.pid)
    kept = _repeats_stored(folder / "results.db")  # what the killed run left: durable, read after the kill
    with sqlite3.connect(folder / "results.db") as con:
        finished = {row[0] for row in con.execute("SELECT item_id FROM items")}
    partial = {item_id: sum(1 for i, _ in kept if i == item_id) for item_id, _ in kept if item_id not in finished}
    assert partial and all(0 < count < 5 for count in partial.values())

    refused = run_cli("run", "-q", "--resume", "--repeats", "3", cwd=folder)
    assert refused.returncode == 2, refused.stderr
    assert "it ran with --repeats 5, now with --repeats 3" in refused.stderr and "--force" in refused.stderr

    resumed = run_cli("run", "-q", "--resume", cwd=folder, timeout=120)  # remembers --repeats 5
    assert resumed.returncode == 1, resumed.stderr  # every third item answers wrong
    calls = [line.split() for line in (folder / "calls.log").read_text().splitlines()]
    again = {i: sum(1 for pid, item in calls if pid != first_pid and item == i) for i in {item for _, item in calls}}
    for i in range(30):
        item_id = f"q-{i}"
        expected = 0 if item_id in finished else 5 - partial.get(item_id, 0)
        assert again.get(item_id, 0) == expected, f"{item_id}: run {again.get(item_id, 0)} times after the resume"
    report = json.loads((folder / "out" / "results.json").read_text())
    items = report["experiments"][0]["items"]
    assert len(items) == 30 and all(len(item["repeats"]) == 5 for item in items)
    assert _repeats_stored(folder / "results.db") == [], "the finished items' repeats are not kept twice"


def test_a_resumed_run_counts_the_items_and_the_time_of_both_parts(tmp_path):
    # items of 0.1 s, two at a time: the 60 left when it is stopped take 3 s, longer than any write's delay
    folder = _project(tmp_path, config=CONFIG.replace("seconds: 0.01", "seconds: 0.1"))
    stopped = _stop_after(folder, signal.SIGINT, "-e", "first", items=140)  # the resumed part is the shorter
    assert stopped.returncode == 130, stopped.stderr
    [before] = json.loads((folder / "out" / "results.json").read_text())["experiments"]
    resumed = run_cli("run", "--resume", cwd=folder, timeout=120)
    assert resumed.returncode == 1, resumed.stderr
    # the progress line's verdicts add up to the items it says are done, those kept from before too
    [line] = [line for line in resumed.stderr.splitlines() if line.startswith("first: ")][:1]
    done = int(line.split()[1].split("/")[0])
    counts = {word: int(number) for number, word in
              (part.split()[:2] for part in line.split(" · ") if part.split()[-1] in ("passed", "failed", "error", "errors"))}
    assert done > before["summary"]["completed"] and sum(counts.values()) == done, line
    [after] = json.loads((folder / "out" / "results.json").read_text())["experiments"]
    assert after["summary"]["completed"] == 200
    # its duration is the time its items ran in both parts, not the resumed part's alone
    assert after["summary"]["duration_ms"] > before["summary"]["duration_ms"] > 0
    assert f"duration {figures.ms(after['summary']['duration_ms'])}" in resumed.stdout
