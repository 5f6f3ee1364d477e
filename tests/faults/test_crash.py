"""Crash safety: runs killed with SIGKILL at chosen and at random moments, then resumed, end
exactly like a run that was never killed; SIGINT and SIGTERM stop a run cleanly.

The moments are found by watching the run from outside, never by hooks inside yamleval:
a store write is under way while the write-ahead log ends in a frame that does not commit
(read again after the kill to confirm it), a checkpoint while the database file grows,
and a report is being rendered while its temporary file exists. Random moments come from
a seeded generator, so a failure names its seed. Each chain kills the same run again and
again, resuming it in between, before a last resume finishes it.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from conftest import cli_env, run_cli

pytestmark = pytest.mark.crash

ITEMS = 3000
PAD = 3000  # characters of runner metadata per item: a batch of items is a write of megabytes

CONFIG = """
store: results.db
reports: {dir: out}
experiments:
  - id: first
    concurrency: 4
    dataset: {file: items.jsonl}
    runner: {uses: fixture_plugins.steady:answer, with: {pad: PAD}}
    scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
    pass_criteria: [{type: pass_rate, min: 0.5}]
  - id: second
    concurrency: 2
    dataset: {file: items.jsonl, limit: 1500}
    runner: {uses: fixture_plugins.steady:answer, with: {pad: PAD}}
    scorers: [exact_match]
"""
SUMMARY_KEYS = ("total", "completed", "passed", "failed", "errored", "skipped", "mean_score", "pass_rate",
                "scorers", "criteria")
REPORTS = ("report.html", "junit.xml", "results.json", "summary.md")
# Each item of a killed-and-resumed run takes this long, so that a run (about 3 s) outlasts
# the latest random kill (0.5 s) however fast the machine: no kill finds its run ended.
STEADY_SECONDS = 0.002


def _project(folder: Path, items: int = ITEMS, pad: int = PAD, seconds: float = 0.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(items):
            out.write(json.dumps({"id": f"q-{i}", "input": f"question {i}", "expected": f"answer {i}"}) + "\n")
    config = CONFIG.replace("PAD", str(pad))
    if seconds:
        config = config.replace(f"pad: {pad}}}", f"pad: {pad}, seconds: {seconds}}}")
    (folder / "evals.yaml").write_text(config, encoding="utf-8")
    return folder


def _start(folder: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", *args], cwd=folder, env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(child: subprocess.Popen, ready, timeout: float = 60.0, interval: float = 0.001) -> bool:
    """Poll ``ready()`` until it holds (True) or the child exits first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        if child.poll() is not None:
            return False
        time.sleep(interval)
    child.kill()
    raise AssertionError(f"nothing happened within {timeout}s")


def _kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def _run_stored(db: Path) -> bool:
    """Whether the run's row is committed (a kill before it leaves nothing to resume)."""
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def _wal_frames(wal: Path) -> tuple[int, bytes, bytes]:
    """The log's page size, its header's salts, and its bytes."""
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < 32:
        return 0, b"", data
    return struct.unpack(">I", data[8:12])[0], data[16:24], data


def _wal_tail_uncommitted(wal: Path) -> bool:
    """Whether the write-ahead log ends in frames of a transaction that never committed.

    A frame belongs to the log's current generation when its salts equal the header's;
    the last such frame carries the database size only if it commits its transaction.
    """
    page_size, salts, data = _wal_frames(wal)
    last_commit_field = None
    offset = 32
    while page_size and offset + 24 + page_size <= len(data) and data[offset + 8:offset + 16] == salts:
        last_commit_field = struct.unpack(">I", data[offset + 4:offset + 8])[0]
        offset += 24 + page_size
    return last_commit_field == 0


def _writing_now(wal: Path) -> bool:
    """A cheap look at the log's last frame: of the current generation and not a commit."""
    try:
        with open(wal, "rb") as log:
            header = log.read(32)
            if len(header) < 32:
                return False
            page_size = struct.unpack(">I", header[8:12])[0]
            frames = (os.fstat(log.fileno()).st_size - 32) // (24 + page_size)
            if frames < 1:
                return False
            log.seek(32 + (frames - 1) * (24 + page_size))
            frame = log.read(24)
    except OSError:
        return False
    return frame[8:16] == header[16:24] and frame[4:8] == b"\0\0\0\0"


def _kill_during_store_write(child: subprocess.Popen, folder: Path, rng: random.Random) -> str | None:
    """Kill while a batch of items is being written: the log ends in an uncommitted frame.

    Only the end of the log is looked at, which is where SQLite writes until its first
    checkpoint restarts the log; so this is the first kill of a fresh run, and ``skip``
    (0 or 1) passes over a transaction to vary which batch is struck. The commit can
    win the race with the signal, or a busy machine can let every batch pass unseen:
    then the fresh run is started over (a few times).
    """
    for attempt in range(5):
        if attempt:
            shutil.rmtree(folder / "out", ignore_errors=True)
            for name in ("results.db", "results.db-wal", "results.db-shm"):
                (folder / name).unlink(missing_ok=True)
            child = _start(folder)
        if _kill_in_a_transaction(child, folder, rng.randrange(2)):
            if _wal_tail_uncommitted(folder / "results.db-wal"):
                return "store write"
        else:
            child.communicate(timeout=60)
    raise AssertionError("in five fresh runs no kill landed inside a transaction")


def _kill_in_a_transaction(child: subprocess.Popen, folder: Path, skip: int) -> bool:
    """Once the run is stored (so there is a run to resume), kill in the ``skip``-th write seen."""
    wal = folder / "results.db-wal"
    if not _wait_for(child, lambda: _run_stored(folder / "results.db"), interval=0.01):
        return False
    while True:
        if not _wait_for(child, lambda: _writing_now(wal)):
            return False
        if skip == 0:
            _kill(child)
            return True
        skip -= 1
        if not _wait_for(child, lambda: not _writing_now(wal)):
            return False


def _kill_during_checkpoint(child: subprocess.Popen, folder: Path, rng: random.Random) -> str | None:
    """Kill while SQLite copies the log into the database file: the file grows."""
    db = folder / "results.db"
    before = _size(db)
    if _wait_for(child, lambda: _size(db) > before):
        _kill(child)
        return "checkpoint"
    return None


def _kill_at_random(child: subprocess.Popen, folder: Path, rng: random.Random) -> str | None:
    """Kill at a random moment in the first half second of a process that has a run to resume:
    starting up, reopening the run, running and storing items, or rendering reports."""
    started = time.monotonic()
    delay = rng.uniform(0.0, 0.5)
    if _wait_for(child, lambda: time.monotonic() - started >= delay and _run_stored(folder / "results.db")):
        _kill(child)
        return f"random ({delay:.3f}s)"
    return None


def _rendering(out: Path, name: str = "results.json"):
    """A check: is the report ``name`` half written (its temporary file exists)?"""
    def check() -> bool:
        try:
            return any(entry.startswith(name + ".tmp") for entry in os.listdir(out))
        except OSError:
            return False
    return check


def _kill_during_report(child: subprocess.Popen, folder: Path, rng: random.Random) -> str | None:
    """Kill while a report is half written. (``results.json`` holds every item's metadata,
    so it takes long enough to render to be seen from outside.)"""
    if _wait_for(child, _rendering(folder / "out"), timeout=120):
        _kill(child)
        return "rendering results.json"
    return None


def _summaries(results_json: Path) -> dict:
    report = json.loads(results_json.read_text(encoding="utf-8"))
    return {e["id"]: ({k: e["summary"][k] for k in SUMMARY_KEYS},
                      [(i["id"], i["status"], i["scores"], i["output"], i["error"]) for i in e["items"]],
                      e["passed"])
            for e in report["experiments"]}


def _assert_reports_whole(out: Path) -> None:
    """Every report is complete and no temporary file is left beside them."""
    assert sorted(os.listdir(out)) == sorted(REPORTS), os.listdir(out)
    json.loads((out / "results.json").read_text(encoding="utf-8"))
    ElementTree.parse(out / "junit.xml")
    assert (out / "report.html").read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert (out / "summary.md").read_text(encoding="utf-8").strip()


def _assert_present_reports_whole(out: Path) -> None:
    """Right after a kill: a report under its own name is a whole one, never a torn one."""
    if (out / "results.json").exists():
        json.loads((out / "results.json").read_text(encoding="utf-8"))
    if (out / "junit.xml").exists():
        ElementTree.parse(out / "junit.xml")
    if (out / "report.html").exists():
        assert (out / "report.html").read_text(encoding="utf-8").rstrip().endswith("</html>")


def _completed(db: Path) -> bool:
    """Whether the one run in ``db`` is stored as finished (its reports are written before that)."""
    with sqlite3.connect(db) as con:
        return [status for (status,) in con.execute("SELECT status FROM runs")] == ["completed"]


def _assert_stored_once(db: Path, expected: dict[str, int]) -> None:
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        [(run_id, status)] = con.execute("SELECT run_id, status FROM runs").fetchall()
        assert status == "completed"
        for experiment, size in expected.items():
            ids = [r[0] for r in con.execute("SELECT item_id FROM items WHERE run_id = ? AND experiment_id = ?",
                                             (run_id, experiment))]
            assert len(ids) == size and len(set(ids)) == size, experiment


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The same project run once without interruption: what every resumed run must equal."""
    folder = _project(tmp_path_factory.mktemp("uninterrupted"))
    done = run_cli("run", "-q", cwd=folder, timeout=120)
    assert done.returncode == 1, done.stderr  # 'second' has no criteria and failing items
    return _summaries(folder / "out" / "results.json")


KILLERS = {"store": _kill_during_store_write, "checkpoint": _kill_during_checkpoint, "random": _kill_at_random,
           "report": _kill_during_report}


@pytest.mark.parametrize("seed, plan", [
    (1, ["store", "checkpoint", "random", "report", "random"]),
    (2, ["store", "report", "random"]),
    (3, ["store", "random", "random", "report"]),
])
def test_killed_again_and_again_then_resumed_equals_an_uninterrupted_run(tmp_path, uninterrupted, seed, plan):
    rng = random.Random(seed)
    folder = _project(tmp_path, seconds=STEADY_SECONDS)
    landed = []
    child = _start(folder)
    for step in plan:
        how = KILLERS[step](child, folder, rng)
        if how is None and len(landed) >= 2:  # a resumed run near its end finished first (a busy machine
            landed.append(f"finished before a {step} kill")  # or quick reports): what is left is the end
            break
        if how is None:
            _, stderr = child.communicate(timeout=30)
            raise AssertionError(f"seed {seed}: the run ended (exit {child.returncode}) before the kill ({step})"
                                 f" after {landed}: {stderr}")
        landed.append(how)
        if step == "report":
            leftovers = [n for n in os.listdir(folder / "out") if ".tmp" in n]
            assert leftovers, "the report was being written"
            _assert_present_reports_whole(folder / "out")
        if _completed(folder / "results.db"):  # the kill landed as the run exited, its end stored: nothing to resume
            landed.append("after the run had finished")
            child = None
            break
        child = _start(folder, "--resume")
    if child is not None:
        stdout, stderr = child.communicate(timeout=120)
        assert child.returncode == 1, f"seed {seed}, kills {landed}: {stderr}"
        assert "Traceback" not in stderr
    _assert_stored_once(folder / "results.db", {"first": ITEMS, "second": 1500})
    _assert_reports_whole(folder / "out")
    assert _summaries(folder / "out" / "results.json") == uninterrupted, f"seed {seed}, kills {landed}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_mark_the_run_interrupted_and_resume_completes_it(tmp_path, signum):
    folder = _project(tmp_path, items=400, pad=0, seconds=0.005)
    child = _start(folder)
    db = folder / "results.db"

    def some_items_stored() -> bool:
        if not _run_stored(db):
            return False
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT count(*) FROM items").fetchone()[0] > 0

    assert _wait_for(child, some_items_stored, interval=0.01)
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    report = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert report["interrupted"] is True and report["status"] == "interrupted"
    partial = sum(len(e["items"]) for e in report["experiments"])
    assert 0 < partial < 400 + 400
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
        assert con.execute("SELECT count(*) FROM items").fetchone()[0] == partial
    listed = run_cli("runs", "--store", "results.db", cwd=folder)
    assert " interrupted " in listed.stdout

    resumed = run_cli("run", "-q", "--resume", cwd=folder, timeout=120)
    assert resumed.returncode == 1, resumed.stderr
    _assert_stored_once(db, {"first": 400, "second": 400})
    _assert_reports_whole(folder / "out")
    fresh = _project(tmp_path / "fresh", items=400, pad=0, seconds=0.005)
    assert run_cli("run", "-q", cwd=fresh, timeout=120).returncode == 1
    assert _summaries(folder / "out" / "results.json") == _summaries(fresh / "out" / "results.json")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_writing_reports_exits_130_and_resume_writes_them(tmp_path, uninterrupted, signum):
    folder = _project(tmp_path)
    child = _start(folder)
    assert _wait_for(child, _rendering(folder / "out"), timeout=120)
    child.send_signal(signum)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    assert [n for n in os.listdir(folder / "out") if ".tmp" in n] == [], "no half-written report left"
    with sqlite3.connect(folder / "results.db") as con:
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"

    resumed = run_cli("run", "-q", "--resume", cwd=folder, timeout=120)
    assert resumed.returncode == 1, resumed.stderr
    _assert_stored_once(folder / "results.db", {"first": ITEMS, "second": 1500})
    _assert_reports_whole(folder / "out")
    assert _summaries(folder / "out" / "results.json") == uninterrupted


def test_killed_at_random_on_postgresql_then_resumed_equals_an_uninterrupted_run(tmp_path, uninterrupted,
                                                                                 postgres_server):
    """The same project, stored in a real PostgreSQL server: killed at random moments (running,
    storing, rendering), resumed each time; every item stored once, and the reports equal."""
    import psycopg

    url = postgres_server.new_database()
    folder = _project(tmp_path, seconds=STEADY_SECONDS)
    (folder / "evals.yaml").write_text(CONFIG.replace("PAD", str(PAD)).replace(
        f"pad: {PAD}}}", f"pad: {PAD}, seconds: {STEADY_SECONDS}}}").replace("store: results.db", f"store: {url}"))

    def stored() -> bool:
        try:
            with psycopg.connect(url, connect_timeout=5) as db:
                return db.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
        except psycopg.Error:  # its tables not made yet
            return False

    rng = random.Random(5)
    landed = []
    child = _start(folder)
    for step in ("random", "random", "report", "random"):
        if step == "report":
            how = _kill_during_report(child, folder, rng)
        else:
            started, delay = time.monotonic(), rng.uniform(0.0, 0.5)
            how = (f"random ({delay:.3f}s)" if _wait_for(child, lambda: time.monotonic() - started >= delay and stored())
                   else None)
            if how is not None:
                _kill(child)
        if how is None and len(landed) >= 2:
            break
        assert how is not None, f"the run ended (exit {child.returncode}) before the kill ({step}) after {landed}"
        landed.append(how)
        child = _start(folder, "--resume")
    _, stderr = child.communicate(timeout=180)
    assert child.returncode == 1 and "Traceback" not in stderr, f"kills {landed}: {stderr}"
    with psycopg.connect(url) as db:
        assert db.execute("SELECT status FROM runs").fetchall() == [("completed",)]
        counts = db.execute("SELECT experiment_id, count(*), count(DISTINCT item_id) FROM items"
                            " GROUP BY experiment_id ORDER BY experiment_id").fetchall()
    assert counts == [("first", ITEMS, ITEMS), ("second", 1500, 1500)]
    _assert_reports_whole(folder / "out")
    assert _summaries(folder / "out" / "results.json") == uninterrupted, f"kills {landed}"


VARIANTS = """
store: results.db
reports: {dir: out}
experiments:
  - id: models
    concurrency: 4
    dataset: {file: items.jsonl, limit: 1200}
    runner: {uses: fixture_plugins.steady:answer, with: {pad: 1000, seconds: SECONDS}}
    variants:
      - {id: base}
      - {id: shifted, with: {offset: 1}}
      - {id: shifted-more, with: {offset: 2}, gate: false}
    scorers: [exact_match]
"""
VARIANT_IDS = ("base", "shifted", "shifted-more")


def _variants_project(folder: Path, seconds: float) -> Path:
    _project(folder, items=1200, pad=0)
    (folder / "evals.yaml").write_text(VARIANTS.replace("SECONDS", str(seconds)), encoding="utf-8")
    return folder


def _variant_summaries(results_json: Path) -> dict:
    [experiment] = json.loads(results_json.read_text(encoding="utf-8"))["experiments"]
    return {v["id"]: ({k: v["summary"][k] for k in SUMMARY_KEYS},
                      [(i["id"], i["status"], i["scores"], i["output"], i["error"]) for i in v["items"]], v["passed"])
            for v in experiment["variants"]}


def test_a_variants_run_killed_and_resumed_loses_nothing_and_repeats_nothing(tmp_path):
    fresh = _variants_project(tmp_path / "fresh", 0.0)
    assert run_cli("run", "-q", cwd=fresh, timeout=120).returncode == 1  # every variant fails a third of its items
    uninterrupted = _variant_summaries(fresh / "out" / "results.json")
    assert list(uninterrupted) == list(VARIANT_IDS)
    rng = random.Random(13)
    folder = _variants_project(tmp_path / "killed", STEADY_SECONDS)
    child = _start(folder)
    landed = [_kill_during_store_write(child, folder, rng)]
    for _ in range(3):  # later kills land in later variants: each resumed session goes on where one stopped
        child = _start(folder, "--resume")
        how = _kill_at_random(child, folder, rng)
        if how is None:
            break
        landed.append(how)
    else:
        child = _start(folder, "--resume")
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 1, f"kills {landed}: {stderr}"
    assert "Traceback" not in stderr
    _assert_stored_once(folder / "results.db", {f"models/{v}": 1200 for v in VARIANT_IDS})
    _assert_reports_whole(folder / "out")
    assert _variant_summaries(folder / "out" / "results.json") == uninterrupted, f"kills {landed}"
