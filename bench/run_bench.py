#!/usr/bin/env python
"""The benchmark suite: yamleval against plain Python doing the same work, in the same run.

One command measures every target and prints one table (measured, baseline, ratio, goal,
PASS/FAIL), then details; the figures are also written as JSON.

W1  N items (10,000 and 100,000), an instant runner, ``exact_match`` + ``levenshtein``
    (threshold 0.8), all four report formats, every item stored in SQLite; against a plain
    loop that reads the same JSONL, runs the same function, scores the same way and writes
    one JSON file. Targets: wall <= 10x the loop's; at 100,000 items peak memory <= the loop's.
    (A guard against regressions: real runs wait on model calls, not on the engine.)
W2  1,000 items through the ``http`` runner at concurrency 50, against a local server that
    answers after 50 ms; against ``ThreadPoolExecutor(50)`` + ``requests`` on the same server.
    Target: wall <= 1.1x the thread pool's; also at 2,000 items and a server answering after
    200 ms (users wait: <= 1.1x), and at 5,000 items at 50 ms (client and server saturate the
    CPUs: <= 1.25x).
W3  1,000,000 items from JSONL, JSON and JUnit reports. Target: peak memory within 20% of
    the 100,000-item run of the same config.
W4  1,000 items through the ``http`` runner at concurrency 64, against a local server that
    answers after 200 ms and admits 100 requests a second (a token bucket, burst 10; 429 with
    ``Retry-After: 1`` beyond it): tests/servers/throttled.py. Against the ideal, measured: a
    thread pool that starts exactly as many requests a second as are admitted. Targets:
    adaptive concurrency alone, wall <= 1.2x the ideal (100/s) and 429s <= 5% of requests;
    with ``rate_limit: {requests_per_minute: 5700}`` (95/s), no 429 and wall <= 1.1x its
    ideal (95/s).
R   ``yamleval report`` of a stored 100,000-item run, per format and all together (target:
    <= 3x the W1 loop's wall at that size), and how soon headless chromium makes report.html
    usable (target: <= 2.0 s).
S   ``yamleval validate evals.yaml`` (<= 0.5 s) and ``yamleval --help`` (<= 0.3 s), beside
    ``python -c pass``; and validate against a python importing the same modules, all but
    yamleval's own (<= 1.2x).
V   100,000 items with ``--repeats 3`` against ``--repeats 1`` (peak memory <= 1.2x: flat), and
    ``yamleval compare`` of two stored runs of that size (< 5 s).
M   Variants: 100,000 items x 4 variants of an instant runner (all four reports) against the same
    run with 1 variant (peak memory <= 1.3x: flat in items x variants), and 1,000 items x 4
    variants over W2's 50 ms server at concurrency 50 against ``ThreadPoolExecutor(50)`` + ``requests``
    making the same 4,000 calls (wall <= 1.15x).
D   Distributed: a runner that burns 50 ms of CPU in Python per item, 300 items, on Ray
    (``executor: {uses: ray}``, a cluster of 2 CPUs the run starts itself; 4 tasks in flight,
    two per worker) against a plain-Ray script that starts its own ``ray.init(num_cpus=2)`` and
    runs the same 300 tasks. Target: the whole yamleval process <= 1.15x the plain script's.
C   The answer cache. 1,000 items judged by a model (temperature 0) at a local OpenAI-compatible
    server that answers after 50 ms, one at a time: a run answered wholly from the cache against
    the uncached run (>= 20x faster). And W2 with ``cache: {runner: true}`` on an empty cache
    against the cache off (<= 1.05x).

Every figure is a separate child process: wall time is ``time.perf_counter`` around it, peak
memory its ``ru_maxrss`` from ``os.wait4``. yamleval and its baseline run alternately; the
median of ``--repeat`` runs counts, the fastest is shown in brackets. yamleval and the plain
code must report the same counts, or the workload fails.

    python bench/run_bench.py                      # everything (a few minutes on 2 cores)
    python bench/run_bench.py --quick              # small sizes, 1 run each: a smoke run
    python bench/run_bench.py --only W1,S --repeat 5 --json /tmp/bench.json

The exit code is 0 when every target passes, 1 when one fails or a child process fails.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)

W1_RATIO = 10.0       # yamleval wall <= 10x the plain loop's: a regression guard, not a goal to optimise
W1_MEMORY = 1.0       # at the largest size, yamleval's peak RSS <= the loop's
W2_RATIO = 1.1        # yamleval wall <= 1.1x the bare thread pool's
W2_ITEMS, W2_DELAY, W2_CONCURRENCY = 1000, 0.05, 50
W2_LARGE = 5000       # W2 again at this size (not with --quick): client and server saturate the CPUs
W2_LARGE_RATIO = 1.25  # there, where the CPU is the limit
W2_WAIT, W2_WAIT_DELAY = 2000, 0.2  # W2 where users wait: a server answering after 200 ms (not with --quick)
W3_MEMORY = 1.2       # peak RSS at the large size <= 1.2x the small size's
W4_ITEMS, W4_CONCURRENCY, W4_DELAY = 1000, 64, 0.2
W4_RATE, W4_BURST, W4_RPM = 100, 10, 5700     # the server admits 100/s; the rate limit asks for 95/s
W4_ADAPTIVE, W4_SHARE, W4_LIMITED = 1.2, 0.05, 1.1  # wall ratios to the ideal; refused share of requests
THROTTLED_SERVER = os.path.join(REPO_DIR, "tests", "servers", "throttled.py")
R_RATIO = 3.0         # rendering all formats <= 3x the W1 loop's wall at the same size
R_USABLE = 2.0        # report.html usable in chromium within 2 s
R_SIZE_MB = 15.0      # report.html of the 100,000-item run at most 15 MB
R_LONG_MB = 25.0      # report.html of 50,000 items with 10 KB answers within its default budget, 25 MB
S_VALIDATE, S_HELP = 0.5, 0.3
S_IMPORTS = 1.2  # yamleval validate <= 1.2x a python importing the same modules (all but yamleval's own)
V_MEMORY, V_COMPARE = 1.2, 5.0  # repeats 3 peak RSS <= 1.2x repeats 1; compare of two stored runs < 5 s
V_SERVED_FIRST, V_SERVED_MEMORY = 1.0, 1.2  # a served run's page: first rows <= 1 s; server peak <= 1.2x at 1,000 items

FORMATS = ("html", "junit", "json", "markdown")
FILES = {"html": "report.html", "junit": "junit.xml", "json": "results.json", "markdown": "summary.md"}

# --- files written into the temporary directory -------------------------------------------

PLUGIN = '''\
"""The runner of the benchmark: answers at once from a table."""
ANSWERS = %(answers)r


def answer(input):
    """Instant: look the question up and fill in the order number."""
    order, _, question = input.partition(": ")
    return ANSWERS[question].replace("{order}", order[6:])
'''

SERVER = '''\
"""A local service answering like the ``answer`` runner, after a fixed delay; prints its port."""
import http.server
import json
import sys
import time

sys.path.insert(0, %(folder)r)
from bench_plugins import answer

DELAY = %(delay)r


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"      # keep-alive, as a real service
    disable_nagle_algorithm = True     # otherwise every keep-alive reply waits ~40 ms

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        question = json.loads(self.rfile.read(length))["input"]
        time.sleep(DELAY)
        body = json.dumps({"output": answer(question)}).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256           # 50 clients connecting at once must not be refused


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
'''

FLOOR = '''\
"""The floor: the benchmark's work as plain Python (read, run, score, write one JSON file)."""
import json
import sys
import threading
import time

import Levenshtein

sys.path.insert(0, %(folder)r)
from bench_plugins import answer

THRESHOLD = 0.8


def score(row, output, latency_ms):
    expected = row.get("expected")
    exact = output == expected
    longest = max(len(output), len(expected))
    similarity = 1.0 - Levenshtein.distance(output, expected) / longest if longest else 1.0
    close = similarity >= THRESHOLD
    return {
        "id": row["id"], "index": row["index"], "status": "passed" if exact and close else "failed",
        "input": row["input"], "expected": expected, "output": output,
        "latency_ms": round(latency_ms, 3), "error": None,
        "scores": {
            "exact_match": {"score": 1.0 if exact else 0.0, "status": "success", "threshold": None,
                            "passed": exact, "reason": None},
            "levenshtein": {"score": similarity, "status": "success", "threshold": THRESHOLD,
                            "passed": close, "reason": None},
        },
    }


def timed(function, row):
    started = time.perf_counter()
    output = function(row["input"])
    return row, output, (time.perf_counter() - started) * 1000.0


def http_caller(url):
    """POST {"input": ...} to url with one keep-alive session per thread; the reply's "output"."""
    import requests

    local = threading.local()

    def call(question):
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        response = session.post(url, json={"input": question}, timeout=30)
        response.raise_for_status()
        return response.json()["output"]
    return call


def paced(call, rate):
    """``call`` started exactly ``rate`` times a second at most: the ideal client of a server that
    admits that many (it knows the rate; a request refused all the same is sent again at once)."""
    import requests

    lock = threading.Lock()
    state = {"next": 0.0}

    def go(question):
        with lock:
            now = time.perf_counter()
            start = state["next"] = max(now, state["next"]) + 1.0 / rate
        time.sleep(max(0.0, start - 1.0 / rate - now))
        while True:
            try:
                return call(question)
            except requests.HTTPError as exc:
                if exc.response.status_code != 429:
                    raise
    return go


def main(data, out, mode, concurrency, url=None, rate=None):
    rows = []
    with open(data, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            row = json.loads(line)
            row["index"] = index
            rows.append(row)
    if mode in ("http", "paced"):
        from concurrent.futures import ThreadPoolExecutor

        call = http_caller(url)  # imports requests before the clock starts, as yamleval's start-up does
        if mode == "paced":
            call = paced(call, float(rate))
    started = time.perf_counter()
    if mode in ("http", "paced"):
        with ThreadPoolExecutor(concurrency) as pool:
            done = list(pool.map(lambda row: timed(call, row), rows))
    else:
        done = [timed(answer, row) for row in rows]
    items = [score(row, output, latency) for row, output, latency in done]
    duration_s = time.perf_counter() - started  # the run phase, as yamleval's summary.duration_ms
    summary = {"total": len(items), "passed": sum(i["status"] == "passed" for i in items),
               "failed": sum(i["status"] == "failed" for i in items),
               "scorers": {sid: {"passed": sum(i["scores"][sid]["passed"] for i in items),
                                 "failed": sum(not i["scores"][sid]["passed"] for i in items)}
                           for sid in ("exact_match", "levenshtein")}}
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"summary": summary, "duration_s": duration_s, "items": items},
                                ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:])
'''

CONFIG = '''\
version: 1
reports: {formats: [%(formats)s]}
experiments:
  - id: %(id)s
    dataset: {file: %(file)s}
    runner: %(runner)s
    scorers:
      - exact_match
      - {uses: levenshtein, threshold: 0.8}
'''

INSTANT_RUNNER = "bench_plugins:answer"
HTTP_RUNNER = '{uses: http, with: {url: "%s", body: {input: "{{ input }}"}, output: output}}'
W4_RUNNER = '{uses: http, with: {url: "%s", body: {input: "{{ input }}"}, output: output%s}}'

BROWSER = '''\
"""Time to usable of one report.html in headless chromium, with html_report's measurement."""
import json
import os
import statistics
import sys

sys.path.insert(0, sys.argv[1])
url, repeat = sys.argv[2], int(sys.argv[3])
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    print(json.dumps({"skip": "playwright is not installed"}))
    sys.exit(0)
import html_report

if not os.access(html_report.CHROMIUM, os.X_OK):
    print(json.dumps({"skip": html_report.CHROMIUM + " is missing"}))
    sys.exit(0)
with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=html_report.CHROMIUM, args=html_report.ARGS)
    try:
        html_report.usable_seconds(browser, url)  # warm-up: chromium started, the file cached
        timings = [html_report.usable_seconds(browser, url) for _ in range(repeat)]
    finally:
        browser.close()
print(json.dumps({"first_row": [t[0] for t in timings], "usable": [t[1] for t in timings]}))
'''

# --- realistic short texts -----------------------------------------------------------------

QUESTIONS = {
    "when will my parcel arrive?": "Order {order} ships today and arrives in 3 to 5 business days.",
    "can I change the delivery address?": "Yes: the address of order {order} can change until it ships.",
    "how do I return an item?": "Print the return label for order {order} from your account page.",
    "where is my refund?": "The refund for order {order} reaches your card within 10 days.",
    "can I cancel the order?": "Order {order} is cancelled; you will get an email confirming it.",
    "why was I charged twice?": "Order {order} was charged once; the second line is a hold that lapses.",
    "is the item in stock?": "Everything in order {order} is in stock and leaves the warehouse today.",
    "can I pay with a gift card?": "Gift cards work for order {order}; enter the code at checkout.",
    "do you ship abroad?": "We ship order {order} to 40 countries; duties are paid on delivery.",
    "the box arrived damaged": "Sorry about order {order}: a replacement is on its way at no cost.",
    "how do I track the parcel?": "Track order {order} with the link in your shipping email.",
    "can I add an item to my order?": "Order {order} is packed; please place a second order instead.",
}
SWAPS = [("today", "tomorrow"), ("3 to 5", "5 to 7"), ("10 days", "two weeks"), ("Yes", "No"),
         ("email", "text message"), ("once", "twice"), ("40", "45"), ("on its way", "being sent")]


def make_rows(count: int, seed: int = 20240607):
    """Rows whose expected equals the runner's answer for ~70% of items, differs slightly otherwise."""
    rng = random.Random(seed)
    questions = list(QUESTIONS)
    for index in range(count):
        question = rng.choice(questions)
        order = str(rng.randrange(100000, 999999))
        answer = QUESTIONS[question].replace("{order}", order)
        draw = rng.random()
        if draw < 0.70:
            expected = answer
        elif draw < 0.85:    # a small slip: one character off (similar, not exact)
            at = rng.randrange(len(answer))
            expected = answer[:at] + rng.choice("aeiorst") + answer[at + 1:]
        else:                # a real difference: reworded or truncated
            old, new = rng.choice([s for s in SWAPS if s[0] in answer] or [("", "")])
            expected = answer.replace(old, new) if old else answer[: len(answer) // 2]
            if draw > 0.95:
                expected = expected[: len(expected) * 2 // 3]
        yield {"id": f"q{index + 1:06d}", "input": f"Order {order}: {question}", "expected": expected}


def write_datasets(paths_and_counts: list[tuple[str, int]]) -> None:
    """Write the first ``count`` rows of one generated sequence into each file, in one pass.

    The rows stream from the generator, so this process stays small even at 1,000,000 rows.
    """
    total = max(count for _, count in paths_and_counts)
    outs = [(open(path, "w", encoding="utf-8"), count) for path, count in paths_and_counts]
    try:
        for index, row in enumerate(make_rows(total)):
            line = json.dumps(row, ensure_ascii=False) + "\n"
            for out, count in outs:
                if index < count:
                    out.write(line)
    finally:
        for out, _ in outs:
            out.close()


# --- measuring ------------------------------------------------------------------------------

class Failed(Exception):
    pass


CHILD_ENV = dict(os.environ)


def child_env(folder: str) -> None:
    """Children write and reuse bytecode, as an installed package does, in a cache of their own.

    With PYTHONDONTWRITEBYTECODE set, every run would compile yamleval's sources again (~40 ms)
    and the figure would measure the compiler. The cache lives in the temporary folder,
    so nothing is written next to the sources.
    """
    CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = os.path.join(folder, "pycache")


def measure(command: list[str], cwd: str, log: str, ok_codes=(0,)) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process."""
    with open(log, "wb") as out:
        started = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=CHILD_ENV)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
    child.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in ok_codes:
        with open(log, encoding="utf-8", errors="replace") as handle:
            tail = handle.read()[-2000:]
        raise Failed(f"{' '.join(command)} exited with {code}:\n{tail}")
    return wall, usage.ru_maxrss / 1024.0


def yamleval_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "yamleval")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "yamleval"]


COUNTS = r"""
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
if sys.argv[2] == "yamleval":
    run = data["experiments"][0]["summary"]
    counts = {"total": run["total"], "passed": run["passed"], "failed": run["failed"],
              "errored": run["errored"], "duration_s": run["duration_ms"] / 1000.0,
              "run_id": data["run_id"], "throttling": run.get("throttling"),
              "scorers": {sid: {"passed": s["passed"], "failed": s["failed"]}
                          for sid, s in run["scorers"].items()}}
else:
    counts = dict(data["summary"], errored=0, duration_s=data["duration_s"])
print(json.dumps(counts))
"""


def counts(path: str, kind: str) -> dict:
    """The counts of a results file, read in a child process.

    Not in this process: a child's ru_maxrss includes the peak of the process it was
    forked from, so this process must stay small for the memory figures to be right.
    """
    done = subprocess.run([sys.executable, "-c", COUNTS, path, kind], capture_output=True, text=True,
                          env=CHILD_ENV)
    if done.returncode:
        raise Failed(f"cannot read {path}: {done.stderr[-1000:]}")
    return json.loads(done.stdout)


def check_same(tool: dict, floor: dict, what: str) -> None:
    tool = {k: v for k, v in tool.items() if k not in ("duration_s", "run_id", "throttling")}
    if tool != floor:
        raise Failed(f"{what}: yamleval and the plain code disagree:\n  yamleval {tool}\n  plain    {floor}")


def forget_store(path: str) -> None:
    """Every measured run starts on an empty database, so runs do not slow down as it grows."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def med(runs: list[tuple[float, float]], column: int) -> float:
    return statistics.median(r[column] for r in runs)


def low(runs: list[tuple[float, float]], column: int) -> float:
    return min(r[column] for r in runs)


def seconds(runs: list[tuple[float, float]]) -> str:
    return f"{med(runs, 0):.2f} s [{low(runs, 0):.2f}]"


def progress(message: str) -> None:
    """Progress goes to stderr so that stdout holds only the table and its details."""
    print(f"  ... {message}", file=sys.stderr, flush=True)


# --- the suite ------------------------------------------------------------------------------

@dataclass
class Target:
    id: str
    measured: float | None
    baseline: float | None
    ratio: float | None
    goal: str
    passed: bool | None       # None: skipped
    unit: str = "s"
    note: str = ""
    reference: bool = False   # what the machine allows without yamleval: shown, not counted


@dataclass
class Suite:
    """What the workloads share: the folder, the settings, and the figures gathered so far."""
    folder: str
    repeat: int
    quick: bool
    targets: list[Target] = field(default_factory=list)
    details: dict = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    w1_runs: dict = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def target(self, id: str, measured, baseline, ratio, goal: str, passed, unit: str = "s", note: str = "",
               reference: bool = False):
        self.targets.append(Target(id, measured, baseline, ratio, goal, passed, unit, note, reference))

    def say(self, line: str) -> None:
        self.lines.append(line)


def write_config(suite: Suite, name: str, data: str, runner: str, formats) -> str:
    config = suite.path(f"{name}.yaml")
    with open(config, "w", encoding="utf-8") as out:
        out.write(CONFIG % {"id": name, "file": os.path.basename(data), "runner": runner,
                            "formats": ", ".join(formats)})
    return config


def run_command(suite: Suite, name: str, config: str, extra: tuple = ()) -> tuple[list[str], str, str]:
    """The ``yamleval run`` of one config, its report folder and its own database."""
    reports, store = suite.path(f"reports-{name}"), suite.path(f"{name}.db")
    command = yamleval_command() + ["run", config, "--quiet", "--report-dir", reports, "--store", store, *extra]
    return command, reports, store


def compare(suite: Suite, name: str, tool_cmd: list[str], reports: str, store: str,
            floor_cmd: list[str], floor_out: str, warm_up: bool) -> dict:
    """Run yamleval and the floor ``repeat`` times each, alternating, and check they agree."""
    tool_log, floor_log = suite.path(f"{name}-yamleval.log"), suite.path(f"{name}-floor.log")
    tool, floor, run_s, floor_run_s = [], [], [], []
    if warm_up:  # fills the bytecode cache and the page cache; not counted
        forget_store(store)
        measure(tool_cmd, suite.folder, tool_log, ok_codes=(0, 1))
        measure(floor_cmd, suite.folder, floor_log)
    for _ in range(suite.repeat):
        forget_store(store)
        # exit code 1 is "items failed", which is the expected outcome here
        tool.append(measure(tool_cmd, suite.folder, tool_log, ok_codes=(0, 1)))
        floor.append(measure(floor_cmd, suite.folder, floor_log))
        found = counts(os.path.join(reports, "results.json"), "yamleval")
        run_s.append(found["duration_s"])
        expected = counts(floor_out, "floor")
        floor_run_s.append(expected.pop("duration_s"))
        check_same(found, expected, name)
    return {"tool": tool, "floor": floor, "counts": expected, "run_s": statistics.median(run_s),
            "floor_run_s": statistics.median(floor_run_s),
            "run_id": found["run_id"], "store": store, "reports": reports}


def floor_command(suite: Suite, data: str, out: str, mode: str, concurrency: int = 1, url: str = "",
                  rate: float | None = None) -> list[str]:
    return ([sys.executable, suite.path("floor.py"), data, out, mode, str(concurrency)] + ([url] if url else [])
            + ([str(rate)] if rate else []))


def w1_run(suite: Suite, size: int, warm_up: bool) -> dict:
    """yamleval (all four reports, stored) and the loop at one size; kept for R to reuse."""
    if size in suite.w1_runs:
        return suite.w1_runs[size]
    name = f"w1-{size}"
    data = suite.path(f"{name}.jsonl")
    write_datasets([(data, size)])
    config = write_config(suite, name, data, INSTANT_RUNNER, FORMATS)
    tool_cmd, reports, store = run_command(suite, name, config)
    floor_out = suite.path(f"floor-{name}.json")
    progress(f"W1 {size:,} items, {suite.repeat} x (yamleval, loop)")
    result = compare(suite, name, tool_cmd, reports, store, floor_command(suite, data, floor_out, "loop"),
                     floor_out, warm_up)
    suite.w1_runs[size] = result
    return result


def one_item_run(suite: Suite) -> list[tuple[float, float]]:
    """A whole ``yamleval run`` of one item: what every run costs regardless of its size."""
    data = suite.path("one.jsonl")
    write_datasets([(data, 1)])
    command, _, store = run_command(suite, "one", write_config(suite, "one", data, INSTANT_RUNNER, FORMATS))
    log = suite.path("one.log")
    runs = []
    for index in range(max(3, suite.repeat) + 1):
        forget_store(store)
        wall_rss = measure(command, suite.folder, log, ok_codes=(0, 1))
        if index:  # the first is a warm-up
            runs.append(wall_rss)
    return runs


def workload_w1(suite: Suite) -> None:
    sizes = [2000] if suite.quick else [10_000, 100_000]
    one = one_item_run(suite)
    suite.say(f"W1  fixed cost: a 1-item yamleval run {seconds(one)}, {med(one, 1):.0f} MiB")
    suite.details["W1"] = {"one_item": {"wall_s": med(one, 0), "rss_mib": med(one, 1)}}
    for size in sizes:
        r = w1_run(suite, size, warm_up=size == sizes[0])
        tool, floor, c = r["tool"], r["floor"], r["counts"]
        ratio = med(tool, 0) / med(floor, 0)
        suite.target(f"W1 {size:,} wall", med(tool, 0), med(floor, 0), ratio, f"<= {W1_RATIO:g}x loop",
                     ratio <= W1_RATIO, note=f"fastest {low(tool, 0):.2f} / {low(floor, 0):.2f}")
        per_item = (med(tool, 0) - med(one, 0)) / size * 1000
        suite.say(f"W1  {size:,} items: yamleval {seconds(tool)} {med(tool, 1):.0f} MiB, "
                  f"loop {seconds(floor)} {med(floor, 1):.0f} MiB; counts equal ({c['passed']:,} passed, "
                  f"{c['failed']:,} failed)")
        suite.say(f"    per item: yamleval {per_item:.3f} ms beyond its 1-item run, loop "
                  f"{med(floor, 0) / size * 1000:.3f} ms; run phase: yamleval {r['run_s']:.2f} s, "
                  f"loop {r['floor_run_s']:.2f} s")
        suite.details["W1"][str(size)] = {"yamleval": r["tool"], "loop": r["floor"], "counts": c,
                                          "run_phase_s": r["run_s"], "loop_run_phase_s": r["floor_run_s"],
                                          "per_item_ms": per_item}
    size = sizes[-1]
    tool, floor = suite.w1_runs[size]["tool"], suite.w1_runs[size]["floor"]
    ratio = med(tool, 1) / med(floor, 1)
    suite.target(f"W1 {size:,} memory", med(tool, 1), med(floor, 1), ratio, f"<= {W1_MEMORY:g}x loop",
                 ratio <= W1_MEMORY, unit="MiB")


def start_server(suite: Suite, command: list[str] | None = None, delay: float = W2_DELAY) -> tuple[subprocess.Popen, int]:
    """A local service (W2's, answering after ``delay``, unless ``command`` starts another) in a
    child process of its own, which prints its port; returns it and its port."""
    if command is None:
        script = suite.path(f"server-{delay * 1000:.0f}ms.py")
        with open(script, "w", encoding="utf-8") as out:
            out.write(SERVER % {"folder": suite.folder, "delay": delay})
        command = [sys.executable, script]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=CHILD_ENV, text=True)
    line = server.stdout.readline().strip()
    if not line.isdigit():
        stop_server(server)
        raise Failed(f"the test server did not start (printed {line!r})")
    return server, int(line)


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def workload_w2(suite: Suite) -> None:
    w2_run(suite, W2_ITEMS, W2_DELAY, W2_RATIO)
    if not suite.quick:
        w2_run(suite, W2_WAIT, W2_WAIT_DELAY, W2_RATIO)
        w2_run(suite, W2_LARGE, W2_DELAY, W2_LARGE_RATIO)


def w2_run(suite: Suite, items: int, delay: float, goal: float) -> None:
    ms = f"{delay * 1000:.0f} ms"
    name = "w2" if (items, delay) == (W2_ITEMS, W2_DELAY) else f"w2-{items}-{delay * 1000:.0f}ms"
    label = "W2" if (items, delay) == (W2_ITEMS, W2_DELAY) else f"W2 {items:,} at {ms}"
    data = suite.path(f"{name}.jsonl")
    write_datasets([(data, items)])
    server, port = start_server(suite, delay=delay)
    try:
        url = f"http://127.0.0.1:{port}/"
        config = write_config(suite, name, data, HTTP_RUNNER % url, ["json"])
        tool_cmd, reports, store = run_command(suite, name, config, ("--concurrency", str(W2_CONCURRENCY)))
        floor_out = suite.path(f"floor-{name}.json")
        progress(f"W2 {items:,} items over HTTP at {ms}, {suite.repeat} x (yamleval, thread pool)")
        r = compare(suite, name, tool_cmd, reports, store,
                    floor_command(suite, data, floor_out, "http", W2_CONCURRENCY, url), floor_out, warm_up=True)
    finally:
        stop_server(server)
    tool, floor, c = r["tool"], r["floor"], r["counts"]
    ratio = med(tool, 0) / med(floor, 0)
    ideal = items * delay / W2_CONCURRENCY
    suite.target(f"{label} http wall", med(tool, 0), med(floor, 0), ratio, f"<= {goal:g}x pool", ratio <= goal,
                 note=f"fastest {low(tool, 0):.2f} / {low(floor, 0):.2f}")
    suite.say(f"W2  {items:,} items, server answers after {ms}, concurrency "
              f"{W2_CONCURRENCY} (ideal {ideal:.2f} s): yamleval {seconds(tool)} {med(tool, 1):.0f} MiB, "
              f"ThreadPoolExecutor({W2_CONCURRENCY}) + requests {seconds(floor)} {med(floor, 1):.0f} MiB")
    suite.say(f"    counts equal ({c['passed']:,} passed, {c['failed']:,} failed); run phase (first item to "
              f"last): yamleval {r['run_s']:.2f} s = {r['run_s'] / ideal:.2f}x ideal, pool {r['floor_run_s']:.2f} s "
              f"= {r['floor_run_s'] / ideal:.2f}x ideal")
    suite.details[label] = {"yamleval": tool, "pool": floor, "counts": c, "run_phase_s": r["run_s"],
                            "pool_run_phase_s": r["floor_run_s"], "ideal_s": ideal}


def workload_w3(suite: Suite, repeat: int) -> None:
    small, large = (2_000, 20_000) if suite.quick else (100_000, 1_000_000)
    progress(f"W3 writing {large:,} rows")
    files = {size: suite.path(f"w3-{size}.jsonl") for size in (small, large)}
    write_datasets([(files[small], small), (files[large], large)])
    commands = {}
    for size, data in files.items():
        config = write_config(suite, f"w3-{size}", data, INSTANT_RUNNER, ["json", "junit"])
        commands[size] = run_command(suite, f"w3-{size}", config)
    runs: dict[int, list] = {small: [], large: []}
    found, exports = {}, {}
    for index in range(repeat):
        for size in (small, large):
            progress(f"W3 {size:,} items, run {index + 1} of {repeat}")
            command, reports, store = commands[size]
            forget_store(store)
            runs[size].append(measure(command, suite.folder, suite.path(f"w3-{size}.log"), ok_codes=(0, 1)))
            found[size] = counts(os.path.join(reports, "results.json"), "yamleval")
            if found[size]["total"] != size:
                raise Failed(f"W3: yamleval ran {found[size]['total']:,} items of {size:,}")
            if index == repeat - 1:  # the stored run exported, streaming: its memory is flat too
                progress(f"W3 yamleval export of the {size:,}-item run")
                out = suite.path(f"w3-{size}.csv")
                exports[size] = measure(yamleval_command() + ["export", "--store", store, "-o", out],
                                        suite.folder, suite.path(f"w3-{size}-export.log"))
                os.remove(out)
        forget_store(commands[large][2])  # a 1,000,000-item database is large; free the disk at once
    ratio = med(runs[large], 1) / med(runs[small], 1)
    suite.target(f"W3 {large:,} memory", med(runs[large], 1), med(runs[small], 1), ratio,
                 f"<= {W3_MEMORY:g}x {small:,}", ratio <= W3_MEMORY, unit="MiB")
    for size in (small, large):
        suite.say(f"W3  {size:,} items (JSON + JUnit): {seconds(runs[size])}, {med(runs[size], 1):.0f} MiB, "
                  f"{med(runs[size], 0) / size * 1000:.3f} ms per item, run phase {found[size]['duration_s']:.2f} s, "
                  f"{found[size]['passed']:,} passed; no loop baseline (n/a)")
    ratio = exports[large][1] / exports[small][1]
    suite.target(f"W3 {large:,} export memory", exports[large][1], exports[small][1], ratio,
                 f"<= {W3_MEMORY:g}x {small:,}", ratio <= W3_MEMORY, unit="MiB")
    for size in (small, large):
        suite.say(f"W3  yamleval export (CSV) of the {size:,}-item run: {exports[size][0]:.1f} s, "
                  f"{exports[size][1]:.0f} MiB")
    suite.details["W3"] = {str(size): {"runs": runs[size], "per_item_ms": med(runs[size], 0) / size * 1000,
                                       "run_phase_s": found[size]["duration_s"], "export": exports[size]}
                           for size in (small, large)}


def workload_v(suite: Suite) -> None:
    """Verdicts: a run with ``repeats: 3`` keeps the memory of a run without (flat), and
    ``yamleval compare`` of two stored runs of that size takes under ``V_COMPARE`` seconds."""
    size = 2_000 if suite.quick else 100_000
    data = suite.path(f"v-{size}.jsonl")
    write_datasets([(data, size)])
    commands = {}
    for repeats in (1, 3):
        config = write_config(suite, f"v-{repeats}", data, INSTANT_RUNNER, ["json"])
        commands[repeats] = run_command(suite, f"v-{repeats}", config, ("--repeats", str(repeats)))
    runs: dict[int, list] = {1: [], 3: []}
    for index in range(suite.repeat):
        for repeats, (command, reports, store) in commands.items():
            progress(f"V {size:,} items, repeats {repeats}, run {index + 1} of {suite.repeat}")
            forget_store(store)
            runs[repeats].append(measure(command, suite.folder, suite.path(f"v-{repeats}.log"), ok_codes=(0, 1)))
            if counts(os.path.join(reports, "results.json"), "yamleval")["total"] != size:
                raise Failed(f"V: yamleval did not run all {size:,} items with repeats {repeats}")
    ratio = med(runs[3], 1) / med(runs[1], 1)
    suite.target("V repeats 3 memory", med(runs[3], 1), med(runs[1], 1), ratio, f"<= {V_MEMORY:g}x repeats 1",
                 ratio <= V_MEMORY, unit="MiB")
    command, _, store = commands[1]
    measure(command, suite.folder, suite.path("v-1.log"), ok_codes=(0, 1))  # a second run beside the last one
    listed = subprocess.run(yamleval_command() + ["runs", "--ids", "-n", "2", "--store", store], capture_output=True,
                            text=True, cwd=suite.folder, env=CHILD_ENV)
    candidate, base = listed.stdout.split()
    progress(f"V compare of two stored {size:,}-item runs, {suite.repeat} x")
    compared = [measure(yamleval_command() + ["compare", base, candidate, "--store", store, "--format", "json"],
                        suite.folder, suite.path("v-compare.log")) for _ in range(suite.repeat)]
    suite.target(f"V compare {size:,}", med(compared, 0), None, None, f"< {V_COMPARE:g} s",
                 med(compared, 0) < V_COMPARE)
    suite.say(f"V   {size:,} items: repeats 1 {seconds(runs[1])} {med(runs[1], 1):.0f} MiB, repeats 3 "
              f"{seconds(runs[3])} {med(runs[3], 1):.0f} MiB; compare of two stored runs {seconds(compared)} "
              f"{med(compared, 1):.0f} MiB")
    suite.details["V"] = {"repeats": {str(k): v for k, v in runs.items()}, "compare": compared}
    served_figures(suite, store, candidate, size)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serve_page(suite: Suite, store: str, run_id: str) -> tuple[dict, float]:
    """A fresh ``yamleval serve`` over ``store``: the run's page in chromium (first row, usable), and
    the server's peak memory (MiB) when that is done."""
    port = _free_port()
    server = subprocess.Popen(yamleval_command() + ["serve", "--store", store, "--port", str(port)], cwd=suite.folder,
                              env=CHILD_ENV, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        if not line.startswith("serving"):
            raise Failed(f"yamleval serve did not start: {line}{server.stderr.read()[-2000:]}")
        browser = browser_usable(suite, f"http://127.0.0.1:{port}/runs/{run_id}", suite.repeat)
        with open(f"/proc/{server.pid}/status", encoding="ascii") as status:
            peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) / 1024.0
        return browser, peak
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stderr.close()


def served_figures(suite: Suite, store: str, run_id: str, size: int) -> None:
    """The Eval Center: the first rows of the ``size``-item run's page within V_SERVED_FIRST seconds,
    and the server's peak memory serving it within V_SERVED_MEMORY x its memory serving a 1,000-item run."""
    small = suite.path("v-served-1000.jsonl")
    write_datasets([(small, 1000)])
    command, _, small_store = run_command(suite, "v-served", write_config(suite, "v-served", small, INSTANT_RUNNER,
                                                                          ["json"]))
    forget_store(small_store)
    measure(command, suite.folder, suite.path("v-served.log"), ok_codes=(0, 1))
    listed = subprocess.run(yamleval_command() + ["runs", "--ids", "-n", "1", "--store", small_store],
                            capture_output=True, text=True, cwd=suite.folder, env=CHILD_ENV)
    progress(f"V served pages of 1,000 and {size:,} items in chromium, {suite.repeat} x")
    small_browser, small_peak = _serve_page(suite, small_store, listed.stdout.strip())
    browser, peak = _serve_page(suite, store, run_id)
    if "skip" in browser:
        suite.target("V served first rows", None, None, None, f"<= {V_SERVED_FIRST:g} s", None, note=browser["skip"])
        return
    first = statistics.median(browser["first_row"])
    suite.target(f"V served {size:,} first rows", first, statistics.median(small_browser["first_row"]), None,
                 f"<= {V_SERVED_FIRST:g} s", first <= V_SERVED_FIRST, note=f"fastest {min(browser['first_row']):.2f}")
    suite.target(f"V served {size:,} server memory", peak, small_peak, peak / small_peak,
                 f"<= {V_SERVED_MEMORY:g}x serving 1,000", peak / small_peak <= V_SERVED_MEMORY, unit="MiB")
    suite.say(f"V   served page of {size:,} items: first rows {first:.2f} s [{min(browser['first_row']):.2f}], usable"
              f" {statistics.median(browser['usable']):.2f} s; server peak {peak:.0f} MiB, serving 1,000 items"
              f" {small_peak:.0f} MiB ({peak / small_peak:.2f}x)")
    suite.details["V"]["served"] = {"browser": browser, "peak": peak, "small_browser": small_browser,
                                    "small_peak": small_peak}


M_SIZE, M_VARIANTS, M_MEMORY, M_RATIO = 100_000, 4, 1.3, 1.15
VARIANT_COUNTS = r"""
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
variants = data["experiments"][0]["variants"]
print(json.dumps({"variants": len(variants), "items": [v["summary"]["total"] for v in variants],
                  "run_s": sum(v["summary"]["duration_ms"] for v in variants) / 1000.0}))
"""


def variants_config(suite: Suite, name: str, data: str, runner: str, count: int, formats) -> str:
    """W1's config with ``count`` variants (each setting a variable no template reads: the same work)."""
    config = write_config(suite, name, data, runner, formats)
    with open(config, "a", encoding="utf-8") as out:
        out.write("    variants:\n" + "".join(f"      - {{id: v{n}, vars: {{n: {n}}}}}\n" for n in range(count)))
    return config


def variant_counts(path: str) -> dict:
    done = subprocess.run([sys.executable, "-c", VARIANT_COUNTS, path], capture_output=True, text=True, env=CHILD_ENV)
    if done.returncode:
        raise Failed(f"cannot read {path}: {done.stderr[-1000:]}")
    return json.loads(done.stdout)


def workload_m(suite: Suite) -> None:
    """Variants: ``M_VARIANTS`` variants of an instant runner on the same items keep the peak memory
    of one variant (flat in items x variants), and over W2's 50 ms server at concurrency 50 the
    variants take about their ideal wall time (variants x items x 50 ms / 50)."""
    size = 2_000 if suite.quick else M_SIZE
    data = suite.path(f"m-{size}.jsonl")
    write_datasets([(data, size)])
    runs: dict[int, list] = {1: [], M_VARIANTS: []}
    for count in runs:
        command, reports, store = run_command(suite, f"m-{count}", variants_config(
            suite, f"m-{count}", data, INSTANT_RUNNER, count, FORMATS))
        for index in range(suite.repeat):
            progress(f"M {size:,} items x {count} variant(s), run {index + 1} of {suite.repeat}")
            forget_store(store)
            runs[count].append(measure(command, suite.folder, suite.path(f"m-{count}.log"), ok_codes=(0, 1)))
            found = variant_counts(os.path.join(reports, "results.json"))
            if found["items"] != [size] * count:
                raise Failed(f"M: yamleval ran {found['items']} items, not {size:,} in each of {count} variants")
        forget_store(store)
    ratio = med(runs[M_VARIANTS], 1) / med(runs[1], 1)
    suite.target(f"M {size:,} x {M_VARIANTS} memory", med(runs[M_VARIANTS], 1), med(runs[1], 1), ratio,
                 f"<= {M_MEMORY:g}x 1 variant", ratio <= M_MEMORY, unit="MiB")
    http_data, pool_data = suite.path("m-http.jsonl"), suite.path("m-pool.jsonl")
    write_datasets([(http_data, W2_ITEMS), (pool_data, M_VARIANTS * W2_ITEMS)])
    server, port = start_server(suite)
    http: dict[int, list] = {1: [], M_VARIANTS: []}
    phases: dict[int, list] = {1: [], M_VARIANTS: []}
    pool, pool_phases, pool_out = [], [], suite.path("m-pool.json")
    try:
        # what this machine allows any client: the same calls from a bare thread pool
        command = floor_command(suite, pool_data, pool_out, "http", W2_CONCURRENCY, f"http://127.0.0.1:{port}/")
        measure(command, suite.folder, suite.path("m-pool.log"))  # warm-up, not counted
        for index in range(suite.repeat):
            progress(f"M {M_VARIANTS * W2_ITEMS:,} calls from ThreadPoolExecutor({W2_CONCURRENCY}), run {index + 1} of {suite.repeat}")
            pool.append(measure(command, suite.folder, suite.path("m-pool.log")))
            pool_phases.append(counts(pool_out, "floor")["duration_s"])
        for count in http:  # one variant too: what the machine gives one variant's 1,000 items just now
            name = f"m-http-{count}"
            config = variants_config(suite, name, http_data, HTTP_RUNNER % f"http://127.0.0.1:{port}/", count, ["json"])
            command, reports, store = run_command(suite, name, config, ("--concurrency", str(W2_CONCURRENCY)))
            forget_store(store)
            measure(command, suite.folder, suite.path(f"{name}.log"), ok_codes=(0, 1))  # warm-up, not counted
            for index in range(suite.repeat):
                progress(f"M {W2_ITEMS:,} items x {count} variant(s) over HTTP, run {index + 1} of {suite.repeat}")
                forget_store(store)
                http[count].append(measure(command, suite.folder, suite.path(f"{name}.log"), ok_codes=(0, 1)))
                phases[count].append(variant_counts(os.path.join(reports, "results.json"))["run_s"])
    finally:
        stop_server(server)
    ideal = M_VARIANTS * W2_ITEMS * W2_DELAY / W2_CONCURRENCY
    wall = med(http[M_VARIANTS], 0)
    suite.target(f"M http {M_VARIANTS} variants wall", wall, med(pool, 0), wall / med(pool, 0),
                 f"<= {M_RATIO:g}x the pool's {M_VARIANTS * W2_ITEMS:,} calls", wall / med(pool, 0) <= M_RATIO,
                 note=f"ideal {ideal:.2f} s; the pool {med(pool, 0) / ideal:.2f}x it")
    one = med(http[1], 0)
    suite.say(f"M   {size:,} items (all four reports): 1 variant {seconds(runs[1])} {med(runs[1], 1):.0f} MiB, "
              f"{M_VARIANTS} variants {seconds(runs[M_VARIANTS])} {med(runs[M_VARIANTS], 1):.0f} MiB")
    suite.say(f"    {W2_ITEMS:,} items x {M_VARIANTS} variants over HTTP (ideal {ideal:.2f} s): {seconds(http[M_VARIANTS])},"
              f" run phase {statistics.median(phases[M_VARIANTS]):.2f} s; 1 variant {seconds(http[1])}, run phase"
              f" {statistics.median(phases[1]):.2f} s ({M_VARIANTS} variants = {wall / one:.2f}x one)")
    suite.say(f"    the same {M_VARIANTS * W2_ITEMS:,} calls from ThreadPoolExecutor({W2_CONCURRENCY}) + requests: "
              f"{seconds(pool)}, run phase {statistics.median(pool_phases):.2f} s")
    suite.details["M"] = {"variants": {str(k): v for k, v in runs.items()}, "ideal_s": ideal,
                          "http": {str(k): v for k, v in http.items()},
                          "http_run_phase_s": {str(k): v for k, v in phases.items()},
                          "pool": pool, "pool_run_phase_s": pool_phases}


C_ITEMS, C_CONCURRENCY, C_SPEEDUP, C_EMPTY = 1000, 1, 20.0, 1.05
JUDGE_SERVER = '''\
"""A local OpenAI-compatible judge: every chat completion, after %(delay)r s, grades "pass"."""
import http.server
import json
import time

REPLY = json.dumps({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
    "role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "grade", "arguments": json.dumps({"verdict": "pass", "reasoning": "matches"})}}]}}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 12}}).encode("utf-8")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(%(delay)r)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
'''
JUDGED_CONFIG = '''\
models:
  grader: {base_url: "http://127.0.0.1:%(port)d/v1", model: judge, temperature: 0}
defaults: {concurrency: %(concurrency)d, cache: {path: %(cache)s}}
reports: {formats: [json]}
experiments:
  - id: judged
    dataset: {file: %(file)s}
    runner: bench_plugins:answer
    scorers: [{uses: judge, with: {model: grader}}]
'''


P_ITEMS, P_RATIO = 100_000, 1.5  # W1 into PostgreSQL: wall <= 1.5x the same run into SQLite
# the yamleval run <= 1.15x plain Ray doing the same; both clusters take this machine's CPUs (2 here)
D_ITEMS, D_BURN, D_CPUS, D_RATIO = 300, 0.05, os.cpu_count() or 2, 1.15

D_PLUGIN = '''\
import time


def burn(input, seconds=%(burn)r):
    """Burn ``seconds`` of this thread's CPU in Python, then answer."""
    until = time.thread_time() + seconds
    total = 0
    while time.thread_time() < until:
        total += sum(range(200))
    return input
'''

D_CONFIG = '''\
version: 1
reports: {formats: [json]}
experiments:
  - id: burn
    concurrency: %(in_flight)d
    executor: {uses: ray}
    dataset: {file: items.jsonl}
    runner: cpu_plugin:burn
    scorers: [exact_match]
'''

D_PLAIN = '''
# Plain Ray, no yamleval: a cluster of its own (ray.init(num_cpus=argv[2])) and argv[1] tasks,
# each burning as ``burn`` does.
import sys

import ray

count = int(sys.argv[1])
ray.init(num_cpus=int(sys.argv[2]), include_dashboard=False, logging_level="ERROR", log_to_driver=False)
task = ray.remote(num_cpus=1, max_retries=0)(burn)
assert ray.get([task.remote(f"n{index}") for index in range(count)]) == [f"n{index}" for index in range(count)]
ray.shutdown()
'''


def workload_d(suite: Suite) -> None:
    """Items bound by the CPU on Ray, in a cluster each process starts for itself (2 CPUs): the
    whole ``yamleval run`` against a plain-Ray script doing the same tasks."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise Failed("D needs Ray: pip install '.[ray]'")
    size = 40 if suite.quick else D_ITEMS
    folder = suite.path("d")  # its own folder: Ray sends the config's folder to its workers
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "cpu_plugin.py"), "w", encoding="utf-8") as out:
        out.write(D_PLUGIN % {"burn": D_BURN})
    plain = suite.path("d_plain.py")  # outside the folder Ray sends
    with open(plain, "w", encoding="utf-8") as out:
        out.write(D_PLUGIN % {"burn": D_BURN} + D_PLAIN)  # ``burn`` travels with its tasks
    with open(os.path.join(folder, "items.jsonl"), "w", encoding="utf-8") as out:
        for index in range(size):
            out.write(json.dumps({"id": f"i{index}", "input": f"n{index}", "expected": f"n{index}"}) + "\n")
    config = os.path.join(folder, "evals.yaml")
    with open(config, "w", encoding="utf-8") as out:
        out.write(D_CONFIG % {"in_flight": 2 * D_CPUS})  # two tasks per worker: one runs, the next on its way
    store = os.path.join(folder, "ray.db")
    command = yamleval_command() + ["run", config, "--quiet", "--report-dir", os.path.join(folder, "reports"),
                                    "--store", store]
    walls: dict[str, list] = {"yamleval": [], "plain ray": []}
    for index in range(suite.repeat):
        progress(f"D {size} items of {D_BURN * 1000:.0f} ms CPU on Ray: yamleval, then plain Ray, run {index + 1} of {suite.repeat}")
        forget_store(store)
        walls["yamleval"].append(measure(command, folder, suite.path("d-yamleval.log")))
        done = counts(os.path.join(folder, "reports", "results.json"), "yamleval")
        if (done["total"], done["passed"]) != (size, size):
            raise Failed(f"D: the Ray run passed {done['passed']} of {size} items")
        walls["plain ray"].append(measure([sys.executable, plain, str(size), str(D_CPUS)], folder,
                                          suite.path("d-plain.log")))
    tool, plain_ray = med(walls["yamleval"], 0), med(walls["plain ray"], 0)
    suite.target(f"D {size} CPU-bound items on Ray, wall", tool, plain_ray, tool / plain_ray,
                 f"<= {D_RATIO:g}x plain Ray", tool / plain_ray <= D_RATIO,
                 note=f"fastest {low(walls['yamleval'], 0):.2f} / {low(walls['plain ray'], 0):.2f}")
    suite.say(f"D   {size} items x {D_BURN * 1000:.0f} ms CPU on a Ray cluster of {D_CPUS} CPUs each process starts: "
              f"yamleval {seconds(walls['yamleval'])}, plain Ray {seconds(walls['plain ray'])}")
    suite.details["D"] = walls


def workload_p(suite: Suite) -> None:
    """W1's run stored in PostgreSQL (a local server, started here) against the same run in SQLite."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "tests"))
    try:
        from servers.postgres import PostgresServer, _bin
    except ImportError as exc:
        raise Failed(f"P needs psycopg (pip install '.[postgres]'): {exc}")
    if _bin() is None:
        raise Failed("P needs PostgreSQL's server programs (apt-get install postgresql)")
    size = 2_000 if suite.quick else P_ITEMS
    data = suite.path(f"p-{size}.jsonl")
    write_datasets([(data, size)])
    config = write_config(suite, f"p-{size}", data, INSTANT_RUNNER, FORMATS)
    server = PostgresServer().start()
    try:
        sqlite_cmd, reports, store = run_command(suite, f"p-{size}", config)
        walls = {"sqlite": [], "postgresql": []}
        for index in range(suite.repeat):
            progress(f"P {size:,} items into SQLite, then into PostgreSQL, run {index + 1} of {suite.repeat}")
            forget_store(store)
            walls["sqlite"].append(measure(sqlite_cmd, suite.folder, suite.path("p-sqlite.log"), ok_codes=(0, 1)))
            url = server.new_database()
            pg_cmd = [part if part != store else url for part in sqlite_cmd]
            walls["postgresql"].append(measure(pg_cmd, suite.folder, suite.path("p-pg.log"), ok_codes=(0, 1)))
            if counts(os.path.join(reports, "results.json"), "yamleval")["total"] != size:
                raise Failed("P: the PostgreSQL run did not store every item")
    finally:
        server.stop()
    ratio = med(walls["postgresql"], 0) / med(walls["sqlite"], 0)
    suite.target(f"P {size:,} items into PostgreSQL, wall", med(walls["postgresql"], 0), med(walls["sqlite"], 0),
                 ratio, f"<= {P_RATIO:g}x SQLite", ratio <= P_RATIO)
    suite.say(f"P   {size:,} items: PostgreSQL {seconds(walls['postgresql'])}, SQLite {seconds(walls['sqlite'])}")
    suite.details["P"] = walls


def workload_c(suite: Suite) -> None:
    """The answer cache: what it saves when full, what it costs when empty."""
    data = suite.path("c.jsonl")
    write_datasets([(data, C_ITEMS)])
    script = suite.path("judge_server.py")
    with open(script, "w", encoding="utf-8") as out:
        out.write(JUDGE_SERVER % {"delay": W2_DELAY})
    server, port = start_server(suite, [sys.executable, script])
    cache = suite.path("c-cache.db")
    try:
        config = suite.path("c.yaml")
        with open(config, "w", encoding="utf-8") as out:
            out.write(JUDGED_CONFIG % {"port": port, "concurrency": C_CONCURRENCY, "cache": cache,
                                       "file": os.path.basename(data)})
        command, reports, store = run_command(suite, "c", config)
        uncached, cached = [], []
        for index in range(suite.repeat):
            progress(f"C {C_ITEMS:,} judged items, uncached then from the cache, run {index + 1} of {suite.repeat}")
            for path in (cache, cache + "-wal", cache + "-shm"):
                if os.path.exists(path):
                    os.remove(path)
            forget_store(store)
            uncached.append(measure(command, suite.folder, suite.path("c-uncached.log")))
            forget_store(store)
            cached.append(measure(command, suite.folder, suite.path("c-cached.log")))
            hits = json.load(open(os.path.join(reports, "results.json")))["experiments"][0]["summary"]["cache"]["hits"]
            if hits != C_ITEMS:
                raise Failed(f"C: the second run took {hits:,} of {C_ITEMS:,} answers from the cache")
    finally:
        stop_server(server)
    speedup = med(uncached, 0) / med(cached, 0)
    suite.target("C judged from the cache", med(cached, 0), med(uncached, 0), 1 / speedup,
                 f">= {C_SPEEDUP:g}x faster", speedup >= C_SPEEDUP, note=f"{speedup:.1f}x faster")
    suite.say(f"C   {C_ITEMS:,} items judged at a 50 ms server, concurrency {C_CONCURRENCY}: uncached "
              f"{seconds(uncached)}, from the cache {seconds(cached)} ({speedup:.1f}x faster)")
    name = "c-w2"
    w2_data = suite.path(f"{name}.jsonl")
    write_datasets([(w2_data, W2_ITEMS)])
    server, port = start_server(suite)
    empty, off = [], []
    try:
        config = write_config(suite, name, w2_data, HTTP_RUNNER % f"http://127.0.0.1:{port}/", ["json"])
        with open(config, "a", encoding="utf-8") as out:
            out.write(f"defaults: {{cache: {{runner: true, path: {cache}}}}}\n")
        command, reports, store = run_command(suite, name, config, ("--concurrency", str(W2_CONCURRENCY)))
        measure(command + ["--no-cache"], suite.folder, suite.path(f"{name}.log"), ok_codes=(0, 1))  # warm-up
        for index in range(suite.repeat):
            progress(f"C W2 with an empty cache and with the cache off, run {index + 1} of {suite.repeat}")
            for path in (cache, cache + "-wal", cache + "-shm"):
                if os.path.exists(path):
                    os.remove(path)
            forget_store(store)
            empty.append(measure(command, suite.folder, suite.path(f"{name}.log"), ok_codes=(0, 1)))
            forget_store(store)
            off.append(measure(command + ["--no-cache"], suite.folder, suite.path(f"{name}.log"), ok_codes=(0, 1)))
    finally:
        stop_server(server)
    ratio = med(empty, 0) / med(off, 0)
    suite.target("C W2 empty cache wall", med(empty, 0), med(off, 0), ratio, f"<= {C_EMPTY:g}x cache off",
                 ratio <= C_EMPTY)
    suite.say(f"    W2 with an empty cache {seconds(empty)}, with the cache off {seconds(off)}")
    suite.details["C"] = {"uncached": uncached, "cached": cached, "w2_empty_cache": empty, "w2_cache_off": off}


def server_counts(port: int) -> dict:
    """What the throttled server admitted and refused so far."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
        return json.loads(reply.read())


def w4_dataset(path: str, count: int) -> None:
    """Rows whose expected answer is their input: the throttled server echoes it, so every item
    passes, and one lost to a 429 shows as an error."""
    with open(path, "w", encoding="utf-8") as out:
        for row in make_rows(count):
            out.write(json.dumps({"id": row["id"], "input": row["input"], "expected": row["input"]}) + "\n")


def workload_w4(suite: Suite) -> None:
    items = W4_ITEMS  # as W2, not smaller with --quick: the adaptive limit needs a few seconds to settle
    data, warm = suite.path("w4.jsonl"), suite.path("w4-warm.jsonl")
    w4_dataset(data, items)
    w4_dataset(warm, 20)
    server, port = start_server(suite, [sys.executable, THROTTLED_SERVER, str(W4_RATE), str(W4_BURST),
                                        str(W4_DELAY)])
    url = f"http://127.0.0.1:{port}/"
    variants = {"adaptive": ("", W4_RATE), "rate_limit": (f", rate_limit: {{requests_per_minute: {W4_RPM}}}",
                                                          W4_RPM / 60)}
    runs = {name: {"tool": [], "ideal": [], "refused": [], "requests": [], "throttling": [], "run_s": [],
                   "ideal_run_s": []} for name in variants}
    log = suite.path("w4.log")
    try:
        commands = {}
        for name, (option, rate) in variants.items():
            runner = W4_RUNNER % (url, option)
            commands[name] = {size: (run_command(suite, f"w4-{name}-{size}",
                                                 write_config(suite, f"w4-{name}-{size}", path, runner, ["json"]),
                                                 ("--concurrency", str(W4_CONCURRENCY))),
                                     floor_command(suite, path, suite.path(f"ideal-w4-{size}.json"), "paced",
                                                   W4_CONCURRENCY, url, rate))
                              for size, path in (("warm", warm), ("full", data))}
        for name in variants:  # warm-up: bytecode, connections; not counted
            (command, _, store), ideal = commands[name]["warm"]
            forget_store(store)
            measure(command, suite.folder, log, ok_codes=(0, 1))
            measure(ideal, suite.folder, log)
        for index in range(suite.repeat):
            for name in variants:
                progress(f"W4 {name}, {items:,} items, run {index + 1} of {suite.repeat}")
                (command, reports, store), ideal = commands[name]["full"]
                forget_store(store)
                before = server_counts(port)
                runs[name]["tool"].append(measure(command, suite.folder, log, ok_codes=(0, 1)))
                after = server_counts(port)
                found = counts(os.path.join(reports, "results.json"), "yamleval")
                if (found["total"], found["passed"]) != (items, items):
                    raise Failed(f"W4 {name}: {found['passed']:,} of {found['total']:,} items passed, of {items:,}")
                runs[name]["refused"].append(after["refused"] - before["refused"])
                runs[name]["requests"].append(after["admitted"] + after["refused"] - before["admitted"]
                                              - before["refused"])
                runs[name]["throttling"].append(found["throttling"])
                runs[name]["run_s"].append(found["duration_s"])
                runs[name]["ideal"].append(measure(ideal, suite.folder, log))
                runs[name]["ideal_run_s"].append(counts(suite.path("ideal-w4-full.json"), "floor")["duration_s"])
    finally:
        stop_server(server)
    for name, (_, rate) in variants.items():
        r = runs[name]
        ratio = med(r["tool"], 0) / med(r["ideal"], 0)
        share = statistics.median(refused / requests for refused, requests in zip(r["refused"], r["requests"]))
        goal = W4_ADAPTIVE if name == "adaptive" else W4_LIMITED
        suite.target(f"W4 {name} wall", med(r["tool"], 0), med(r["ideal"], 0), ratio, f"<= {goal:g}x ideal",
                     ratio <= goal, note=f"fastest {low(r['tool'], 0):.2f} / {low(r['ideal'], 0):.2f}")
        if name == "adaptive":
            suite.target("W4 adaptive 429s", share * 100, None, None, f"<= {W4_SHARE:.0%} of requests",
                         share <= W4_SHARE, unit="%")
        else:
            most = max(r["refused"])
            suite.target("W4 rate_limit 429s", most, None, None, "none", most == 0, unit="429s")
        suite.say(f"W4  {name}: {items:,} items, concurrency {W4_CONCURRENCY}, server admits {W4_RATE}/s (burst "
                  f"{W4_BURST}) and answers after {W4_DELAY * 1000:.0f} ms; ideal = a pool starting exactly "
                  f"{rate:g} requests/s ({items / rate:.1f} s of requests)")
        suite.say(f"    wall: yamleval {seconds(r['tool'])}, ideal {seconds(r['ideal'])} = {ratio:.2f}x "
                  f"({med(r['tool'], 0) / (items / rate):.2f}x the {items / rate:.1f} s of requests); run phase "
                  f"{statistics.median(r['run_s']):.2f} s vs {statistics.median(r['ideal_run_s']):.2f} s = "
                  f"{statistics.median(r['run_s']) / statistics.median(r['ideal_run_s']):.2f}x; 429s "
                  f"{r['refused']} of {r['requests']} requests ({share:.1%}); every item passed")
        suite.say(f"    yamleval's summary: throttling {r['throttling'][-1]}")
    suite.details["W4"] = runs


def browser_usable(suite: Suite, url: str, repeat: int) -> dict:
    """A report page's time to usable (a file:// or a served one), measured in a child process so this one stays small."""
    script = suite.path("browser.py")
    with open(script, "w", encoding="utf-8") as out:
        out.write(BROWSER)
    done = subprocess.run([sys.executable, script, BENCH_DIR, url, str(repeat)],
                          capture_output=True, text=True, env=CHILD_ENV, timeout=900)
    if done.returncode:
        raise Failed(f"the browser measurement failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def workload_r(suite: Suite) -> None:
    size = 2000 if suite.quick else 100_000
    w1 = w1_run(suite, size, warm_up=size not in suite.w1_runs)
    store, run_id, loop = w1["store"], w1["run_id"], med(w1["floor"], 0)
    progress(f"R rendering the stored {size:,}-item run, {suite.repeat} x each format")
    log = suite.path("r.log")
    figures = {}
    for index, formats in enumerate([*FORMATS, ",".join(FORMATS)]):
        folder = suite.path(f"r-{formats.replace(',', '-')}")
        command = yamleval_command() + ["report", run_id, "--store", store, "--format", formats, "--report-dir", folder]
        if index == 0:
            measure(command, suite.folder, log)  # warm-up: bytecode and the database in the page cache
        figures[formats] = [measure(command, suite.folder, log) for _ in range(suite.repeat)]
        if formats in FILES:
            path = os.path.join(folder, FILES[formats])
            same = sha256(path) == sha256(os.path.join(w1["reports"], FILES[formats]))
            suite.say(f"R   {formats:8} {seconds(figures[formats])} {med(figures[formats], 1):4.0f} MiB, "
                      f"{os.path.getsize(path) / 2**20:7.1f} MiB file; same bytes as the run's own: "
                      f"{'yes' if same else 'NO'}")
    every = figures[",".join(FORMATS)]
    ratio = med(every, 0) / loop
    suite.target(f"R {size:,} all formats", med(every, 0), loop, ratio, f"<= {R_RATIO:g}x W1 loop",
                 ratio <= R_RATIO, note=f"fastest {low(every, 0):.2f}")
    suite.say(f"R   all four {seconds(every)} {med(every, 1):4.0f} MiB (baseline: the W1 loop's whole run, "
              f"{loop:.2f} s)")
    suite.details["R"] = {"size": size, "formats": figures}

    html = os.path.join(suite.path("r-html"), FILES["html"])
    progress("R report.html in headless chromium")
    browser = browser_usable(suite, "file://" + html, suite.repeat)
    if "skip" in browser:
        suite.target("R html usable", None, None, None, f"<= {R_USABLE:g} s", None, note=browser["skip"])
        suite.say(f"R   html usable: SKIP ({browser['skip']})")
    else:
        usable = statistics.median(browser["usable"])
        suite.target("R html usable", usable, None, None, f"<= {R_USABLE:g} s", usable <= R_USABLE,
                     note=f"fastest {min(browser['usable']):.2f}")
        suite.say(f"R   html in chromium: first row {statistics.median(browser['first_row']):.2f} s "
                  f"[{min(browser['first_row']):.2f}], usable {usable:.2f} s [{min(browser['usable']):.2f}]")
    suite.details["R"]["browser"] = browser
    megabytes = os.path.getsize(html) / 1e6
    suite.target(f"R {size:,} html size", megabytes, None, None, f"<= {R_SIZE_MB:g} MB", megabytes <= R_SIZE_MB,
                 unit="MB")
    suite.say(f"R   report.html of {size:,} items: {megabytes:.1f} MB")
    workload_r_long(suite)


def workload_r_long(suite: Suite) -> None:
    """report.html of a run whose answers are 10 KB each: within its size budget, the cut said."""
    import html_report

    size = 1000 if suite.quick else 50_000
    folder = suite.path("r-long")
    os.makedirs(folder, exist_ok=True)
    progress(f"R {size:,} items with 10 KB answers")
    html_report.write_dataset(folder, size, 1, 10)
    config = os.path.join(folder, "long.yaml")
    with open(config, "w", encoding="utf-8") as out:
        out.write("reports: {formats: [html]}\nexperiments:\n" + html_report.EXPERIMENT.format(number=0))
    command = yamleval_command() + ["run", config, "--quiet", "--store", os.path.join(folder, "results.db"),
                                    "--report-dir", folder]
    wall, rss = measure(command, folder, suite.path("r-long.log"), ok_codes=(0, 1))
    path = os.path.join(folder, FILES["html"])
    megabytes, cut = os.path.getsize(path) / 1e6, html_report.cut_figures(path)
    suite.target(f"R {size:,} x 10 KB html size", megabytes, None, None, f"<= {R_LONG_MB:g} MB",
                 megabytes <= R_LONG_MB, unit="MB", note=f"{cut.get('texts', 0):,} texts cut to {cut.get('cap', 0):,}")
    browser = browser_usable(suite, "file://" + path, suite.repeat)
    usable = statistics.median(browser["usable"]) if "usable" in browser else None
    suite.say(f"R   {size:,} items with 10 KB answers: run {wall:.1f} s {rss:.0f} MiB; report.html {megabytes:.1f} MB, "
              f"{cut.get('texts', 0):,} texts cut to {cut.get('cap', 0):,} characters"
              + (f"; usable in chromium {usable:.2f} s" if usable is not None else ""))
    suite.details["R"]["long"] = {"size": size, "megabytes": megabytes, "cut": cut, "browser": browser}


IMPORTS = """\
import importlib
for name in %r:
    try:
        importlib.import_module(name)
    except ImportError:  # tried and not there on this platform (msvcrt), as it was for yamleval
        pass
"""


def imported_modules(command: list[str], cwd: str) -> list[str]:
    """The modules ``command`` (a python running yamleval) imports that are not yamleval's own, in
    the order imported, read from ``python -X importtime``."""
    environment = dict(CHILD_ENV, PYTHONPROFILEIMPORTTIME="1")
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True)
    names = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name.split(".")[0] not in ("yamleval", "__main__") and name not in names:
                names.append(name)
    return names


def workload_s(suite: Suite) -> None:
    """Start-up: what a user waits for on every command that runs nothing."""
    python = [sys.executable, "-c", "pass"]
    validate = yamleval_command() + ["validate", "evals.yaml"]
    helps = yamleval_command() + ["--help"]
    modules = imported_modules(validate, REPO_DIR)
    imports = [sys.executable, "-c", IMPORTS % modules]
    log = suite.path("s.log")
    commands = {"python": python, "imports": imports, "validate": validate, "help": helps}
    runs: dict[str, list] = {key: [] for key in commands}
    progress("S start-up")
    for key, command in commands.items():  # warm-up
        measure(command, REPO_DIR, log)
    for _ in range(max(5, suite.repeat)):
        for key, command in commands.items():
            runs[key].append(measure(command, REPO_DIR, log))
    base = med(runs["python"], 0)
    for key, label, goal in (("validate", "S validate", S_VALIDATE), ("help", "S --help", S_HELP)):
        wall = med(runs[key], 0)
        suite.target(label, wall, base, wall / base, f"<= {goal:g} s", wall <= goal,
                     note=f"fastest {low(runs[key], 0):.2f}")
    wall, floor = med(runs["validate"], 0), med(runs["imports"], 0)
    suite.target("S validate vs its imports", wall, floor, wall / floor, f"<= {S_IMPORTS:g}x imports",
                 wall / floor <= S_IMPORTS, note=f"fastest {low(runs['validate'], 0):.2f} / {low(runs['imports'], 0):.2f}")
    suite.say(f"S   python -c pass {seconds(runs['python'])}; yamleval validate evals.yaml "
              f"{seconds(runs['validate'])} {med(runs['validate'], 1):.0f} MiB; yamleval --help "
              f"{seconds(runs['help'])} {med(runs['help'], 1):.0f} MiB (from {REPO_DIR})")
    suite.say(f"    python importing the {len(modules)} modules validate imports (not yamleval's own) "
              f"{seconds(runs['imports'])} {med(runs['imports'], 1):.0f} MiB = validate / imports {wall / floor:.2f}x")
    suite.details["S"] = {**runs, "modules": modules}


# --- output ---------------------------------------------------------------------------------

def shown(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit in ("MiB", "429s"):
        return f"{value:.0f} {unit}"
    return f"{value:.1f}%" if unit == "%" else f"{value:.2f} {unit}"


def verdict(target: Target) -> str:
    verdict = "SKIP" if target.passed is None else ("PASS" if target.passed else "FAIL")
    return f"({verdict})" if target.reference else verdict


def print_table(targets: list[Target]) -> None:
    rows = [("target", "yamleval", "baseline", "ratio", "goal", "result")]
    for t in targets:
        rows.append((t.id, shown(t.measured, t.unit), shown(t.baseline, t.unit),
                     "n/a" if t.ratio is None else f"{t.ratio:.2f}x", t.goal, verdict(t)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        cells = [cell.ljust(w) if i in (0, 4, 5) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        print(" | ".join(cells).rstrip())
        if index == 0:
            print("-+-".join("-" * w for w in widths))


def write_json(path: str, suite: Suite, machine: dict, total: float) -> None:
    targets = []
    for t in suite.targets:
        entry = asdict(t)
        entry["pass"] = entry.pop("passed")
        targets.append(entry)
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"machine": machine, "total_s": total, "targets": targets, "details": suite.details,
                   "errors": suite.errors}, out, indent=2)
        out.write("\n")


WORKLOADS = ("W1", "W2", "W3", "W4", "R", "S", "V", "C", "M", "P", "D")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: W1 2,000, W3 20,000 vs 2,000, R 2,000 items, 1 run each")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated: W1,W2,W3,W4,R,S,V,C,M,P,D")
    parser.add_argument("--repeat", type=int, help="runs of each measurement, median shown (default 3; W3 1)")
    parser.add_argument("--json", default="bench-results.json", help="where the figures go (default: %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args(argv)
    args.only = [w.strip().upper() for w in args.only.split(",") if w.strip()]
    unknown = [w for w in args.only if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    repeat = max(1, args.repeat or (1 if args.quick else 3))
    w3_repeat = max(1, args.repeat or 1)
    folder = tempfile.mkdtemp(prefix="yamleval-bench-")
    began = time.perf_counter()
    child_env(folder)
    suite = Suite(folder, repeat, args.quick)
    machine = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "repeat": repeat,
               "w3_repeat": w3_repeat, "quick": args.quick, "platform": sys.platform,
               "command": " ".join(["python", "bench/run_bench.py", *(argv if argv is not None else sys.argv[1:])])}
    workloads = {"W1": workload_w1, "W2": workload_w2, "W3": lambda s: workload_w3(s, w3_repeat),
                 "W4": workload_w4, "R": workload_r, "S": workload_s, "V": workload_v,
                 "C": workload_c, "M": workload_m, "P": workload_p, "D": workload_d}
    try:
        with open(suite.path("bench_plugins.py"), "w", encoding="utf-8") as out:
            out.write(PLUGIN % {"answers": dict(QUESTIONS)})
        with open(suite.path("floor.py"), "w", encoding="utf-8") as out:
            out.write(FLOOR % {"folder": folder})
        print(f"yamleval benchmark: python {machine['python']}, {machine['cpus']} CPUs; median of {repeat} "
              f"run{'s' if repeat > 1 else ''} (W3: {w3_repeat}), fastest in brackets; wall = the whole process"
              f"{'; QUICK (small sizes)' if args.quick else ''}", flush=True)
        for name in WORKLOADS:
            if name in args.only:
                try:
                    workloads[name](suite)
                except (Failed, subprocess.TimeoutExpired) as exc:
                    suite.errors.append(f"{name}: {exc}")
                    suite.target(f"{name} (failed)", None, None, None, "runs", False)
        total = time.perf_counter() - began
        print()
        print_table(suite.targets)
        print()
        for line in suite.lines:
            print(line)
        for error in suite.errors:
            print(f"\nERROR {error}")
        print(f"\ntotal benchmark time {total:.0f} s")
        write_json(args.json, suite, machine, total)
        print(f"figures written to {args.json}")
    finally:
        if args.keep:
            print(f"files kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0 if suite.targets and all(t.passed is not False or t.reference for t in suite.targets) else 1


if __name__ == "__main__":
    sys.exit(main())
