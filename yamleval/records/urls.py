"""A database URL as messages, logs and pages show it: every password libpq would read hidden.

libpq takes a password from ``user:password@`` (raw or percent-encoded, and a raw ``#``, ``?``,
``/`` or ``@`` in it is still the password to a user who pasted it), from a query key such as
``password=`` or ``sslpassword=``, and from ``PGPASSWORD``. The URL is not parsed as a URL for
this: a raw ``#`` would end it early and leave the rest of the password in a "fragment". When
in doubt more is hidden, never less.
"""
from __future__ import annotations

import re
from urllib.parse import unquote

HIDDEN = "***"
_PAIR = re.compile(r"([?&][^=&]*)=([^&]*)")  # a query's key (perhaps percent-encoded) and its value
MIN_PIECE = 4  # a piece of a password split where libpq may split it, scrubbed from words when this long


def _secret_key(key: str) -> bool:
    return unquote(key[1:]).strip().lower().endswith("password")


def _user_end(rest: str) -> int:
    """Where the user part ends (its ``@``), or -1: the last ``@`` before the query when there is
    one there, else the last of all (a ``?`` in the password hides the query's start)."""
    query = rest.find("?")
    if query >= 0 and "@" in rest[:query]:
        return rest.rfind("@", 0, query)
    return rest.rfind("@")


def shown_database_url(url: str) -> str:
    """``url`` with the password of its query keys and of its user part replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    rest = _PAIR.sub(lambda m: f"{m.group(1)}={HIDDEN}" if _secret_key(m.group(1)) else m.group(0), rest)
    at = _user_end(rest)
    if at >= 0:
        user, colon, _ = rest[:at].partition(":")
        rest = f"{user}{colon and ':' + HIDDEN}@{rest[at + 1:]}"
    return f"{scheme}://{rest}"


def passwords(url: str, environ: dict[str, str]) -> list[str]:
    """Every password ``url`` and the environment give libpq, raw and decoded, and its pieces where
    libpq may split a raw one (at ``@``, ``/``, ``:``), longest first: the texts a server's or a
    driver's message must not repeat."""
    found = {environ.get("PGPASSWORD", "")}
    _, _, rest = url.partition("://")
    for match in _PAIR.finditer(rest):
        if _secret_key(match.group(1)):
            found.add(match.group(2))
    for at in {_user_end(rest), rest.rfind("@")} - {-1}:
        if ":" in rest[:at]:
            secret = rest[:at].partition(":")[2]
            found.add(secret)
            found |= {piece for piece in re.split(r"[@/:?#]", secret) if len(piece) >= MIN_PIECE}
    found |= {unquote(text) for text in found}
    return sorted((text for text in found if text), key=len, reverse=True)


def scrubbed(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, HIDDEN)
    return text
