"""A database URL as messages, logs and pages show it: every password libpq would read hidden.

libpq takes a password from ``user:password@`` (raw or percent-encoded, and a raw ``#`` or ``?``
in it is still the password to a user who pasted it), from ``password=`` in the query, and from
``PGPASSWORD``. The URL is not parsed as a URL for this: a raw ``#`` would end it early and leave
the rest of the password in a "fragment". When in doubt more is hidden, never less.
"""
from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
# ``password=...`` in the query, the key perhaps percent-encoded, up to the next ``&``
_QUERY_PASSWORD = re.compile(r"([?&](?:[^=&]*))=([^&]*)")


def shown_database_url(url: str) -> str:
    """``url`` with the password of its user part and of its query replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    at = rest.rfind("@")
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        rest = f"{user}{colon and ':' + HIDDEN}@{rest[at + 1:]}"
    return f"{scheme}://{_QUERY_PASSWORD.sub(_hidden_pair, rest)}"


def _hidden_pair(match: re.Match) -> str:
    key = match.group(1)
    return f"{key}={HIDDEN}" if unquote(key[1:]).strip().lower() == "password" else match.group(0)


def passwords(url: str, environ: dict[str, str]) -> list[str]:
    """Every password ``url`` and the environment give libpq, raw and decoded, longest first: the
    texts that a server's or a driver's message must not repeat."""
    found = {environ.get("PGPASSWORD", "")}
    _, _, rest = url.partition("://")
    at = rest.rfind("@")
    if at >= 0 and ":" in rest[:at]:
        found.add(rest[:at].partition(":")[2])
    for match in _QUERY_PASSWORD.finditer(rest):
        if unquote(match.group(1)[1:]).strip().lower() == "password":
            found.add(match.group(2))
    found |= {unquote(text) for text in found}
    return sorted((text for text in found if text), key=len, reverse=True)


def scrubbed(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text
