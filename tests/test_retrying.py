"""Which replies are retried, and how long Retry-After asks to wait."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from yamleval.retrying import retry_after_seconds, retryable_status


@pytest.mark.parametrize("status, expected", [(408, True), (409, True), (429, True), (500, True), (503, True),
                                              (599, True), (400, False), (401, False), (404, False), (200, False)])
def test_retryable_status(status, expected):
    assert retryable_status(status) is expected


def test_retry_after_seconds_and_dates():
    assert retry_after_seconds("1") == 1.0
    assert retry_after_seconds(" 2.5 ") == 2.5
    assert retry_after_seconds("-3") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("") is None
    assert retry_after_seconds("soon") is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 27 <= retry_after_seconds(later) <= 30
    past = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds(past) == 0.0


def test_with_retries_tries_again_only_for_the_errors_named_and_raises_the_last():
    from yamleval.retrying import with_retries

    calls, waits = [], []

    def flaky(outcomes):
        def send():
            calls.append(1)
            outcome = outcomes.pop(0)
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        return send

    def wait(exc, attempt):
        waits.append((type(exc).__name__, attempt))
        return 0

    def retried(exc):
        return isinstance(exc, (TimeoutError, ConnectionError))

    assert with_retries(flaky([TimeoutError(), ConnectionError(), "ok"]), 2, retried, wait) == "ok"
    assert len(calls) == 3 and waits == [("TimeoutError", 1), ("ConnectionError", 2)]
    calls.clear()
    with pytest.raises(ConnectionError):
        with_retries(flaky([TimeoutError(), ConnectionError(), ConnectionError()]), 1, retried, wait)
    assert len(calls) == 2, "retries: 1 means two attempts at most"
    calls.clear()
    with pytest.raises(ValueError):
        with_retries(flaky([ValueError(), "never"]), 5, retried, wait)
    assert len(calls) == 1, "an error not named is not tried again"


def test_backoff_doubles_from_half_a_second_up_to_a_minute_with_jitter():
    from yamleval.retrying import MAX_WAIT, backoff

    for attempt, base in ((1, 0.5), (2, 1.0), (3, 2.0), (10, MAX_WAIT)):
        for _ in range(20):
            assert base <= backoff(attempt) <= base + 0.5
