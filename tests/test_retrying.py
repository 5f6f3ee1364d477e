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
