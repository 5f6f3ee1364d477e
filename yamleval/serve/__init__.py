"""The Eval Center: ``yamleval serve``, a web application over a results database that shows
every stored run, a running one as it runs. ``serve`` checks what it is given, then serves
until interrupted; ``application`` (``serve.app``) is the ASGI application itself."""
from __future__ import annotations

import ipaddress
import os
import re

from yamleval.records.errors import UsageError
from yamleval.records.install import install_hint

LOCAL_HOSTS = ("localhost",)
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")  # who holds a token: ``ana=TOKEN``
INSTALL = install_hint("serve")


def is_local(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (a loopback address)."""
    if host in LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_from(host: str, token_env: str | None) -> dict[str, str] | None:
    """The tokens a request may bring, each with its label (who holds it; "" for none): the value of
    ``token_env``, one token or several ``LABEL=TOKEN`` separated by commas or spaces. UsageError
    when a host other than this machine's own is given without one, or the variable is unset,
    empty, or holds a token shorter than 16 characters."""
    if token_env is None:
        if not is_local(host):
            raise UsageError(f"--host {host} lets other machines read every stored run: give a token with"
                             " --token-env NAME (the variable NAME holds it; clients send `Authorization: Bearer"
                             " TOKEN` or sign in), or serve on 127.0.0.1")
        return None
    value = os.environ.get(token_env, "")
    if not value.strip():
        raise UsageError(f"--token-env {token_env}: the variable {token_env} is not set or is empty; export it"
                         " with the token (e.g. `export " + token_env + "=$(openssl rand -hex 24)`)")
    tokens: dict[str, str] = {}
    for entry in value.replace(",", " ").split():
        label, _, token = entry.partition("=")
        if not (LABEL.fullmatch(label) and len(token) >= 16):  # a token of its own (base64 ends in "=")
            label, token = "", entry
        if len(token) < 16:
            raise UsageError(f"--token-env {token_env}: a token{f' (of {label})' if label else ''} is {len(token)}"
                             " characters long; give each one of 16 or more (e.g. `openssl rand -hex 24`)")
        tokens[token] = label
    return tokens


def serve(location: str, host: str = "127.0.0.1", port: int = 8600, token_env: str | None = None,
          ready=None, reviews: bool = False, reviewer: str | None = None) -> None:
    """Serve the store at ``location`` on ``host:port`` until interrupted. ``ready``: called with
    the address once the server listens. ``reviews``: take people's verdicts on items (as
    ``reviewer``, or as each names themselves); else nothing is written."""
    if reviewer is not None and not reviews:
        raise UsageError("--reviewer names who reviews: give --reviews too")
    if reviewer is not None and not reviewer.strip():
        raise UsageError("--reviewer: give a name")
    tokens = token_from(host, token_env)
    try:
        import uvicorn  # noqa: F401
        import starlette  # noqa: F401
    except ImportError:
        raise UsageError(f"yamleval serve needs Starlette and uvicorn: {INSTALL}") from None
    from yamleval.store import open_store

    open_store(location).close()  # fails now, with the reason, when the store cannot be read
    from yamleval.serve.server import run

    from yamleval.serve.reviews import Reviewing

    run(location, host, port, tokens, ready, Reviewing(reviewer.strip() if reviewer else None) if reviews else None)
