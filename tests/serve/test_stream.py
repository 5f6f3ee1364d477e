"""The live view of a running run (``serve.stream``, ``serve.reading.live``): the events a viewer
is sent name the items the store holds, by id and status, read without their records, and every
viewer of a run, however many, follows it to its end from one look at the store at a time."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from contextlib import closing

import requests

from conftest import cli_env, run_cli
from serve.test_app import _running, serving
from yamleval.serve import reading
from yamleval.store import open_store

LONG_ID = "x" * 3000  # longer than a key of the store: the store keys it by a digest (schema.item_key)

STORED = """
    store: r.db
    experiments:
      - id: e
        dataset:
          items:
            - {{id: first, input: a, expected: a}}
            - {{id: second, input: a, expected: b}}
            - {{id: {long}, input: c, expected: c}}
        runner: {{uses: echo}}
        scorers: [exact_match]
        concurrency: 1
"""


def _stored_run(write_config, tmp_path, store_at) -> str:
    write_config(store_at.config(STORED.format(long=LONG_ID)))
    done = run_cli("run", "-q", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    return store_at.absolute()


def test_a_live_look_names_the_items_stored_since_a_number_by_id_and_status(write_config, tmp_path, store_at):
    with closing(open_store(_stored_run(write_config, tmp_path, store_at))) as store:
        run_id = store.runs(1)[0].run_id
        found, two = reading.live(store, run_id), reading.live(store, run_id, keep=2)
    assert found.progress["counts"] == {"passed": 2, "failed": 1, "error": 0, "skipped": 0}
    last, items = reading.latest_items(found, 0)
    assert items == [{"experiment": "e", "id": "first", "status": "passed"},
                     {"experiment": "e", "id": "second", "status": "failed"},
                     {"experiment": "e", "id": LONG_ID, "status": "passed"}]
    assert last == found.newest[-1].number
    assert reading.latest_items(found, found.newest[0].number)[1] == items[1:]
    assert reading.latest_items(found, last) == (last, [])
    assert [w.item_id for w in two.newest] == ["second", LONG_ID]


def test_a_live_look_reads_no_items_record(write_config, tmp_path, store_at):
    """Every record is made unreadable by another program: the ids and statuses are all there still."""
    write_config(store_at.config(STORED.format(long="third")))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    store_at.query("r.db", "UPDATE items SET record = ?", ("withheld",))
    with closing(open_store(store_at.absolute())) as store:
        found = reading.live(store, store.runs(1)[0].run_id)
    assert [(w.item_id, w.status) for w in found.newest] == [
        ("first", "passed"), ("second", "failed"), ("third", "passed")]


SLOW = """
    store: {store}
    experiments:
      - id: slow
        dataset: {{items: [{items}]}}
        runner: {{uses: "fixture_plugins.behaviours:sleeper", with: {{seconds: 0.3}}}}
        scorers: [exact_match]
        concurrency: 1
"""


def _follow(url: str, into: list) -> None:
    """Read the event stream at ``url`` to its end: its events, (kind, id or None, data) each."""
    with requests.get(url, stream=True, timeout=60) as answer:
        kind = number = None
        for line in answer.iter_lines(decode_unicode=True):
            if line.startswith("id: "):
                number = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                into.append((kind, number, json.loads(line[6:])))
                if kind == "end":
                    return
                kind = number = None


def test_every_viewer_of_a_running_run_is_told_each_new_item_and_the_end(tmp_path, store_at):
    store = store_at.absolute("live.db")
    items = ", ".join(f"{{id: i{n}, input: a{n}, expected: a{n}}}" for n in range(8))
    (tmp_path / "evals.yaml").write_text(textwrap.dedent(SLOW.format(store=store, items=items)), encoding="utf-8")
    writer = subprocess.Popen([sys.executable, "-m", "yamleval", "run", "evals.yaml"], cwd=tmp_path, env=cli_env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not store_at.postgres:
            _wait_for_file(tmp_path / "live.db")
        with serving(store, tmp_path) as base:
            run_id = _running(base)
            streams = [[] for _ in range(3)]
            viewers = [threading.Thread(target=_follow, args=(f"{base}/api/runs/{run_id}/events", events))
                       for events in streams]
            for viewer in viewers:
                viewer.start()
            for viewer in viewers:
                viewer.join(timeout=90)
        assert writer.wait(timeout=60) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    for events in streams:
        assert events[-1] == ("end", None, {"status": "passed"})
        progress = [data for kind, _, data in events if kind == "progress"]
        assert progress[-1]["finished"] == 8 and progress[-1]["counts"]["passed"] == 8
        numbers = [number for kind, number, _ in events if kind == "items"]
        assert numbers == sorted(set(numbers)), "each item is told once, in the order stored"
        told = [item["id"] for kind, _, data in events if kind == "items" for item in data]
        assert told[-1] == "i7" and len(told) == len(set(told)) and set(told) <= {f"i{n}" for n in range(8)}
        assert all(item["status"] == "passed" for kind, _, data in events if kind == "items" for item in data)


def _wait_for_file(path) -> None:
    import time

    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the server opens a store that is there
