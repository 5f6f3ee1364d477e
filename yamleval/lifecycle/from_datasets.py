"""Experiments whose items come from their datasets (``FromDatasets``): a new run's, a resumed
run's going on from the items it stored, a shard's, or a retry's starting with the items the
run it retries kept. The ``lifecycle.ongoing.Run`` takes each in turn.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

from yamleval.analysis import reviewed
from yamleval.lifecycle.ongoing import Run
from yamleval.lifecycle.stored import store_experiment
from yamleval.records.options import RunOptions
from yamleval.records.outcome import RunWatcher
from yamleval.records.types import ExperimentResult, StoredExperiment


class FromDatasets:
    """Experiments whose items come from their datasets: those a run had ``begun`` before (resumed
    or joined) going on from the items it stored, or those of run ``kept_from`` (``--retry-errors``)
    starting with the items it keeps; with ``rescore``, those items are scored again first."""

    def __init__(self, options: RunOptions, begun: Mapping[str, StoredExperiment] | None = None,
                 rescore: bool = False, kept_from: str | None = None):
        self.limit, self.concurrency = options.limit, options.concurrency
        self.begun = dict(begun or {})
        self.rescore, self.kept_from = rescore, kept_from

    def finished(self, run: Run) -> Mapping[str, ExperimentResult]:
        """The experiments the run had completed (read as stored), unless their items are scored again."""
        completed = set() if self.rescore else {eid for eid, stored in self.begun.items()
                                                if stored.status == "completed"}
        return {r.experiment_id: r for r in reviewed.results(run.db, run.run_id, completed)} if completed else {}

    def baseline_items(self, run: Run):
        return lambda stored_id: run.db.item_view(run.run_id, stored_id, 0).find

    def experiment(self, run: Run, position: int, ready, results: Sequence[ExperimentResult]) -> ExperimentResult:
        """One experiment, its items stored as they finish; resumed where it was begun before (its
        finished items scored again first, with ``rescore``; its duration counts the time its items
        ran then, as far as it was stored), or begun with the items another run kept."""
        from yamleval.engine import experiment as engine
        from yamleval.lifecycle.resume import kept_items

        experiment_id, watcher = ready.experiment.id, run.watcher
        begun = self.begun.get(experiment_id)
        kept = None if self.kept_from is None else kept_items(run.db, self.kept_from, experiment_id)
        previous, partial = self._previous(run, ready, begun)
        limits = run.budgets(ready.experiment, results)

        def produce(keeper) -> ExperimentResult:
            if kept is None:
                done = _counted(watcher, experiment_id, previous)
            else:
                done = _stored_as_read(keeper, engine.rescored(ready, kept) if self.rescore else kept)
            source = engine.ItemSource(limit=self.limit, shard=run.shard, previous=done, partial=partial)
            hooks = engine.Hooks(
                on_item=keeper.item, on_repeat=keeper.repeat,
                on_progress=lambda completed, total: watcher.progress(experiment_id, completed, total),
                on_planned=lambda count: run.db.plan_experiment(run.run_id, experiment_id, count))
            bounds = engine.Bounds(self.concurrency, run.stop, run.controls.abandon, tuple(limits))
            result = engine.run_experiment(ready, run.executors, source, hooks, bounds, keep_items=False)
            if not begun or not begun.duration_ms or run.shard is not None:  # a shard's time is its own
                return result
            return dataclasses.replace(result, summary=dataclasses.replace(
                result.summary, duration_ms=result.summary.duration_ms + begun.duration_ms))

        return store_experiment(run.db, run.run_id, position, ready, run.work.dataset_hashes[experiment_id],
                                run.controls, produce, shared=run.shard is not None)

    def _previous(self, run: Run, ready, begun: StoredExperiment | None):
        """The items a run begun before had finished (read as the engine goes), and the repeats of those
        it had not (by item id and repeat number); a shard's only; scored again first, with ``rescore``."""
        from yamleval.engine import experiment as engine
        from yamleval.engine import plan
        from yamleval.engine import shards as sharding
        from yamleval.lifecycle.resume import forget_outage, replace_items
        from yamleval.store import repeats as stored_repeats

        db, run_id, shard, experiment_id = run.db, run.run_id, run.shard, ready.experiment.id
        forget_outage(db, run_id, ready.experiment, begun, shard)
        previous = db.item_view(run_id, experiment_id, 0) if begun else ()  # read as it goes
        partial = (stored_repeats.unfinished(db, run_id, experiment_id)
                   if begun and ready.experiment.repeats > 1 else {})
        if shard is not None:  # the other shards' items are theirs
            hashed = sharding.key(ready.experiment)
            previous = (r for r in previous if shard.holds(hashed, r.item.id))
            partial = {item_id: done for item_id, done in partial.items() if shard.holds(hashed, item_id)}
        if begun and self.rescore:
            with plan.importable(ready.experiment):
                replace_items(db, run_id, experiment_id, engine.rescored(ready, previous))
                partial = {item_id: dict(zip(done, engine.rescored(ready, done.values())))
                           for item_id, done in partial.items()}
        return previous, partial


def _stored_as_read(keeper, results):
    """Each of ``results`` stored (by ``keeper``) as the engine reads it."""
    for result in results:
        keeper.item(result, kept=True)
        yield result


def _counted(watcher: RunWatcher, experiment_id: str, results):
    """Each of the items a resumed run had finished, told to ``watcher`` as the engine reads it."""
    for result in results:
        watcher.item_kept(experiment_id, result)
        yield result
