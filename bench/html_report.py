#!/usr/bin/env python
"""How big report.html gets for a large run, how long rendering it takes, how many texts its
size budget cut, and how soon headless chromium makes it usable.

A JSONL dataset of N items (default 100,000) with customer-service texts of 100-400 characters
(``--answer-kb K``: answers of about K KB) is generated with a fixed seed; the built-in ``echo``
runner answers with a prepared reply that equals the expected answer for about 70% of the items
and differs slightly for the rest; the scorers are ``exact_match`` and ``levenshtein``
(threshold 0.8). ``yamleval run`` stores the run (and writes report.html), then ``yamleval
report`` renders report.html again from the store, timed.

Time to usable: from ``page.goto`` of the file:// URL until the first table row is visible and
the status filter has answered a click (hiding passed items). Each figure is the median of
``--repeat`` runs (fresh page each time), with the fastest in brackets.

    python bench/html_report.py                  # 100,000 items, 3 runs
    python bench/html_report.py --items 50000 --answer-kb 10 --repeat 1   # long answers: the size budget
    python bench/html_report.py --items 10000 --repeat 5 --keep
    python bench/html_report.py --items 2000 --experiments 1000   # many small experiments

Needs playwright and /usr/bin/chromium for the browser figures; without them only the size and
render figures are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

OPENERS = ["Hi,", "Hello,", "Good morning,", "Hey there,", "Hi team,", ""]
ASKS = ["I ordered a {thing} on {day} and it still has not arrived.",
        "my {thing} arrived damaged and the box was open.",
        "I was charged twice for order {order}.",
        "I cannot log in to my account since I changed my email address.",
        "can I return the {thing} I bought last week if I have lost the receipt?",
        "the tracking page for order {order} has not changed for {n} days.",
        "I want to change the delivery address for order {order}.",
        "is the {thing} compatible with the charger from the previous model?"]
DETAILS = ["I paid with a credit card.", "I live outside the EU.", "This is the second time this happens.",
           "I need it before {day}.", "My order number is {order}.", "I already tried resetting the app.",
           "The invoice shows a different amount.", "Please answer by email if possible."]
ANSWERS = ["Thank you for contacting us about order {order}.", "I am sorry to hear about the trouble with your {thing}.",
           "We have issued a refund of the duplicate charge; it appears within 5 business days.",
           "You can return any item within 30 days, with or without the receipt.",
           "I have updated the delivery address; the courier will use it from tomorrow.",
           "Our warehouse shipped the parcel on {day}; the carrier reports a delay of {n} days.",
           "Please reset your password from the login page and confirm the new email address.",
           "The {thing} works with the previous charger, though charging takes longer.",
           "If anything else comes up, reply to this message and we will help right away."]
THINGS = ["kettle", "phone case", "desk lamp", "backpack", "blender", "pair of headphones", "monitor stand"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the 3rd", "the 14th"]
REWORDS = [("within 5 business days", "in about a week"), ("right away", "as soon as we can"),
           ("I am sorry", "We apologise"), ("Thank you for", "Thanks for")]


def fill(template: str, rnd: random.Random) -> str:
    return template.format(thing=rnd.choice(THINGS), day=rnd.choice(DAYS), order=rnd.randint(10000, 99999),
                           n=rnd.randint(2, 9))


def text(rnd: random.Random, first: list[str], more: list[str], low: int = 100, high: int = 400) -> str:
    """Sentences until the text is between ``low`` and ``high`` characters long."""
    target = rnd.randint(low, high)
    out = fill(rnd.choice(first), rnd)
    while len(out) < target:
        sentence = fill(rnd.choice(more), rnd)
        if len(out) + 1 + len(sentence) > high:
            break
        out += " " + sentence
    return out


def reply(expected: str, rnd: random.Random) -> str:
    """70% exactly right; else one character off, a reworded phrase or a cut answer."""
    roll = rnd.random()
    if roll < 0.7:
        return expected
    if roll < 0.8:
        at = rnd.randrange(len(expected))
        return expected[:at] + rnd.choice("aeiou") + expected[at + 1:]
    if roll < 0.9:
        for old, new in rnd.sample(REWORDS, len(REWORDS)):
            if old in expected:
                return expected.replace(old, new, 1)
        return expected + " Have a nice day."
    return expected[: len(expected) * 2 // 3]


def write_dataset(folder: str, items: int, experiments: int, answer_kb: float = 0) -> None:
    """``items`` tickets split evenly over one JSONL file per experiment; answers of about
    ``answer_kb`` KB when it is given, else of 100-400 characters."""
    rnd = random.Random(20240601)
    low, high = (int(answer_kb * 1000), int(answer_kb * 1030)) if answer_kb else (100, 400)
    for e in range(experiments):
        with open(os.path.join(folder, f"tickets-{e}.jsonl"), "w", encoding="utf-8") as out:
            for n in range(items * e // experiments, items * (e + 1) // experiments):
                question = (rnd.choice(OPENERS) + " " + text(rnd, ASKS, DETAILS)).strip()
                expected = text(rnd, ANSWERS, ANSWERS, low, high)
                out.write(json.dumps({"id": f"ticket-{n:06d}", "input": question, "expected": expected,
                                      "reply": reply(expected, rnd)}) + "\n")


EXPERIMENT = """\
  - id: support-tickets-{number}
    label: Support tickets {number}
    dataset: {{file: tickets-{number}.jsonl, fields: {{context: reply}}}}
    runner: {{uses: echo, with: {{output: "{{{{ item.context }}}}"}}}}
    scorers:
      - exact_match
      - {{uses: levenshtein, threshold: 0.8}}
"""


# A selector, not a script: the page's CSP forbids evaluating strings
SHOWING_MATCHES = "#exp-0 .showing:has-text('matching')"


def usable_seconds(browser, url: str) -> tuple[float, float]:
    """Seconds from goto to the first visible row, and to the filter having answered a click."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        started = time.perf_counter()
        page.goto(url, wait_until="commit", timeout=120_000)
        page.wait_for_selector("#exp-0 tbody tr.row", state="visible", timeout=120_000)
        first_row = time.perf_counter() - started
        # hide a status the experiment has, so that the filter's answer shows
        status = "passed" if page.locator("#exp-0 [data-count=passed]").inner_text() != "0" else "failed"
        page.locator(f"#exp-0 input[data-status={status}]").uncheck(timeout=120_000)
        page.wait_for_selector(SHOWING_MATCHES, timeout=120_000)
        usable = time.perf_counter() - started
        return first_row, usable
    finally:
        page.close()


def search_seconds(browser, url: str, query: str) -> float:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.goto(url, timeout=120_000)
        page.wait_for_selector("#exp-0 tbody tr.row", timeout=120_000)
        box = page.locator("#exp-0 input.search")
        box.fill(query)
        started = time.perf_counter()
        box.press("Enter")
        page.wait_for_selector(SHOWING_MATCHES, timeout=120_000)
        return time.perf_counter() - started
    finally:
        page.close()


def median_and_min(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s [{min(values):.2f}]"


def cut_figures(path: str) -> dict:
    """What the page's size budget cut: the ``cut`` entry at the end of its data blob."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.path.getsize(path) - 200_000))
        tail = handle.read().decode("utf-8", errors="replace")
    found = re.findall(r'"cut":(\{[^}]*\})', tail)
    return json.loads(found[-1]) if found else {}


def yamleval_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "yamleval")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "yamleval"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--experiments", type=int, default=1, help="split the items over this many experiments")
    parser.add_argument("--answer-kb", type=float, default=0, help="answers of about this many KB (default: short)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    options = parser.parse_args(argv)

    folder = tempfile.mkdtemp(prefix="yamleval-html-bench-")
    try:
        write_dataset(folder, options.items, options.experiments, options.answer_kb)
        config = os.path.join(folder, "bench.yaml")
        with open(config, "w", encoding="utf-8") as out:
            out.write("reports: {formats: [html]}\nexperiments:\n"
                      + "".join(EXPERIMENT.format(number=n) for n in range(options.experiments)))
        store, command = os.path.join(folder, "results.db"), yamleval_command()
        started = time.perf_counter()
        done = subprocess.run(command + ["run", config, "--quiet", "--store", store, "--report-dir", folder],
                              capture_output=True, text=True, cwd=folder)
        run_seconds = time.perf_counter() - started
        if done.returncode not in (0, 1):
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        print(f"run       {options.items:,} items in {options.experiments:,} experiment(s)"
              + (f", answers of ~{options.answer_kb:g} KB" if options.answer_kb else "")
              + f": yamleval run (store and report.html) {run_seconds:.1f} s")

        renders = []
        for _ in range(options.repeat):
            started = time.perf_counter()
            subprocess.run(command + ["report", "--store", store, "--format", "html", "--report-dir", folder],
                           check=True, capture_output=True, cwd=folder)
            renders.append(time.perf_counter() - started)
        path = os.path.join(folder, "report.html")
        size, cut = os.path.getsize(path), cut_figures(path)
        print(f"report    {size / 1e6:,.1f} MB ({size:,} bytes); {cut.get('texts', 0):,} texts cut to "
              f"{cut.get('cap', 0):,} characters (size budget {cut.get('max_mb', '?')} MB"
              f"{', reached' if cut.get('budget') else ', not reached'})")
        print(f"render    yamleval report --format html {median_and_min(renders)}  (median [fastest] of {options.repeat})")

        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            print("browser   skipped: playwright is not installed")
            return 0
        if not os.access(CHROMIUM, os.X_OK):
            print(f"browser   skipped: {CHROMIUM} is missing")
            return 0
        url = "file://" + path
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                usable_seconds(browser, url)  # warm-up: the file into the page cache, chromium started
                timings = [usable_seconds(browser, url) for _ in range(options.repeat)]
                searches = [search_seconds(browser, url, "charged twice") for _ in range(options.repeat)]
            finally:
                browser.close()
        print(f"browser   first row visible {median_and_min([t[0] for t in timings])}; "
              f"usable (filter answered) {median_and_min([t[1] for t in timings])}")
        print(f"          search over all items {median_and_min(searches)}")
        return 0
    finally:
        if options.keep:
            print(f"kept      {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
