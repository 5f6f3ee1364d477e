"""How a database URL is shown: every password libpq would read is ``***``; the rest as given."""
import pytest

from yamleval.records.errors import display_path
from yamleval.records.urls import passwords, scrubbed, shown_database_url


@pytest.mark.parametrize("url, shown", [
    ("postgresql://ann:pw@db.test:5432/runs", "postgresql://ann:***@db.test:5432/runs"),
    ("postgresql://ann:p#w?x@db.test/runs", "postgresql://ann:***@db.test/runs"),
    ("postgresql://ann:p%23w@db.test/runs", "postgresql://ann:***@db.test/runs"),
    ("postgresql://ann:p@w@db.test/runs", "postgresql://ann:***@db.test/runs"),
    ("postgresql://ann@db.test/runs?password=pw&sslmode=require",
     "postgresql://ann@db.test/runs?password=***&sslmode=require"),
    ("postgresql://ann@db.test/runs?sslmode=require&pass%77ord=pw", "postgresql://ann@db.test/runs?sslmode=require&pass%77ord=***"),
    ("postgresql://db.test/runs?application_name=x", "postgresql://db.test/runs?application_name=x"),
    ("postgresql://db.test:5432/runs?password=se@cret", "postgresql://db.test:5432/runs?password=***"),
    ("postgresql://ann:pw@db.test/runs?options=a@b", "postgresql://ann:***@db.test/runs?options=a@b"),
    ("postgresql://ann@db.test/runs?sslpassword=pass", "postgresql://ann@db.test/runs?sslpassword=***"),
    ("postgresql://ann@db.test/runs", "postgresql://ann@db.test/runs"),
])
def test_a_database_url_is_shown_without_its_passwords(url, shown):
    assert shown_database_url(url) == shown == display_path(url)


def test_a_servers_words_never_repeat_a_password_in_any_form():
    found = passwords("postgresql://ann:p%23w@db.test/runs?password=q%26", {"PGPASSWORD": "envpw"})
    assert set(found) == {"p%23w", "p#w", "q%26", "q&", "envpw"}
    assert scrubbed("auth failed for p#w, q& and envpw", found) == "auth failed for ***, *** and ***"
    pieces = passwords("postgresql://ann:pass@word@db.test/runs", {})
    assert {"pass@word", "pass", "word"} <= set(pieces)  # libpq may take "word@db.test" for the host
