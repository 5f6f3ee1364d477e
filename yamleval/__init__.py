"""yamleval: evaluate LLM applications and agents from YAML.

The public API is re-exported here and loaded on first use, so that
``import yamleval`` stays light for plugins that only need ``Score``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from yamleval.records.version import __version__

_EXPORTS = {
    "ConfigError": "yamleval.records.errors",
    "ExperimentResult": "yamleval.records.types",
    "Item": "yamleval.records.types",
    "ItemResult": "yamleval.records.types",
    "Project": "yamleval.config.loader",
    "RunnerResult": "yamleval.records.types",
    "RunOptions": "yamleval.records.options",
    "RunOutcome": "yamleval.lifecycle.run",
    "RunWatcher": "yamleval.lifecycle.run",
    "Score": "yamleval.records.types",
    "Usage": "yamleval.records.types",
    "YamlevalError": "yamleval.records.errors",
    "load_experiments": "yamleval.api",
    "load_project": "yamleval.config.loader",
    "run": "yamleval.api",
    "run_experiment": "yamleval.api",
}

__all__ = sorted(_EXPORTS) + ["__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from yamleval.api import load_experiments, run, run_experiment
    from yamleval.config.loader import Project, load_project
    from yamleval.records.errors import ConfigError, YamlevalError
    from yamleval.lifecycle.run import RunOutcome, RunWatcher
    from yamleval.records.options import RunOptions
    from yamleval.records.types import ExperimentResult, Item, ItemResult, RunnerResult, Score, Usage


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'yamleval' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
