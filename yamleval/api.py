"""The Python API: load experiments from files and run them.

    >>> import yamleval
    >>> [exp] = yamleval.load_experiments("evals.yaml")
    >>> result = yamleval.run_experiment(exp, concurrency=4, on_item=print)
    >>> result.passed, result.summary.pass_rate
"""
from __future__ import annotations

import os
import threading
from typing import Iterable

from yamleval import engine, plan
from yamleval.config.loader import load_project
from yamleval.config.model import Experiment
from yamleval.types import ExperimentResult


def _paths(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def load_experiments(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> list[Experiment]:
    """The experiments in a project or experiment file (or several); ConfigError if invalid."""
    return list(load_project(_paths(paths)).experiments)


def run_experiment(experiment: Experiment | plan.Prepared, *, concurrency: int | None = None,
                   limit: int | None = None, on_item: engine.ItemCallback | None = None,
                   on_progress: engine.ProgressCallback | None = None,
                   stop: threading.Event | None = None) -> ExperimentResult:
    """Run one experiment. ``on_item(item_result)`` and ``on_progress(completed, total)``
    are called as items finish; an exception in either is kept in ``result.warnings``."""
    prepared = experiment if isinstance(experiment, plan.Prepared) else plan.prepare(experiment)
    with plan.importable(prepared.experiment):
        return engine.run_experiment(prepared, concurrency=concurrency, limit=limit, on_item=on_item,
                                     on_progress=on_progress, stop=stop)


def run(paths: str | os.PathLike | Iterable[str | os.PathLike], **options) -> list[ExperimentResult]:
    """Load the files and run every experiment in them, one after another."""
    return [run_experiment(exp, **options) for exp in load_experiments(paths)]
