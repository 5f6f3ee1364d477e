#!/usr/bin/env python
"""How big report.html gets for a large run, how long Python takes to render it, and how soon
headless chromium makes it usable.

A JSONL dataset of N items (default 100,000) with customer-service texts of 100-400 characters
is generated with a fixed seed; the built-in ``echo`` runner answers with a prepared reply that
equals the expected answer for about 70% of the items and differs slightly for the rest; the
scorers are ``exact_match`` and ``levenshtein`` (threshold 0.8). The run goes through the Python
API, then ``yamleval.reporting.html`` renders it.

Time to usable: from ``page.goto`` of the file:// URL until the first table row is visible and
the status filter has answered a click (hiding passed items). Each figure is the median of
``--repeat`` runs (fresh page each time), with the fastest in brackets.

    python bench/html_report.py                  # 100,000 items, 3 runs
    python bench/html_report.py --items 10000 --repeat 5 --keep
    python bench/html_report.py --items 2000 --experiments 1000   # many small experiments

Needs playwright and /usr/bin/chromium for the browser figures; without them only the Python
figures are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
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


def write_dataset(folder: str, items: int, experiments: int) -> None:
    """``items`` tickets split evenly over one JSONL file per experiment."""
    rnd = random.Random(20240601)
    for e in range(experiments):
        with open(os.path.join(folder, f"tickets-{e}.jsonl"), "w", encoding="utf-8") as out:
            for n in range(items * e // experiments, items * (e + 1) // experiments):
                question = (rnd.choice(OPENERS) + " " + text(rnd, ASKS, DETAILS)).strip()
                expected = text(rnd, ANSWERS, ANSWERS)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--experiments", type=int, default=1, help="split the items over this many experiments")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print its path")
    options = parser.parse_args(argv)

    import yamleval
    from yamleval.reporting import html, write_reports
    from yamleval.types import RunInfo

    folder = tempfile.mkdtemp(prefix="yamleval-html-bench-")
    try:
        write_dataset(folder, options.items, options.experiments)
        config = os.path.join(folder, "bench.yaml")
        with open(config, "w", encoding="utf-8") as out:
            out.write("experiments:\n" + "".join(EXPERIMENT.format(number=n) for n in range(options.experiments)))
        started = time.perf_counter()
        results = [yamleval.run_experiment(e) for e in yamleval.load_experiments(config)]
        run_seconds = time.perf_counter() - started
        run = RunInfo(run_id="html-bench", status="completed", started_at=results[0].started_at,
                      completed_at=results[-1].completed_at, yamleval_version=yamleval.__version__,
                      config_files=("bench.yaml",))
        passed, failed = sum(r.summary.passed for r in results), sum(r.summary.failed for r in results)
        print(f"run       {options.items:,} items in {len(results):,} experiment(s) in {run_seconds:.1f} s: "
              f"{passed:,} passed, {failed:,} failed")

        renders = []
        for _ in range(options.repeat):
            started = time.perf_counter()
            document = html.render(run, results)
            renders.append(time.perf_counter() - started)
        path = os.path.join(folder, "report.html")
        write_reports(folder, ["html"], run, results)
        size = os.path.getsize(path)
        print(f"report    {size / 2**20:,.1f} MiB ({size:,} bytes), {len(document):,} characters")
        print(f"render    Python {median_and_min(renders)}  (median [fastest] of {options.repeat})")
        del document

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
