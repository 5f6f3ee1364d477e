"""Whether Ray, which ``executor: {uses: ray}`` needs, is installed, and how to install it.

Below the engine, so that checking a config asks only this (the executor itself is chosen above).
"""
from __future__ import annotations

import importlib.util

INSTALL = "pip install 'yamleval[ray]'"


def installed() -> bool:
    """Whether Ray can be imported (without importing it: that is slow)."""
    return importlib.util.find_spec("ray") is not None
