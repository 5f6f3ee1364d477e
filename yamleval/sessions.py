"""HTTP sessions that read the environment once.

``requests`` looks at the environment on every request when a session trusts it: proxies
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``), a CA bundle (``REQUESTS_CA_BUNDLE``,
``CURL_CA_BUNDLE``) and ``.netrc`` credentials. That scan costs about 0.2 ms of CPU per
request, a quarter of a whole request to a local service, and it gives the same answer
every time within a run. These sessions take the answer once, for the host they serve,
and then stop looking.
"""
from __future__ import annotations

import os

import requests
import requests.utils


def session_for(url: str) -> requests.Session:
    """A session for requests to ``url``'s scheme and host, with the environment's proxies,
    CA bundle and ``.netrc`` credentials for that host, as ``requests`` would find them."""
    session = requests.Session()
    session.proxies.update(requests.utils.get_environ_proxies(url))  # empty when NO_PROXY covers the host
    bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
    if bundle:
        session.verify = bundle
    credentials = requests.utils.get_netrc_auth(url)
    if credentials:
        session.auth = credentials
    session.trust_env = False
    return session
