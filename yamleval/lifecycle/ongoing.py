"""A stored run as it goes (``Run``): what it owns, and the one loop over its experiments.

A run is made in one of several ways (new, resumed, a shard joining, errors retried:
``lifecycle.run``; stored outputs scored again: ``lifecycle.rescore``); each way gives the run
its experiments and where each experiment's items come from (an ``ExperimentSource``). From
then on every run goes the same way: each experiment in turn, stored as it finishes, then the
run's verdict, its reports and its end stored (``finish_run``).
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence

from yamleval.records.version import __version__
from yamleval.lifecycle.outputs import Outputs, write_reports_then_finish
from yamleval.analysis import reviewed
from yamleval.analysis.verdict import run_passed, run_status
from yamleval.lifecycle.stored import new_run_id
from yamleval.records.outcome import RunOutcome, RunWatcher
from yamleval.records.types import ExperimentResult, RunInfo, now


@dataclass(frozen=True)
class Controls:
    """What the caller holds over a run as it goes: ``stop`` set, no new items start; ``abandon``
    set, running ones are not waited for; ``watcher`` hears how it goes; ``began``: when the
    caller asked for the run (``time.perf_counter``), from which a budget's ``max_duration`` counts."""

    stop: threading.Event
    abandon: threading.Event | None
    watcher: RunWatcher
    began: float

    @classmethod
    def of(cls, stop: threading.Event | None = None, abandon: threading.Event | None = None,
           watcher: RunWatcher | None = None) -> "Controls":
        """Controls from now, with a fresh ``stop`` and a silent watcher where none is given."""
        return cls(stop or threading.Event(), abandon, watcher or RunWatcher(), time.perf_counter())


@dataclass(frozen=True)
class Work:
    """What a run runs: its ``project``, its ``experiments`` (as the options changed them), each
    one ``prepared``, the hash of each one's dataset, and the ``repeats`` the run was given."""

    project: Any
    experiments: tuple
    prepared: tuple
    dataset_hashes: Mapping[str, str | None]
    repeats: int | None = None


class ExperimentSource(Protocol):
    """Where a run's experiments get their items: run from their datasets (and from a run before
    it), or stored outputs scored again."""

    def finished(self, run: "Run") -> Mapping[str, ExperimentResult]:
        """The results of the experiments the run finished before (they are not run again)."""

    def baseline_items(self, run: "Run") -> Callable[[str], Callable]:
        """How a variant finds its baseline's answers: a stored experiment's id → its ``find``."""

    def experiment(self, run: "Run", position: int, ready, results: Sequence[ExperimentResult]) -> ExperimentResult:
        """Experiment ``ready`` (the run's ``position``-th), stored as it goes, after ``results``."""


class Run:
    """One stored run as it goes: its store and reports (``out``), its id, what it runs
    (``work``), its caller's ``controls``, its ``shard`` (if it is one part of a run split over
    jobs), where its experiments' items run (``executors``: the run's network, its limiters and
    endpoint records, or a Ray ``cluster``'s), and where they get their items (``source``).
    ``planned``: how many experiments a complete run has (default: those of ``work``)."""

    def __init__(self, out: Outputs, run_id: str, work: Work, controls: Controls, source: ExperimentSource,
                 shard=None, cluster=None, planned: int | None = None):
        from yamleval.engine.executors import choice

        self.out, self.db, self.run_id, self.work = out, out.store, run_id, work
        self.controls, self.source, self.shard, self.cluster = controls, source, shard, cluster
        self.executors = choice.on(cluster)  # where each experiment runs, with the run's network
        self.planned = len(work.prepared) if planned is None else planned
        self.resumed = False

    @property
    def stop(self) -> threading.Event:
        return self.controls.stop

    @property
    def watcher(self) -> RunWatcher:
        return self.controls.watcher

    def go(self) -> RunOutcome:
        """Every experiment in turn, each stored as it finishes; then the run's verdict, reports and end."""
        from yamleval.engine import plan

        try:
            self.watcher.run_started(self.run_id, self.resumed)
            done = self.source.finished(self)
            results: list[ExperimentResult] = []
            for position, ready in enumerate(self.work.prepared):
                if self.stop.is_set():
                    break
                experiment_id = ready.experiment.id
                ready = plan.with_baseline(ready, self.work.experiments, self.source.baseline_items(self))
                if experiment_id in done:
                    result = done[experiment_id]
                else:
                    self.watcher.experiment_started(experiment_id)
                    result = self.source.experiment(self, position, ready, results)
                results.append(result)
                self.watcher.experiment_finished(result)
                if result.could_not_evaluate:  # the endpoint is likely another experiment's too: the run stops here
                    break
            return finish_run(self, results)
        except BaseException:  # a failure stops the run: nothing more is written, the database is let go
            self.db.abandon()
            raise
        finally:
            self.close()

    def close(self) -> None:
        """Let the run's Ray cluster go, if it has one."""
        if self.cluster is not None:
            self.cluster.close()

    def budgets(self, experiment, results: Sequence[ExperimentResult]) -> list:
        """The budgets ``experiment`` runs under: its own, and the run's against what the experiments
        before it (``results``) spent and the time this call has taken; a shard of a run stored with
        its other shards spends the run's budget with them, read again as they store items
        (``lifecycle.budgets``)."""
        from yamleval.lifecycle import budgets

        project = self.work.project
        return budgets.limits(project, experiment, results, time.perf_counter() - self.controls.began,
                              budgets.shared(self.db, self.run_id, self.shard, project, experiment))


def finish_run(run: Run, results: list[ExperimentResult]) -> RunOutcome:
    """The run's verdict (passed: all its planned experiments ran and passed), its reports, its end
    stored. A shard ends its part; its reports are the run's as far as it is stored, whole (with
    the run's verdict) when this shard completed it."""
    from yamleval.lifecycle import shards as shard_runs

    out, run_id, shard = run.out, run.run_id, run.shard
    interrupted = run.stop.is_set()
    if shard is None:  # reviews of an experiment given while a later one ran count in the run's verdict too
        results = reviewed.applied(out.store, run_id, results)
        reviewed.keep(out.store, run_id, results)
    own = tuple(results) if shard is not None else ()
    passed = run_passed(results, run.planned, interrupted)
    status = run_status(results, interrupted, run.planned)
    run_info = dataclasses.replace(out.store.find_run(run_id), status=status, passed=passed, completed_at=now())
    if shard is not None:
        breakdowns = {e.id: e.breakdowns for e in run.work.experiments}
        whole = shard_runs.finish(out.store, run_id, shard, status, results, breakdowns)
        run_info = out.store.find_run(run_id)
        results = whole or reviewed.results(out.store, run_id)
    run.watcher.run_finished(results)
    run.watcher.writing_reports()
    written = write_reports_then_finish(out.store, out.report_dir, out.formats, run_info, results, shard is None)
    return RunOutcome(run_info, tuple(results), tuple(written), shard, status, own)


def git_state(project):
    """The git commit of the project's folder, read in the background (``provenance.GitState``)."""
    from yamleval.config import provenance

    return provenance.GitState(os.path.dirname(os.path.abspath(project.files[0])) if project.files else ".")


@dataclass(frozen=True)
class Origin:
    """Where a new run comes from: the run whose outputs it scores again, or whose errors it retries."""

    rescored_from: str | None = None
    retried_from: str | None = None


def new_run(db, work: Work, git, run_id: str | None = None, shard=None, origin: Origin = Origin(),
            datasets: Mapping[str, str] | None = None) -> str:
    """A new run of ``work`` stored as running, with what it runs under (``datasets``: the hash of
    each experiment's dataset, recorded in its fingerprint): its id (``run_id``, else one made
    from the time). The first ``shard`` of a run makes it; one started at the same moment
    with the same ``run_id`` finds it made."""
    from yamleval.config import fingerprint
    from yamleval.config import provenance
    from yamleval.plugins import versions

    project, experiments = work.project, list(work.experiments)
    run_id = run_id or new_run_id()
    texts = provenance.config_texts(project.files, project.sets)
    commit, dirty = git.result()
    db.create_run(RunInfo(
        run_id=run_id, status="running", started_at=now(), yamleval_version=__version__,
        python_version=provenance.python_version(), host=provenance.host(), config_files=tuple(project.files),
        config_hash=provenance.config_hash(texts), git_commit=commit, git_dirty=dirty, config_text=texts,
        rescored_from=origin.rescored_from, retried_from=origin.retried_from,
    ), versions.plugin_versions(experiments, __version__), [e.id for e in experiments],
        fingerprint.fingerprint(project.environment, experiments, repeats=work.repeats,
                                shards=None if shard is None else shard.count,
                                datasets=None if datasets is None else dict(datasets)),
        if_absent=shard is not None)
    return run_id
