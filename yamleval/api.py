"""The Python API: everything ``yamleval run`` does, from Python.

    >>> import yamleval
    >>> outcome = yamleval.run("evals.yaml", store="results.db", report_dir="reports")
    >>> outcome.passed, outcome.exit_code, outcome.reports
    >>> outcome = yamleval.run("evals.yaml", store="results.db", resume="latest")

``run_experiment`` runs one experiment in memory, without a store or reports.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from typing import Iterable, Sequence, Union

from yamleval.engine import experiment as engine
from yamleval.engine import plan
from yamleval.config.loader import Project, load_project
from yamleval.config.model import Experiment
from yamleval.lifecycle.run import RunOutcome, RunWatcher, run_project, select_experiments
from yamleval.records.types import ExperimentResult

Paths = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]


def _paths(paths) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def load_experiments(paths: Paths) -> list[Experiment]:
    """The experiments in a project or experiment file (or several); ConfigError if invalid."""
    return list(load_project(_paths(paths)).experiments)


def run(config: Union[Paths, Project], *, experiments: Sequence[str] | None = None, store: str | None = None,
        report_dir: str | None = None, formats: Sequence[str] | None = None, resume: str | None = None,
        force: bool = False, limit: int | None = None, concurrency: int | None = None,
        stop: threading.Event | None = None, abandon: threading.Event | None = None,
        watcher: RunWatcher | None = None, repeats: int | None = None, tags: Sequence[str] = (),
        cache: bool | None = None, refresh_cache: bool = False, shard: str | None = None,
        run_id: str | None = None) -> RunOutcome:
    """Run a project's experiments (or those whose ids are in ``experiments``) as one stored
    run, exactly as ``yamleval run`` does: every item stored as it finishes, resumable
    (``resume``: a run id or ``latest``), reports written, the run tagged with ``tags``;
    ``shard="2/4"`` runs one shard of the items, as a run named ``run_id`` if given.
    See ``runs.run_project``."""
    from yamleval.engine import shards as sharding

    project = config if isinstance(config, Project) else load_project(_paths(config))
    chosen = None if experiments is None else select_experiments(project, experiments)
    return run_project(project, chosen, store=store, report_dir=report_dir, formats=formats, resume=resume,
                       force=force, limit=limit, concurrency=concurrency, stop=stop, abandon=abandon,
                       watcher=watcher, repeats=repeats, tags=tags, cache=cache, refresh_cache=refresh_cache,
                       shard=None if shard is None else sharding.parse(shard), run_id=run_id)


def run_experiment(experiment: Experiment | plan.Prepared, *, concurrency: int | None = None,
                   limit: int | None = None, on_item: engine.ItemCallback | None = None,
                   on_progress: engine.ProgressCallback | None = None,
                   stop: threading.Event | None = None, repeats: int | None = None) -> ExperimentResult:
    """Run one experiment in memory (nothing stored). ``on_item(item_result)`` and
    ``on_progress(completed, total)`` are called as items finish; an exception in either is
    kept in ``result.warnings``. ``repeats``: how many times each item runs, whatever the
    experiment says."""
    prepared = experiment if isinstance(experiment, plan.Prepared) else plan.prepare(experiment)
    if repeats is not None:
        prepared = dataclasses.replace(prepared, experiment=dataclasses.replace(prepared.experiment, repeats=repeats))
    with plan.importable(prepared.experiment):
        return engine.run_experiment(prepared, concurrency=concurrency, limit=limit, on_item=on_item,
                                     on_progress=on_progress, stop=stop)
