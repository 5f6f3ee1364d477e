#!/usr/bin/env python
"""Viewers of a running run in the Eval Center: how far behind the store their events are, and
what they cost the run.

One ``yamleval run`` of N items (default 40,000; a runner that waits a few milliseconds, so the
run lasts long enough to be watched) into a SQLite store, ``yamleval serve`` over that store,
and V viewers (default 20) each reading the run's event stream (``/api/runs/{id}/events``) to
its end, as the live run page does. A sampler reads the store directly every 0.1 s (the
number of the item stored last, and the run's status), so each event is compared with the
moment the store first held what it tells:

- **behind**: for each ``items`` event, its time minus the first moment the store held the
  item it names last (the ``id:`` of the event); for the ``end`` event, its time minus the
  first moment the store's run was no longer running. Target: at most 2 s, every viewer, every event.
- **silent**: the longest gap between two events of one viewer while the run ran.
- **wall**: the ``yamleval run`` process with the viewers against the same run without them
  (and without a server), measured alternately in the same invocation. Target: <= 1.2x.

    python bench/live_viewers.py                          # 40,000 items, 20 viewers, 3 runs each
    python bench/live_viewers.py --items 5000 --repeat 1  # a smoke run

Exit code 0 when both targets pass, 1 otherwise. Figures also go to ``--json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import CHILD_ENV, child_env, yamleval_command  # noqa: E402

BEHIND_SECONDS, WALL_RATIO = 2.0, 1.2
SAMPLE_SECONDS = 0.1

PLUGIN = '''\
import time


def pause(input, seconds=0.0):
    """A system under test that answers after ``seconds``, with its input."""
    time.sleep(seconds)
    return input
'''

CONFIG = """\
store: %(store)s
reports: {formats: [json]}
experiments:
  - id: watched
    dataset: {file: %(data)s}
    runner: {uses: "live_plugins:pause", with: {seconds: %(seconds)r}}
    scorers: [exact_match]
    concurrency: %(concurrency)d
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_files(folder: str, items: int, seconds: float, concurrency: int) -> None:
    """The runner, the datasets (1 item to warm up, ``items`` to watch) and their configs."""
    with open(os.path.join(folder, "live_plugins.py"), "w", encoding="utf-8") as out:
        out.write(PLUGIN)
    for name, count in (("warm.jsonl", 1), ("items.jsonl", items)):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            for n in range(count):
                out.write(json.dumps({"id": f"item-{n}", "input": f"q{n}", "expected": f"q{n}"}) + "\n")
    for name, data in (("warm.yaml", "warm.jsonl"), ("run.yaml", "items.jsonl")):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(CONFIG % {"store": "live.db", "data": data, "seconds": seconds, "concurrency": concurrency})


def fresh_store(folder: str) -> None:
    """An empty store holding one finished run (so a server can open it), the bytecode warm."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(os.path.join(folder, "live.db" + suffix)):
            os.remove(os.path.join(folder, "live.db" + suffix))
    subprocess.run(yamleval_command() + ["run", "warm.yaml", "--quiet", "--report-dir", "warm-reports"],
                   cwd=folder, env=CHILD_ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_run(folder: str) -> tuple[subprocess.Popen, float]:
    command = yamleval_command() + ["run", "run.yaml", "--quiet", "--report-dir", "reports"]
    return subprocess.Popen(command, cwd=folder, env=CHILD_ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL), time.perf_counter()


def finish(run: subprocess.Popen, started: float) -> float:
    if run.wait(timeout=3600) != 0:
        raise SystemExit(f"yamleval run exited with {run.returncode}")
    return time.perf_counter() - started


def running_run(base: str, deadline: float) -> str:
    """The id of the run the server lists as running, once it does."""
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base + "/api/runs", timeout=30) as answer:
            runs = json.loads(answer.read())["runs"]
        if runs and runs[0]["status"] == "running":
            return runs[0]["run_id"]
        time.sleep(0.05)
    raise SystemExit("the run never showed as running")


class Sampler(threading.Thread):
    """The store as it stands, every SAMPLE_SECONDS: (time, number of the item stored last, run status)."""

    def __init__(self, path: str, run_id: str):
        super().__init__(daemon=True)
        self.path, self.run_id, self.samples, self.done = path, run_id, [], threading.Event()

    def run(self) -> None:
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        try:
            while not self.done.is_set():
                last = db.execute("SELECT MAX(written) FROM items WHERE run_id = ?", (self.run_id,)).fetchone()[0]
                status = db.execute("SELECT status FROM runs WHERE run_id = ?", (self.run_id,)).fetchone()[0]
                self.samples.append((time.monotonic(), last or 0, status))
                if status != "running":
                    return
                self.done.wait(SAMPLE_SECONDS)
        finally:
            db.close()

    def held(self, number: int) -> float | None:
        """The first moment the store held the item numbered ``number``."""
        return next((t for t, last, _ in self.samples if last >= number), None)

    def ended(self) -> float | None:
        return next((t for t, _, status in self.samples if status != "running"), None)


def follow(url: str, events: list) -> None:
    """Read one viewer's event stream to its end: (time received, kind, id or None) each."""
    with urllib.request.urlopen(url, timeout=600) as stream:
        kind = number = None
        for raw in stream:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("id: "):
                number = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                events.append((time.monotonic(), kind, number))
                if kind in ("end", "problem"):
                    return
                kind = number = None


def watched_run(folder: str, viewers: int) -> dict:
    """One run with ``viewers`` following it: its wall time, and how far behind each viewer was."""
    fresh_store(folder)
    port = free_port()
    server = subprocess.Popen(yamleval_command() + ["serve", "--store", "live.db", "--port", str(port)], cwd=folder,
                              env=CHILD_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        if not line.startswith("serving http://"):
            raise SystemExit("yamleval serve did not start: " + line + server.stderr.read())
        base = f"http://127.0.0.1:{port}"
        run, started = start_run(folder)
        run_id = running_run(base, time.monotonic() + 120)
        sampler = Sampler(os.path.join(folder, "live.db"), run_id)
        sampler.start()
        streams = [[] for _ in range(viewers)]
        threads = [threading.Thread(target=follow, args=(f"{base}/api/runs/{run_id}/events", events), daemon=True)
                   for events in streams]
        for thread in threads:
            thread.start()
        wall = finish(run, started)
        for thread in threads:
            thread.join(timeout=600)
        sampler.join(timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"wall": wall, **lags(streams, sampler)}


def lags(streams: list[list], sampler: Sampler) -> dict:
    """How far behind the store the viewers' events came, and their longest silences."""
    behind, silent, end_behind = [], [], []
    for events in streams:
        if not events or events[-1][1] != "end":
            raise SystemExit(f"a viewer's stream ended without the run's end: {events[-1:]}")
        for received, kind, number in events:
            if kind == "items" and number is not None and (held := sampler.held(number)) is not None:
                behind.append(max(0.0, received - held))
        end_behind.append(max(0.0, events[-1][0] - (sampler.ended() or events[-1][0])))
        silent.append(max((b[0] - a[0] for a, b in zip(events, events[1:])), default=0.0))
    return {"behind_max": max(behind + end_behind), "behind_median": statistics.median(behind or [0.0]),
            "end_behind_max": max(end_behind), "silent_max": max(silent),
            "events": sum(len(events) for events in streams)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=40000)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=0.002, help="each item's wait in the runner")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default="", help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="yamleval-live-")
    child_env(folder)
    try:
        write_files(folder, args.items, args.seconds, args.concurrency)
        alone, watched = [], []
        for index in range(args.repeat):
            print(f"  ... {args.items:,} items, run {index + 1} of {args.repeat}: without viewers, then with "
                  f"{args.viewers}", file=sys.stderr, flush=True)
            fresh_store(folder)
            alone.append(finish(*start_run(folder)))
            watched.append(watched_run(folder, args.viewers))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return report(args, alone, watched)


def report(args, alone: list[float], watched: list[dict]) -> int:
    """Print the figures (and write them to ``--json``); the exit code: 0 when both targets pass."""
    wall_alone, wall_watched = statistics.median(alone), statistics.median(r["wall"] for r in watched)
    ratio = wall_watched / wall_alone
    behind = max(r["behind_max"] for r in watched)
    print(f"{args.items:,} items (runner waits {args.seconds * 1000:g} ms, concurrency {args.concurrency}), "
          f"{args.viewers} viewers, {args.repeat} run(s) each")
    print(f"wall    with viewers {wall_watched:.2f} s, without {wall_alone:.2f} s = {ratio:.2f}x "
          f"(goal <= {WALL_RATIO:g}x): {'PASS' if ratio <= WALL_RATIO else 'FAIL'}")
    print(f"behind  at most {behind:.2f} s (goal <= {BEHIND_SECONDS:g} s): {'PASS' if behind <= BEHIND_SECONDS else 'FAIL'}"
          f"; per run: items events at most {[round(r['behind_max'], 2) for r in watched]} s (median "
          f"{[round(r['behind_median'], 2) for r in watched]}), the end {[round(r['end_behind_max'], 2) for r in watched]} s")
    print(f"silent  longest gap between a viewer's events {[round(r['silent_max'], 2) for r in watched]} s; "
          f"runs alone {[round(a, 2) for a in alone]} s, watched {[round(r['wall'], 2) for r in watched]} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"items": args.items, "viewers": args.viewers, "alone": alone, "watched": watched,
                       "wall_ratio": ratio, "behind_max": behind}, out, indent=1)
    return 0 if ratio <= WALL_RATIO and behind <= BEHIND_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
