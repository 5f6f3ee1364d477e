#!/usr/bin/env python
"""yamleval against a plain Python loop doing the same work, measured in the same run.

W1: N items (default 10,000 and 100,000), an instant runner, scorers ``exact_match`` and
``levenshtein`` (threshold 0.8), results written as one JSON file. yamleval runs as
``yamleval run bench.yaml --quiet``; the floor is a plain script that reads the same JSONL,
calls the same runner function, scores with string equality and ``Levenshtein.distance``,
builds the same per-item records and writes one JSON file. Both must report the same
passed/failed counts, or the script stops with an error.

W2: 1,000 items, a runner that sleeps 50 ms, concurrency 50. The ideal is
items x 0.05 s / 50 = 1.0 s; the floor is a bare ``ThreadPoolExecutor(50)`` over the same
function, with the same scoring and JSON output.

Every figure is a separate child process: wall time is ``time.perf_counter`` around the
child, peak memory is that child's ``ru_maxrss`` from ``os.wait4``. Each measurement is
repeated (tool and floor alternating); the median is shown, with the minimum after it.

    python bench/run_bench.py                 # sizes 10000,100000, repeat 3
    python bench/run_bench.py --quick         # size 2000, repeat 1: a smoke run
    python bench/run_bench.py --sizes 10000 --repeat 5 --keep

The exit code is 0 even when a target is missed (this is a measurement, not a test);
a missed target is printed as MISSED. It is 1 when a run fails or the counts disagree.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

W1_TARGET = 3.0      # yamleval wall <= 3x the plain loop's
W2_TARGET = 1.1      # yamleval wall <= 1.1x the ideal
W2_ITEMS, W2_SLEEP, W2_CONCURRENCY = 1000, 0.05, 50

# --- files written into the temporary directory -------------------------------------------

PLUGIN = '''\
"""Runners for the benchmark: an instant one and one that sleeps 50 ms."""
import time

ANSWERS = %(answers)r


def answer(input):
    """Instant: look the question up and fill in the order number."""
    order, _, question = input.partition(": ")
    return ANSWERS[question].replace("{order}", order[6:])


def sleepy(input):
    """Waits 50 ms, as a remote model would, then answers."""
    time.sleep(%(sleep)r)
    return answer(input)
'''

FLOOR = '''\
"""The floor: the benchmark's work as a plain loop (read, run, score, write one JSON file)."""
import json
import sys
import time

import Levenshtein

sys.path.insert(0, %(folder)r)
from bench_plugins import answer, sleepy

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


def main(data, out, mode, concurrency):
    rows = []
    with open(data, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            row = json.loads(line)
            row["index"] = index
            rows.append(row)
    if mode == "pool":
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(concurrency) as pool:
            done = list(pool.map(lambda row: timed(sleepy, row), rows))
    else:
        done = [timed(answer, row) for row in rows]
    items = [score(row, output, latency) for row, output, latency in done]
    summary = {"total": len(items), "passed": sum(i["status"] == "passed" for i in items),
               "failed": sum(i["status"] == "failed" for i in items),
               "scorers": {sid: {"passed": sum(i["scores"][sid]["passed"] for i in items),
                                 "failed": sum(not i["scores"][sid]["passed"] for i in items)}
                           for sid in ("exact_match", "levenshtein")}}
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"summary": summary, "items": items}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
'''

CONFIG = '''\
version: 1
reports: {formats: [json]}   # the same JSON the loop writes; every item is also stored in SQLite
experiments:
  - id: %(id)s
    dataset: {file: %(file)s}
    runner: bench_plugins:%(runner)s
    scorers:
      - exact_match
      - {uses: levenshtein, threshold: 0.8}
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


def write_dataset(path: str, count: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        for row in make_rows(count):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


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
              "scorers": {sid: {"passed": s["passed"], "failed": s["failed"]}
                          for sid, s in run["scorers"].items()}}
else:
    counts = dict(data["summary"], errored=0)
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
    tool = {k: v for k, v in tool.items() if k != "duration_s"}
    if tool != floor:
        raise Failed(f"{what}: yamleval and the plain loop disagree:\n  yamleval {tool}\n  loop     {floor}")


def write_config(folder: str, name: str, data: str, runner: str) -> str:
    config = os.path.join(folder, f"{name}.yaml")
    with open(config, "w", encoding="utf-8") as out:
        out.write(CONFIG % {"id": name, "file": os.path.basename(data), "runner": runner})
    return config


def fixed_costs(folder: str, repeat: int) -> list[tuple[str, list[tuple[float, float]]]]:
    """Start-up: importing yamleval's command line, and a whole ``yamleval run`` of one item."""
    data = os.path.join(folder, "one.jsonl")
    write_dataset(data, 1)
    config = write_config(folder, "one", data, "answer")
    log = os.path.join(folder, "fixed.log")
    imports = [sys.executable, "-c", "import yamleval.cli"]
    run_one = yamleval_command() + ["run", config, "--quiet", "--report-dir", os.path.join(folder, "reports-one")]
    measure(imports, folder, log)                   # warm-up: fills the bytecode cache
    measure(run_one, folder, log, ok_codes=(0, 1))
    return [("python -c 'import yamleval.cli'", [measure(imports, folder, log) for _ in range(repeat)]),
            ("yamleval run, 1 item", [measure(run_one, folder, log, ok_codes=(0, 1)) for _ in range(repeat)])]


def compare(folder: str, name: str, data: str, runner: str, repeat: int, mode: str,
            concurrency: int, warm_up: bool) -> dict:
    """Run yamleval and the floor ``repeat`` times each, alternating; return their figures."""
    config = write_config(folder, name, data, runner)
    reports = os.path.join(folder, f"reports-{name}")
    floor_out = os.path.join(folder, f"floor-{name}.json")
    tool_cmd = yamleval_command() + ["run", config, "--quiet", "--report-dir", reports]
    if mode == "pool":
        tool_cmd += ["--concurrency", str(concurrency)]
    floor_cmd = [sys.executable, os.path.join(folder, "floor.py"), data, floor_out, mode, str(concurrency)]
    tool, floor, run_s = [], [], []
    if warm_up:  # fills the bytecode cache and the page cache; not counted
        measure(tool_cmd, folder, os.path.join(folder, f"{name}-yamleval.log"), ok_codes=(0, 1))
        measure(floor_cmd, folder, os.path.join(folder, f"{name}-floor.log"))
    for _ in range(repeat):
        # exit code 1 is "items failed", which is the expected outcome here
        tool.append(measure(tool_cmd, folder, os.path.join(folder, f"{name}-yamleval.log"), ok_codes=(0, 1)))
        floor.append(measure(floor_cmd, folder, os.path.join(folder, f"{name}-floor.log")))
        found = counts(os.path.join(reports, "results.json"), "yamleval")
        run_s.append(found["duration_s"])
        expected = counts(floor_out, "floor")
        check_same(found, expected, name)
    return {"tool": tool, "floor": floor, "counts": expected, "run_s": statistics.median(run_s)}


def med(runs: list[tuple[float, float]], column: int) -> float:
    return statistics.median(r[column] for r in runs)


def low(runs: list[tuple[float, float]], column: int) -> float:
    return min(r[column] for r in runs)


def verdict(ratio: float, target: float) -> str:
    return "OK" if ratio <= target else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="W1 item counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (median shown)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: size 2000, repeat 1")
    parser.add_argument("--no-w2", action="store_true", help="skip the sleeping-runner workload")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    args = parser.parse_args()
    sizes = [2000] if args.quick else [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    repeat = 1 if args.quick else max(1, args.repeat)

    folder = tempfile.mkdtemp(prefix="yamleval-bench-")
    began = time.perf_counter()
    child_env(folder)
    try:
        with open(os.path.join(folder, "bench_plugins.py"), "w", encoding="utf-8") as out:
            out.write(PLUGIN % {"answers": {q: a for q, a in QUESTIONS.items()}, "sleep": W2_SLEEP})
        with open(os.path.join(folder, "floor.py"), "w", encoding="utf-8") as out:
            out.write(FLOOR % {"folder": folder})

        print(f"yamleval benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
              f"median of {repeat} run{'s' if repeat > 1 else ''}, fastest in brackets; wall = the whole process")
        print()
        fixed = fixed_costs(folder, max(3, repeat))
        for label, runs in fixed:
            print(f"fixed cost  {label:34} {med(runs, 0):5.2f} s [{low(runs, 0):.2f}] {med(runs, 1):5.0f} MiB")
        one_item = med(fixed[-1][1], 0)
        print()

        for size in sizes:
            data = os.path.join(folder, f"w1-{size}.jsonl")
            write_dataset(data, size)
            r = compare(folder, f"w1-{size}", data, "answer", repeat, "loop", 1, warm_up=size == sizes[0])
            tool, floor, c = r["tool"], r["floor"], r["counts"]
            ratio = med(tool, 0) / med(floor, 0)
            print(f"W1 {size:>7,} items  yamleval {med(tool, 0):5.2f} s [{low(tool, 0):.2f}] {med(tool, 1):4.0f} MiB"
                  f" | loop {med(floor, 0):5.2f} s [{low(floor, 0):.2f}] {med(floor, 1):4.0f} MiB"
                  f" | ratio {ratio:3.1f}x (target <= {W1_TARGET:g}x)  {verdict(ratio, W1_TARGET)}")
            print(f"{'':18}counts equal ({c['passed']:,} passed, {c['failed']:,} failed); per item: yamleval "
                  f"{(med(tool, 0) - one_item) / size * 1000:.3f} ms beyond its 1-item run, "
                  f"loop {med(floor, 0) / size * 1000:.3f} ms; yamleval run phase {r['run_s']:.2f} s")

        if not args.no_w2:
            data = os.path.join(folder, "w2.jsonl")
            write_dataset(data, W2_ITEMS)
            r = compare(folder, "w2", data, "sleepy", repeat, "pool", W2_CONCURRENCY, warm_up=False)
            tool, floor, c = r["tool"], r["floor"], r["counts"]
            ideal = W2_ITEMS * W2_SLEEP / W2_CONCURRENCY
            ratio = med(tool, 0) / ideal
            print()
            print(f"W2 {W2_ITEMS:>7,} items  yamleval {med(tool, 0):5.2f} s [{low(tool, 0):.2f}] {med(tool, 1):4.0f} MiB"
                  f" | ThreadPoolExecutor({W2_CONCURRENCY}) {med(floor, 0):.2f} s [{low(floor, 0):.2f}] "
                  f"{med(floor, 1):.0f} MiB | ideal {ideal:.2f} s | {ratio:.2f}x ideal (target <= {W2_TARGET:g}x)  "
                  f"{verdict(ratio, W2_TARGET)}")
            print(f"{'':18}runner sleeps {W2_SLEEP * 1000:.0f} ms, concurrency {W2_CONCURRENCY}; counts equal "
                  f"({c['passed']:,} passed, {c['failed']:,} failed)")
            print(f"{'':18}without start-up and report: yamleval run phase {r['run_s']:.2f} s = "
                  f"{r['run_s'] / ideal:.2f}x ideal  {verdict(r['run_s'] / ideal, W2_TARGET)}; "
                  f"yamleval wall / pool wall {med(tool, 0) / med(floor, 0):.2f}x")
        print(f"\ntotal benchmark time {time.perf_counter() - began:.0f} s")
    except Failed as exc:
        print(f"\nERROR: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"files kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
