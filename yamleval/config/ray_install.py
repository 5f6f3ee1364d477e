"""Whether Ray, which ``executor: {uses: ray}`` needs, is installed, and how to install it.

Below the engine, so that checking a config asks only this (the executor itself is chosen above).
"""
from __future__ import annotations

import importlib.util

from yamleval.records.install import install_hint

INSTALL = install_hint("ray")


def installed() -> bool:
    """Whether Ray can be imported (without importing it: that is slow)."""
    return importlib.util.find_spec("ray") is not None
