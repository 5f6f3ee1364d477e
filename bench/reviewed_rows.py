"""R19: a reviewed run served as fast as an unreviewed one (issue 44, point 19).

Two runs alike of ``--items`` items, broken down by a metadata field, are stored in one store and
served by ``yamleval serve --reviews``; three reviews of one of them are posted (each POST's time
printed), then the first rows page of its experiment, its summary (``/api/runs/ID``) and its page
are read of both runs in turn; then the unreviewed run's reads again from a server without
``--reviews``.
Printed: each figure of the reviewed run, of the unreviewed one, and their ratio; each figure of
the unreviewed run served with ``--reviews`` against without it (the review queue's cost); target:
every ratio at most 1.2x, all measured in this one run.

    python bench/reviewed_rows.py --items 100000
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TARGET = 1.2
CONFIG = """
store: results.db
reports: {formats: [json]}
experiments:
  - id: answers
    dataset: {file: items.jsonl}
    runner: {uses: echo}
    scorers: [exact_match]
    breakdowns: [metadata.topic]
"""


def write_project(folder: str, items: int) -> None:
    with open(os.path.join(folder, "evals.yaml"), "w", encoding="utf-8") as out:
        out.write(CONFIG)
    with open(os.path.join(folder, "items.jsonl"), "w", encoding="utf-8") as out:
        for n in range(items):
            expected = f"q{n}" if n % 3 else "other"  # two in three pass
            out.write(json.dumps({"id": f"i{n}", "input": f"q{n}", "expected": expected,
                                  "metadata": {"topic": f"t{n % 8}"}}) + "\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_get(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


def timed_post(url: str, body: dict) -> float:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as answer:
        answer.read()
    return time.perf_counter() - started


def figures(base: str, run_ids: list[str], repeat: int) -> list[dict[str, float]]:
    """The median seconds of each read a viewer makes of each run, the runs read in turn ``repeat`` times."""
    reads = {"first rows": "{base}/api/runs/{run}/rows?experiment=answers&limit=200",
             "summary": "{base}/api/runs/{run}", "run page": "{base}/runs/{run}"}
    times: list[dict[str, list[float]]] = [{name: [] for name in reads} for _ in run_ids]
    for _ in range(repeat):
        for at, run_id in enumerate(run_ids):
            for name, url in reads.items():
                times[at][name].append(timed_get(url.format(base=base, run=run_id)))
    return [{name: statistics.median(found) for name, found in each.items()} for each in times]


@contextlib.contextmanager
def serving(command: list[str], folder: str, *options: str):
    """``yamleval serve`` of the folder's store on a free port, stopped after use: its address."""
    port = free_port()
    server = subprocess.Popen([*command, "serve", "--store", "results.db", "--port", str(port), *options], cwd=folder,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        if not line.startswith("serving http://"):
            raise SystemExit(line + server.stderr.read())
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="yamleval-r19-")
    write_project(folder, options.items)
    command = [sys.executable, "-m", "yamleval"]
    for _ in range(2):  # two runs alike in one store: one stays unreviewed, the other is reviewed
        subprocess.run([*command, "run", "-q"], cwd=folder, check=False)
    plain_id, reviewed_id = subprocess.run([*command, "runs", "--ids"], cwd=folder, capture_output=True,
                                           text=True).stdout.split()[:2]
    try:
        with serving(command, folder, "--reviews", "--reviewer", "bench") as base:
            figures(base, [plain_id, reviewed_id], 1)  # warm up: every page read once
            posts = [timed_post(f"{base}/api/runs/{reviewed_id}/reviews", {"experiment": "answers", "item": f"i{n}",
                                                                           "verdict": "pass"}) for n in (0, 3, 6)]
            plain, reviewed = figures(base, [plain_id, reviewed_id], options.repeat)
        with serving(command, folder) as base:  # the same reads of the unreviewed run, without --reviews
            figures(base, [plain_id], 1)
            [without] = figures(base, [plain_id], options.repeat)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"R19  {options.items:,} items, breakdown by metadata.topic, medians of {options.repeat}")
    worst = 0.0
    for name in plain:
        ratio = reviewed[name] / plain[name]
        worst = max(worst, ratio)
        print(f"  {name:<11} unreviewed {plain[name]:7.3f} s   reviewed {reviewed[name]:7.3f} s   {ratio:5.2f}x")
    print(f"  review POST  {', '.join(f'{p:.2f}' for p in posts)} s (each counts its experiment once)")
    for name in plain:
        ratio = plain[name] / without[name]
        worst = max(worst, ratio)
        print(f"  {name:<11} without --reviews {without[name]:7.3f} s   with {plain[name]:7.3f} s   {ratio:5.2f}x")
    print(f"  worst ratio {worst:.2f}x: {'within' if worst <= TARGET else 'over'} the {TARGET}x target")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
