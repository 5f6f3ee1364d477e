"""Built-in runners. Each is registered as an entry point in ``yamleval.runners``.

Loaded on first use: importing ``echo`` must not pay for ``requests`` (the ``http`` runner).
"""
from __future__ import annotations

import importlib

_RUNNERS = {"agent": "yamleval.runners.agent", "command": "yamleval.runners.command", "echo": "yamleval.runners.echo",
            "http": "yamleval.runners.http", "openai": "yamleval.runners.openai"}

__all__ = sorted(_RUNNERS)


def __getattr__(name: str):
    if name not in _RUNNERS:
        raise AttributeError(f"module 'yamleval.runners' has no attribute {name!r}")
    return getattr(importlib.import_module(_RUNNERS[name]), name)
