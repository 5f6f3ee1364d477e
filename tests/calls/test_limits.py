"""Rate limits and adaptive concurrency against a service that admits so many requests a
second and refuses the rest with 429: what is refused, what is lost, what is reported."""
from __future__ import annotations

import json
import math
import time

import pytest

import yamleval
from conftest import run_cli
from servers.throttled import ThrottledServer
from yamleval.reporting.console import summary_text
from yamleval.calls import Network
from yamleval.calls.limits import Limiter, RateLimit

CONFIG = """
    store: results.db
    reports: {{dir: out, formats: [json, markdown]}}
    experiments:
      - id: limited
        concurrency: {concurrency}
        dataset: {{file: items.jsonl}}
        runner:
          uses: http
          with: {{url: "{url}", body: {{input: "{{{{ input }}}}"}}, output: output{options}}}
        scorers: [exact_match]
"""


@pytest.fixture
def service():
    """100 requests a second (10 at once), each answered after 0.2 s: room for 20 in flight."""
    with ThrottledServer(rate=100, burst=10, delay=0.2) as server:
        yield server


def _project(write_config, tmp_path, server, items, concurrency, options=""):
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(items):
            out.write(json.dumps({"id": f"i{i:03d}", "input": f"question {i}", "expected": f"question {i}"}) + "\n")
    return write_config(CONFIG.format(concurrency=concurrency, url=server.url, options=options))


def test_with_a_rate_limit_no_request_is_refused(service, write_config, tmp_path):
    path = _project(write_config, tmp_path, service, items=120, concurrency=32,
                    options=", rate_limit: {requests_per_minute: 4800}")  # 80 a second
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    assert (service.admitted, service.refused) == (120, 0)
    assert result.summary.passed == 120
    throttling = result.summary.throttling
    assert (throttling.calls, throttling.throttled) == (120, 0) and throttling.waited_seconds > 0
    assert "  throttled   0 of 120 calls refused (429/503)" in summary_text(result)


def test_adaptive_concurrency_loses_no_item_to_429s_and_reports_the_refusals(service, write_config, tmp_path):
    _project(write_config, tmp_path, service, items=300, concurrency=64)
    done = run_cli("run", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert service.admitted == 300 and service.refused > 0  # it was throttled, and recovered every time
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    [entry] = results["experiments"]
    assert [item["status"] for item in entry["items"]] == ["passed"] * 300
    assert entry["summary"]["throttling"]["calls"] == 300 + service.refused
    assert entry["summary"]["throttling"]["throttled"] == service.refused
    assert f"{service.refused} of {300 + service.refused} calls refused (429/503)" in done.stdout
    assert f"Throttled: {service.refused} of" in (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    again = run_cli("report", "latest", "--format", "json,markdown", "--report-dir", "again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    for name in ("results.json", "summary.md"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "out" / name).read_bytes(), name


def test_without_adaptive_concurrency_the_same_service_refuses_items_to_the_end(service, write_config, tmp_path):
    # no retries: a refusal is the item's error, however slowly a busy machine starts the calls
    path = _project(write_config, tmp_path, service, items=200, concurrency=64, options=", adaptive: false, retries: 0")
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    assert result.summary.errored > 0
    assert all("HTTP 429" in r.error for r in result.items if r.status == "error")


def test_an_endpoint_has_one_limiter_per_run_whose_first_caller_sets_it_and_a_stricter_one_tightens_it():
    run = Network()
    first = run.limiter(("http", "limited.invalid", 80), RateLimit(requests_per_minute=60), adaptive=False)
    assert run.limiter(("http", "limited.invalid", 80), RateLimit(requests_per_minute=60), adaptive=False) is first
    assert run.limiter(("http", "limited.invalid", 80), None, adaptive=False) is first  # a looser caller: as it was
    assert (first.rate_limit, first.adaptive) == (RateLimit(requests_per_minute=60), False)
    run.limiter(("http", "limited.invalid", 80), RateLimit(requests_per_minute=120, tokens_per_minute=1000))
    assert (first.rate_limit, first.adaptive) == (RateLimit(requests_per_minute=60, tokens_per_minute=1000), True)
    assert run.limiter(("http", "free.invalid", 80), None, adaptive=False) is None


def test_two_runs_in_one_process_share_no_limiter():
    endpoint = ("http", "limited.invalid", 80)
    one, other = Network(), Network()
    mine = one.limiter(endpoint, RateLimit(requests_per_minute=60))
    theirs = other.limiter(endpoint, RateLimit(requests_per_minute=6000))
    assert mine is not theirs and one.limiter(endpoint, None) is mine
    assert mine.rate_limit == RateLimit(requests_per_minute=60)  # the other run's settings are its own
    mine.release(mine.acquire(), 200)
    assert (one.throttling().calls, other.throttling().calls) == (1, 0)


def test_a_call_with_nothing_to_space_starts_without_waiting_its_turn():
    """No requests_per_minute and adaptive concurrency not limiting: a call does not wait for
    another call's start, however many are in flight."""
    limiter = Limiter(None, adaptive=True)
    with limiter._turn:  # a spaced call would wait for this
        started = [limiter.acquire() for _ in range(50)]
    assert len(started) == 50 and limiter.calls == 50 and limiter.limit == math.inf


def test_refusals_shrink_the_calls_allowed_and_answers_grow_them_back():
    limiter = Limiter(None, adaptive=True)
    assert limiter.limit == math.inf
    started = [limiter.acquire() for _ in range(20)]
    limiter.release(started.pop(), 429, retry_after=0.2)
    assert limiter.limit == 17  # 15% fewer than the 20 that were out
    for _ in range(4):
        limiter.release(started.pop(), 429, retry_after=0.2)
    assert limiter.limit == 15  # within the window, only down to the calls still in flight
    for _ in range(4):
        limiter.release(started.pop(0), 200)
        started.append(limiter.acquire())
    assert limiter.limit == 15  # nor does it grow within the window
    time.sleep(0.25)
    for limit, answers in ((15, 8), (16, 8)):
        for _ in range(answers):  # the limit reached each time a call ends: two more per `limit` answers
            limiter.release(started.pop(0), 200)
            started.append(limiter.acquire())
        assert limiter.limit == limit + 1
        started.append(limiter.acquire())
    assert (limiter.calls, limiter.throttled) == (20 + 4 + 8 + 1 + 8 + 1, 5)


def _answer(limiter: Limiter, started: list, count: int) -> None:
    """``count`` of the calls out answered, each followed by another call while the limit allows one."""
    for _ in range(count):
        limiter.release(started.pop(0), 200)
        if len(started) < limiter.limit:
            started.append(limiter.acquire())


def test_a_refusal_before_any_answer_does_not_hold_the_growth_back_for_its_window():
    """Refused in the first burst, before any call came back: the endpoint's burst is spent, and
    the calls allowed grow back from the first answers, though the Retry-After is a minute.
    Refused once answers came, the growth waits for the window."""
    first_burst, answered_before = Limiter(None, adaptive=True), Limiter(None, adaptive=True)
    for limiter in (first_burst, answered_before):
        started = [limiter.acquire() for _ in range(21)]
        if limiter is answered_before:
            _answer(limiter, started, 1)
        limiter.release(started.pop(), 429, retry_after=60)
        assert limiter.limit == 17
        _answer(limiter, started, 12)
    assert (first_burst.limit, answered_before.limit) == (18, 17)


def test_a_refusal_at_one_call_at_a_time_pauses_the_endpoint_until_retry_after():
    limiter = Limiter(None, adaptive=True)
    limiter.release(limiter.acquire(), 429, retry_after=0.3)
    assert limiter.limit == 1
    limiter.acquire()
    assert limiter.waited >= 0.3


@pytest.mark.parametrize("value, message", [
    ("600", "must be a mapping"),
    ({"requests_per_minute": 0}, r"`rate_limit.requests_per_minute` must be a number above 0, not 0"),
    ({"tokens_per_minute": True}, "must be a number above 0"),
    ({"per_minute": 10}, "unknown key"),
])
def test_a_bad_rate_limit_says_what_is_wrong(value, message):
    with pytest.raises(ValueError, match=message):
        RateLimit.from_value(value)
