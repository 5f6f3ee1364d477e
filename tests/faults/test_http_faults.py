"""The fault suite: 1,000 items at concurrency 20 through the ``http`` runner, the ``openai``
runner and the ``judge``, against a server that injects faults at the network edge.

Each item meets a fixed plan of faults (see ``PLANS``), so the suite can say exactly how
every item must end, why, and how many requests it may cost: every item ends once as
passed, failed or error; an error names its cause; a transient fault is retried into a
success; and no item is tried more than ``1 + retries`` times.
"""
from __future__ import annotations

import json
import re
import sqlite3
import time
import tracemalloc
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import run_cli
from servers.faulty import FaultyServer, answer_for
from yamleval.builtins.models.client import ChatClient, ModelConfig, ModelError
from yamleval.builtins.runners.http import http
from yamleval.records.types import Item

pytestmark = pytest.mark.faults

ITEMS = 1000
CONCURRENCY = 20
RETRIES = 2
TIMEOUT = 0.5          # seconds per attempt; the server's slow replies take twice that
SECRET = "sk-fault-suite-secret-4242"


@dataclass(frozen=True)
class Plan:
    """What an item meets, attempt by attempt (the last fault repeats), and how it must end."""

    faults: tuple[str, ...]
    status: str
    cause: str | None = None   # a pattern the item's error must match
    attempts: int = 1          # requests the server must see for the item
    judge_attempts: int | None = None   # when a judge makes more: a forced call refused, then JSON mode


PLANS: dict[str, Plan] = {
    "ok": Plan(("ok",), "passed"),
    "wrong": Plan(("wrong",), "failed"),
    "json-as-text": Plan(("json-as-text",), "passed"),
    "429-twice": Plan(("429-ra0", "429-ra0", "ok"), "passed", attempts=3),
    "502-once": Plan(("502-ra0", "ok"), "passed", attempts=2),
    "503-wait-once": Plan(("503-ra1", "ok"), "passed", attempts=2),
    "429-backoff-once": Plan(("429", "ok"), "passed", attempts=2),
    "500-backoff-once": Plan(("500", "ok"), "passed", attempts=2),
    "reset-once": Plan(("reset", "ok"), "passed", attempts=2),
    "slow-once": Plan(("slow", "ok"), "passed", attempts=2),
    "trickle-once": Plan(("trickle", "ok"), "passed", attempts=2),
    "stall-once": Plan(("stall", "ok"), "passed", attempts=2),
    "500-always": Plan(("500-ra0",), "error", r"HTTP 500", RETRIES + 1),
    "429-always": Plan(("429-ra0",), "error", r"HTTP 429", RETRIES + 1),
    "503-always": Plan(("503",), "error", r"HTTP 503", RETRIES + 1),
    "reset-always": Plan(("reset",), "error", r"Connection reset by peer|cut off|closed the connection",
                         RETRIES + 1),
    "slow-always": Plan(("slow",), "error", r"timed out|no reply within", RETRIES + 1),
    "stall-always": Plan(("stall",), "error", r"timed out|no reply within", RETRIES + 1),
    "400": Plan(("400",), "error", r"HTTP 400"),
    "400-too-long": Plan(("400-too-long",), "error", r"HTTP 400.*maximum context length", judge_attempts=2),
    "truncated": Plan(("truncated",), "error", r"not JSON"),
    "html": Plan(("html",), "error", r"not JSON.*text/html"),
    "huge": Plan(("huge",), "error", r"larger than 10 MB"),
    "huge-undeclared": Plan(("huge-undeclared",), "error", r"larger than 10 MB"),
}

# One block of 100 items, repeated: cheap faults often, the ones that wait (backoff without
# Retry-After, timeouts) once a block, so 1,000 items take seconds rather than minutes.
BLOCK = (["ok"] * 44 + ["wrong"] * 6 + ["json-as-text"] * 4 + ["429-twice"] * 10 + ["502-once"] * 5
         + ["500-always"] * 5 + ["429-always"] * 4 + ["400"] * 4 + ["truncated"] * 4 + ["html"] * 4
         + ["reset-once", "stall-once", "503-wait-once", "429-backoff-once", "500-backoff-once", "slow-once",
            "trickle-once", "503-always", "reset-always", "slow-always"])
# A few items only: 50 MB replies, stalls that cost three timeouts, and context-length 400s
RARE = {13: "huge", 413: "huge-undeclared", 613: "huge", 913: "huge-undeclared",
        222: "stall-always", 722: "stall-always", 5: "400-too-long", 555: "400-too-long"}


def plan_name(index: int) -> str:
    return RARE.get(index) or BLOCK[(index * 37) % len(BLOCK)]  # 37 is prime to 100: spread, not clustered


def item_id(index: int) -> str:
    return f"it-{index:04d}"


@pytest.fixture
def server():
    plans = {item_id(i): PLANS[plan_name(i)].faults for i in range(ITEMS)}
    with FaultyServer(plans, slow_seconds=2 * TIMEOUT) as running:
        yield running


def run_faults(tmp_path: Path, server: FaultyServer, body: str) -> tuple[dict, list[dict]]:
    """Run one experiment over the 1,000 items through the command line; its results.json
    experiment and the items the store holds."""
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(ITEMS):
            out.write(json.dumps({"id": item_id(i), "input": f"question {item_id(i)}",
                                  "expected": answer_for(item_id(i))}) + "\n")
    config = tmp_path / "evals.yaml"
    config.write_text(body.replace("URL", server.url), encoding="utf-8")
    started = time.monotonic()
    done = run_cli("run", str(config), "-q", "--report-dir", str(tmp_path / "reports"),
                   "--store", str(tmp_path / "results.db"), cwd=tmp_path, timeout=120, FAULT_KEY=SECRET)
    assert done.returncode == 1, done.stdout + done.stderr   # items errored: the experiment fails
    assert time.monotonic() - started < 60
    assert SECRET not in done.stdout + done.stderr
    report_text = (tmp_path / "reports" / "results.json").read_text(encoding="utf-8")
    assert SECRET not in report_text
    [experiment] = json.loads(report_text)["experiments"]
    with closing(sqlite3.connect(tmp_path / "results.db")) as db:
        stored = [{"id": row[0], "status": row[1], **json.loads(row[2])}
                  for row in db.execute("SELECT item_id, status, record FROM items")]
    assert not any(SECRET in json.dumps(record) for record in stored)
    return experiment, stored


def check_every_item(experiment: dict, stored: list[dict], server: FaultyServer, *, judge: bool = False) -> None:
    """Each item once, with the status, cause and number of requests its plan says."""
    items = experiment["items"]
    assert len(items) == ITEMS and len(stored) == ITEMS
    assert [item["id"] for item in items] == [item_id(i) for i in range(ITEMS)]   # dataset order, no gaps
    assert len({row["id"] for row in stored}) == ITEMS
    assert {row["id"]: row["status"] for row in stored} == {item["id"]: item["status"] for item in items}

    summary = experiment["summary"]
    assert summary["total"] == summary["completed"] == ITEMS
    counts = {status: sum(item["status"] == status for item in items) for status in ("passed", "failed", "error")}
    assert sum(counts.values()) == ITEMS, "an item ended as something other than passed, failed or error"
    assert (summary["passed"], summary["failed"], summary["errored"]) == (
        counts["passed"], counts["failed"], counts["error"])

    wrong = []
    for index, item in enumerate(items):
        name = plan_name(index)
        plan = PLANS[name]
        seen = server.attempts[item["id"]]
        attempts = plan.judge_attempts if judge and plan.judge_attempts else plan.attempts
        problems = []
        if item["status"] != plan.status:
            problems.append(f"status {item['status']} (expected {plan.status})")
        if seen != attempts:
            problems.append(f"{seen} requests (expected {attempts})")
        if plan.cause and not re.search(plan.cause, item.get("error") or ""):
            problems.append(f"error {item.get('error')!r} does not match {plan.cause!r}")
        if not plan.cause and item.get("error"):
            problems.append(f"unexpected error {item['error']!r}")
        if not judge and plan.status != "error":
            recorded = (item.get("output_metadata") or {}).get("attempts", 1)
            if recorded != seen:
                problems.append(f"metadata says {recorded} attempts, the server saw {seen}")
        if problems:
            wrong.append(f"{item['id']} ({name}): {'; '.join(problems)}")
    assert not wrong, f"{len(wrong)} items went wrong:\n" + "\n".join(wrong[:30])
    assert max(server.attempts.values()) <= RETRIES + 1
    assert set(server.attempts) == {item_id(i) for i in range(ITEMS)}


def test_http_runner_under_faults(tmp_path, server):
    experiment, stored = run_faults(tmp_path, server, f"""
version: 1
experiments:
  - id: faults-http
    concurrency: {CONCURRENCY}
    timeout: 30
    dataset: {{file: items.jsonl}}
    runner:
      uses: http
      with:
        url: URL/chat
        headers: {{Authorization: "Bearer ${{FAULT_KEY}}"}}
        body: {{item: "{{{{ item.id }}}}", message: "{{{{ input }}}}"}}
        output: choices.0.message.content
        usage: usage
        timeout: {TIMEOUT}
        retries: {RETRIES}
    scorers: [exact_match]
""")
    check_every_item(experiment, stored, server)


def test_openai_runner_under_faults(tmp_path, server):
    experiment, stored = run_faults(tmp_path, server, f"""
version: 1
models:
  sut: {{base_url: URL/v1, model: faulty, api_key: "${{FAULT_KEY}}", timeout: {TIMEOUT}, retries: {RETRIES}}}
experiments:
  - id: faults-openai
    concurrency: {CONCURRENCY}
    timeout: 30
    dataset: {{file: items.jsonl}}
    runner: {{uses: openai, with: {{model: sut}}}}
    scorers: [exact_match]
""")
    check_every_item(experiment, stored, server)


def test_judge_under_faults(tmp_path, server):
    experiment, stored = run_faults(tmp_path, server, f"""
version: 1
models:
  judge: {{base_url: URL/v1, model: faulty, api_key: "${{FAULT_KEY}}", timeout: {TIMEOUT}, retries: {RETRIES}}}
experiments:
  - id: faults-judge
    concurrency: {CONCURRENCY}
    timeout: 30
    dataset: {{file: items.jsonl}}
    runner: echo
    scorers: [{{uses: judge, with: {{model: judge}}}}]
""")
    check_every_item(experiment, stored, server, judge=True)


@pytest.mark.parametrize("fault", ["huge", "huge-undeclared"])
def test_a_50_mb_reply_is_refused_without_reading_it_whole(fault):
    """Twenty such replies at once would need a gigabyte; a refused one costs at most the limit."""
    with FaultyServer({"it-0001": [fault]}) as server:
        tracemalloc.start()
        try:
            with pytest.raises(ValueError, match=r"^the reply from POST http://127\.0\.0\.1:\d+/chat is larger "
                                                 r"than 10 MB, more than `max_reply_mb` allows"):
                http(Item(id="it-0001", index=0, input="q"), url=f"{server.url}/chat", body={"item": "it-0001"})
            config = ModelConfig(name="sut", base_url=f"{server.url}/v1", model="faulty", retries=RETRIES)
            with ChatClient(config) as client, pytest.raises(ModelError, match="larger than 10 MB") as info:
                client.chat([{"role": "user", "content": "it-0001"}])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert info.value.attempts == 1 and not info.value.retryable
    assert server.attempts["it-0001"] == 2, "a reply too large is refused, not asked for again"
    assert peak < 25_000_000, f"reading a refused reply took {peak / 1e6:.0f} MB"


def test_the_reply_limit_is_a_runner_option(tmp_path):
    with FaultyServer() as server:
        item = Item(id="it-0002", index=0, input="q")
        reply = http(item, url=f"{server.url}/chat", body={"item": "it-0002"}, output="choices.0.message.content",
                     max_reply_mb=0.01)
        assert reply.output == answer_for("it-0002")
        with pytest.raises(ValueError, match="is larger than 100 bytes"):
            http(item, url=f"{server.url}/chat", body={"item": "it-0002"}, max_reply_mb=0.0001)
        with pytest.raises(ValueError, match="`max_reply_mb` must be a number of megabytes above 0"):
            http(item, url=f"{server.url}/chat", max_reply_mb=0)


def test_one_items_400_naming_functions_does_not_change_how_later_items_are_judged():
    """A context-length 400 mentions "functions" but is about that request alone: the judge
    must keep asking later items through the forced function call."""
    schema = {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}, "reasoning": {"type": "string"}},
              "required": ["verdict", "reasoning"]}
    with FaultyServer({"it-0001": ["400-too-long"]}) as server:
        config = ModelConfig(name="function-judge", base_url=f"{server.url}/v1", model="faulty", retries=RETRIES)
        with ChatClient(config) as client:
            with pytest.raises(ModelError, match="HTTP 400: it-0001: this model's maximum context length"):
                client.structured([{"role": "user", "content": "it-0001"}], schema, "grade")
            answer, _ = client.structured([{"role": "user", "content": "it-0002"}], schema, "grade")
    assert answer == {"verdict": "pass", "reasoning": "graded it-0002"}
    assert server.attempts == {"it-0001": 2, "it-0002": 1}   # it-0001: the forced call, then JSON mode
