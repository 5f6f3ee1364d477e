"""Who may read the Eval Center: with tokens, only a request that brings one, as
``Authorization: Bearer TOKEN`` or in the cookie the sign-in page sets (which holds a digest of
the token, not the token). A token's label (``ana=TOKEN``) names who holds it: the request's
``state["reviewer"]``. Written as plain ASGI middleware, so that it also guards the stream of a
running run's updates."""
from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from http.cookies import SimpleCookie

from yamleval.serve import is_local

COOKIE = "yamleval_session"
SIGN_IN = "/sign-in"
OPEN_PATHS = (SIGN_IN, "/favicon.ico")


def cookie_value(token: str) -> str:
    return hmac.new(token.encode("utf-8"), b"yamleval serve session", hashlib.sha256).hexdigest()


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return ""


def host_of(scope) -> str:
    """The host a request names (a proxy's ``X-Forwarded-Host`` first), as ``name:port``."""
    return _header(scope, b"x-forwarded-host") or _header(scope, b"host")


def holder(scope, tokens: dict[str, str]) -> str | None:
    """The label of the token the request brings ("" for a token without one), or None without one."""
    given = _header(scope, b"authorization")
    if given.startswith("Bearer "):
        found = matching(given[7:].strip(), tokens)
        if found is not None:
            return found
    cookies = SimpleCookie()
    try:
        cookies.load(_header(scope, b"cookie"))
    except Exception:  # a malformed cookie header: as if none
        return None
    kept = cookies.get(COOKIE)
    if kept is None:
        return None
    for token, label in tokens.items():
        if hmac.compare_digest(kept.value.encode(), cookie_value(token).encode()):
            return label
    return None


def matching(given: str, tokens: dict[str, str]) -> str | None:
    """The label of the token ``given`` is (each compared in constant time), or None."""
    found = None
    for token, label in tokens.items():
        if hmac.compare_digest(given.encode(), token.encode()):
            found = label
    return found


class TokenRequired:
    """Answers 401 to every request without the token, but the sign-in page's; a page's request
    is sent to sign in, an API's gets the reason as JSON."""

    def __init__(self, app, tokens: dict[str, str]):
        self.app, self.tokens = app, tokens

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        label = holder(scope, self.tokens)
        if label is not None:
            scope.setdefault("state", {})["reviewer"] = label or None
            return await self.app(scope, receive, send)
        if scope["path"].startswith("/api/"):
            body = b'{"error": "this server needs its token: send Authorization: Bearer TOKEN"}'
            kind = b"application/json"
        else:
            target = SIGN_IN + "?" + urllib.parse.urlencode({"next": scope["path"]})
            body = (f'<!DOCTYPE html><meta charset="utf-8"><title>Sign in</title><p>This Eval Center needs its token:'
                    f' <a href="{target}">sign in</a>.</p>').encode("utf-8")
            kind = b"text/html; charset=utf-8"
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="yamleval"'), (b"cache-control", b"no-store"),
                                (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'")]})
        await send({"type": "http.response.body", "body": body})


class LocalOnly:
    """A server without a token is this machine's alone: a request that names another host (a
    page elsewhere whose name was made to point here, DNS rebinding) is refused, reads as writes."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or is_local(urllib.parse.urlsplit("//" + host_of(scope)).hostname or ""):
            return await self.app(scope, receive, send)
        body = b'{"error": "this server answers requests to this machine\'s own address only (127.0.0.1, localhost)"}'
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})
