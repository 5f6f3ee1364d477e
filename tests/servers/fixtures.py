"""Pytest fixtures for the test servers; import them explicitly in a test module."""
from __future__ import annotations

import pytest

from servers.openai_server import OpenAIServer


@pytest.fixture
def openai_server():
    """A scripted OpenAI-compatible server on 127.0.0.1, stopped after the test."""
    server = OpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()
