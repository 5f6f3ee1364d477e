"""The steps every stored run takes, however its items come (a run, a rescore, the last shard
or a merge): its id, each experiment stored from its start to its end (start → run or score
again → baselines judged → finished). The verdicts are ``analysis.verdict``'s.
"""
from __future__ import annotations

import dataclasses
import threading
import uuid
from datetime import datetime, timezone
from typing import Callable

from yamleval.analysis import criteria
from yamleval.records.outcome import RunWatcher
from yamleval.records.types import ExperimentResult, ItemResult, now


def new_run_id() -> str:
    """A new run's id: the time it starts (UTC, so ids sort as runs began), then 8 random hex digits."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


class Keeper:
    """Stores an experiment's items as they finish. A write that fails stops the run: no more
    items start, and ``raise_failure`` raises it once the engine has stopped."""

    def __init__(self, db, run_id: str, experiment_id: str, stop: threading.Event, watcher: RunWatcher):
        self.db, self.run_id, self.experiment_id = db, run_id, experiment_id
        self.stop, self.watcher = stop, watcher
        self.failures: list[Exception] = []

    def keep(self, write, *args) -> None:
        from yamleval.store.writer import StoreWriteError

        try:
            write(self.run_id, self.experiment_id, *args)
        except StoreWriteError as exc:  # results cannot be kept: start no more items
            self.failures.append(exc)
            self.stop.set()

    def item(self, result: ItemResult, kept: bool = False) -> None:
        """An item finished: stored, and the watcher told; ``kept``: one the run this one retries
        had finished, stored as it was."""
        self.keep(self.db.add_item, result)
        (self.watcher.item_kept if kept else self.watcher.item_finished)(self.experiment_id, result)

    def repeat(self, number: int, result: ItemResult) -> None:
        """One repeat of an item run several times finished."""
        self.keep(self.db.add_repeat, number, result)

    def raise_failure(self) -> None:
        if self.failures:
            raise self.failures[0]


def store_experiment(db, run_id: str, position: int, ready, dataset_hash: str | None, controls,
                     produce: Callable[[Keeper], ExperimentResult], shared: bool = False) -> ExperimentResult:
    """One experiment of run ``run_id`` stored from start to end: its start stored, its items made
    by ``produce`` (run, or scored again) and each stored as it finishes (a write that fails sets
    ``controls.stop``; ``controls.watcher`` hears of each item), then its baselines judged
    and its end stored (``finished_experiment``). ``shared``: a shard's part of the experiment,
    counted once every shard has stored its own (``lifecycle.shards``), so only its items are kept."""
    from yamleval.engine import plan

    db.start_experiment(run_id, position, ready.experiment, dataset_hash, now(), criteria.started(ready.experiment),
                        shared=shared)
    keeper = Keeper(db, run_id, ready.experiment.id, controls.stop, controls.watcher)
    try:
        with plan.importable(ready.experiment):
            result = produce(keeper)
    finally:
        if ready.models is not None:
            ready.models.close()
    keeper.raise_failure()
    if shared:
        db.flush()
        return result
    return finished_experiment(db, run_id, result)


def finished_experiment(db, run_id: str, result: ExperimentResult) -> ExperimentResult:
    """``result``, its items stored, with its no_regression criteria judged and its end stored; its
    items read from the store, in order, as reports and summaries read them, and counted with the
    reviews the run holds (stored as its scorers and dataset said)."""
    from yamleval.lifecycle import baseline

    db.flush()
    result = baseline.judge(db, run_id, result)  # its no_regression criteria, against their baselines
    db.finish_experiment(run_id, result)
    result = dataclasses.replace(result, items=db.item_view(run_id, result.experiment_id, result.summary.completed))
    from yamleval.analysis import reviewed

    [result] = reviewed.applied(db, run_id, [result])  # as people reviewed it: a retry's kept items, say
    reviewed.keep(db, run_id, [result])
    return result
