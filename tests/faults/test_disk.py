"""A full disk and a read-only report folder: a one-line error naming the file and what to
do, a non-zero exit, and a database that is intact and lets the run be finished or
rendered again once the problem is gone.

A full disk is a file size limit (RLIMIT_FSIZE) on the yamleval process, with SIGXFSZ
ignored so that writes past it fail with EFBIG exactly where ENOSPC would: no mount
needed, so it works in any CI. A read-only folder is mode 0o555; since root writes
anywhere, the process run as root first drops CAP_DAC_OVERRIDE from its capability
bounding set, which makes the mode bind it as it binds everybody else. Each test checks
that its limit really holds before trusting its result.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import cli_env

pytestmark = pytest.mark.crash

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
REPORTS = ("report.html", "junit.xml", "results.json", "summary.md")


def _project(folder: Path, items: int, text: str = "", pad: int = 0, seconds: float = 0.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(items):
            out.write(json.dumps({"id": f"q-{i}", "input": text or f"question {i}", "expected": f"answer {i}"}) + "\n")
    (folder / "evals.yaml").write_text(f"""
store: results.db
reports: {{dir: out}}
experiments:
  - id: disk
    concurrency: 4
    dataset: {{file: items.jsonl}}
    runner: {{uses: fixture_plugins.steady:answer, with: {{pad: {pad}, seconds: {seconds}}}}}
    scorers: [exact_match]
""", encoding="utf-8")
    return folder


def _file_size_limit(limit: int):
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limited


def _without_dac_override() -> None:
    """As root, give up the capability that lets root ignore file modes (for this process
    and what it executes); as anybody else there is nothing to give up."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")


def _cli(folder: Path, *args: str, preexec=None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "yamleval", *args], cwd=folder, env=cli_env(), capture_output=True,
                          text=True, timeout=timeout, preexec_fn=preexec)


def _assert_clear_error(done: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2 (the environment is at fault, as with a bad config) and one line naming the problem."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.strip()]
    assert line.startswith(("error: cannot write", "error: cannot open"))
    for word in words:
        assert word in line, line
    return line


def _database(db: Path) -> dict:
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = con.execute("SELECT run_id, status FROM runs").fetchall()
        ids = [row[0] for row in con.execute("SELECT item_id FROM items")]
    assert len(ids) == len(set(ids)), "no item twice"
    return {"runs": runs, "items": len(ids)}


def _items_stored(db: Path) -> bool:
    """Whether the run is under way: past its checks, with items stored."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute("SELECT count(*) FROM items").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def _leftovers(folder: Path) -> list[str]:
    return [name for name in os.listdir(folder) if ".tmp" in name] if folder.exists() else []


# the smallest: just past what a new database's tables take (about 62 KB of write-ahead log)
@pytest.mark.parametrize("limit", [75_000, 300_000, 2_000_000])
def test_a_full_disk_while_storing_stops_the_run_and_resume_finishes_it(tmp_path, limit):
    folder = _project(tmp_path, items=1500, pad=3000)
    done = _cli(folder, "run", "-q", preexec=_file_size_limit(limit))
    line = _assert_clear_error(done, "results.db")
    assert "run again" in line or "--resume" in line
    stored = _database(folder / "results.db")
    assert stored["items"] < 1500
    assert all(size <= limit for size in (os.path.getsize(p) for p in folder.glob("results.db*"))), "the limit held"

    again = _cli(folder, "run", "-q", *(["--resume"] if "--resume" in line else []))
    assert again.returncode == 1, again.stderr
    finished = _database(folder / "results.db")
    assert finished["items"] == 1500 and [status for _, status in finished["runs"]] == ["completed"]
    report = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert report["experiments"][0]["summary"]["total"] == 1500


def test_a_full_disk_while_writing_reports_keeps_the_run_and_report_renders_it_later(tmp_path):
    # "&" is five characters in XML: junit.xml, the largest report, is larger than the database and
    # the log of its writes (all of which fit in one write-ahead log of at most 4 MB), so a file
    # size between them lets the run be stored but not that report be written
    text = "&" * 6000
    unlimited = _project(tmp_path / "unlimited", items=300, text=text)
    assert _cli(unlimited, "run", "-q").returncode == 1
    database = (unlimited / "results.db").stat().st_size
    largest = max((unlimited / "out").iterdir(), key=lambda path: path.stat().st_size)
    assert largest.stat().st_size > 1.4 * database, (largest, largest.stat().st_size, database)
    limit = (database + largest.stat().st_size) // 2

    folder = _project(tmp_path / "full", items=300, text=text)
    done = _cli(folder, "run", "-q", preexec=_file_size_limit(limit))
    line = _assert_clear_error(done, "the report " + os.path.join("out", ""), "yamleval report ")
    assert not (folder / "out" / largest.name).exists() and _leftovers(folder / "out") == []
    stored = _database(folder / "results.db")
    assert stored["items"] == 300 and [status for _, status in stored["runs"]] == ["completed"]
    assert stored["runs"][0][0] in line

    rendered = _cli(folder, "report", "latest", "--store", "results.db", "--report-dir", "out")
    assert rendered.returncode == 0, rendered.stderr
    assert sorted(os.listdir(folder / "out")) == sorted(REPORTS)
    summaries = [json.loads((f / "out" / "results.json").read_text(encoding="utf-8"))["experiments"][0]["summary"]
                 for f in (folder, unlimited)]
    assert {k: v for k, v in summaries[0].items() if k not in ("duration_ms", "latency_ms")} == \
        {k: v for k, v in summaries[1].items() if k not in ("duration_ms", "latency_ms")}


@pytest.fixture
def read_only():
    """Make folders read-only for the yamleval processes the test starts; restore them after."""
    folders = []

    def make(folder: Path) -> Path:
        folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        folders.append(folder)
        probe = subprocess.run([sys.executable, "-c", f"open({str(folder / 'probe')!r}, 'w')"],
                               preexec_fn=_without_dac_override, capture_output=True, text=True)
        assert "PermissionError" in probe.stderr, "the folder must really be read-only for the test to mean anything"
        return folder

    yield make
    for folder in folders:
        folder.chmod(0o755)


def test_a_read_only_report_folder_stops_before_running_and_leaves_past_runs_alone(tmp_path, read_only):
    folder = _project(tmp_path, items=50)
    assert _cli(folder, "run", "-q").returncode == 1
    before = {name: (folder / "out" / name).read_bytes() for name in REPORTS}
    read_only(folder / "out")

    done = _cli(folder, "run", "-q", preexec=_without_dac_override)
    _assert_clear_error(done, "reports into out", "--report-dir")
    stored = _database(folder / "results.db")
    assert len(stored["runs"]) == 1 and stored["items"] == 50, "nothing ran"

    again = _cli(folder, "report", "latest", "--store", "results.db", "--report-dir", "out",
                 preexec=_without_dac_override)
    _assert_clear_error(again, os.path.join("out", "report.html"))
    assert {name: (folder / "out" / name).read_bytes() for name in REPORTS} == before
    assert _leftovers(folder / "out") == []

    (folder / "out").chmod(0o755)
    rendered = _cli(folder, "report", "latest", "--store", "results.db", "--report-dir", "out")
    assert rendered.returncode == 0, rendered.stderr
    assert {name: (folder / "out" / name).read_bytes() for name in REPORTS} == before


def test_a_report_folder_made_read_only_during_the_run(tmp_path, read_only):
    folder = _project(tmp_path, items=400, seconds=0.02)  # two seconds: items are stored after one
    (folder / "out").mkdir()
    child = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q"], cwd=folder, env=cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_without_dac_override)
    deadline = time.monotonic() + 60
    while not _items_stored(folder / "results.db") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.poll() is None, "still running"
    read_only(folder / "out")
    _, stderr = child.communicate(timeout=120)
    done = subprocess.CompletedProcess(child.args, child.returncode, "", stderr)
    line = _assert_clear_error(done, "the report " + os.path.join("out", ""), "yamleval report ")
    assert _leftovers(folder / "out") == []
    stored = _database(folder / "results.db")
    assert stored["items"] == 400 and [status for _, status in stored["runs"]] == ["completed"]
    assert stored["runs"][0][0] in line

    (folder / "out").chmod(0o755)
    rendered = _cli(folder, "report", "latest", "--store", "results.db", "--report-dir", "out")
    assert rendered.returncode == 0, rendered.stderr
    assert json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))["experiments"][0][
        "summary"]["total"] == 400


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_read_only_database_can_be_read_but_not_run_into(tmp_path, read_only, journal):
    """A stored run copied to read-only storage (a CI artefact, a mounted share) still lists,
    shows and renders; only a new run is refused. A copy may have left write-ahead logging."""
    folder = _project(tmp_path / "copied", items=30)
    assert _cli(folder, "run", "-q").returncode == 1
    with sqlite3.connect(folder / "results.db") as con:
        con.execute(f"PRAGMA journal_mode={journal}")
        con.execute("DROP INDEX items_position")  # as an older yamleval left it: reading must not need migrating
        con.execute("PRAGMA user_version = 1")
    (folder / "results.db").chmod(0o444)
    read_only(folder)
    for command in (["runs"], ["show", "latest"], ["report", "latest", "--report-dir", str(tmp_path / "again")]):
        done = _cli(folder, *command, "--store", "results.db", preexec=_without_dac_override)
        assert done.returncode == 0, (command, done.stderr)
    assert (tmp_path / "again" / "report.html").exists()
    refused = _cli(folder, "run", "-q", "--report-dir", str(tmp_path / "new"), preexec=_without_dac_override)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "results database" in refused.stderr, refused.stderr
    (folder / "results.db").chmod(0o644)


def test_a_report_folder_that_is_a_file(tmp_path):
    folder = _project(tmp_path, items=5)
    (folder / "out").write_text("not a folder", encoding="utf-8")
    done = _cli(folder, "run", "-q")
    _assert_clear_error(done, "out", "a file, not a folder")
    assert (folder / "out").read_text(encoding="utf-8") == "not a folder"


def test_a_disk_too_full_for_a_new_database_says_so_and_a_later_run_starts_afresh(tmp_path):
    folder = _project(tmp_path, items=20, pad=10)
    done = _cli(folder, "run", "-q", preexec=_file_size_limit(20_000))
    _assert_clear_error(done, "results.db")
    again = _cli(folder, "run", "-q")
    assert again.returncode in (0, 1) and "Traceback" not in again.stderr, again.stderr  # 1: some items fail
    stored = _database(folder / "results.db")
    assert [status for _, status in stored["runs"]] == ["completed"] and stored["items"] == 20
