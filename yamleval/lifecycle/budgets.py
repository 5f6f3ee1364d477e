"""The budgets an experiment of a stored run runs under: its own, and the run's against what the
run has spent; for a shard, against what every shard of the run has stored, read again as it goes
(``StoredSpending``), so that shards running at once share one budget."""
from __future__ import annotations

from typing import Callable, Sequence

from yamleval.engine import budget
from yamleval.records.types import CacheUse, ExperimentResult

_BATCH = 500  # stored items read at a time


class StoredSpending:
    """What the items stored in run ``run_id`` have spent, but those ``counted`` here already (a
    shard's own items of the experiment it runs, which its engine counts): every shard's, read
    as they are stored (by their ``written`` numbers, each item once). Before each look, this
    process's finished items are written, so that the other shards count them as soon."""

    def __init__(self, db, run_id: str, counted: Callable[[str, str], bool]):
        self.db, self.run_id, self.counted = db, run_id, counted
        self.total, self.last = budget.Spent(), 0

    def spent(self) -> budget.Spent:
        from yamleval.store import views

        self.db.flush()
        while batch := views.written_after(self.db, self.run_id, self.last, _BATCH):
            for number, experiment_id, result in batch:
                if not self.counted(experiment_id, result.item.id):
                    self.total = self.total + budget.spent_on(result)
            self.last = batch[-1][0]
        return self.total


def shared(db, run_id: str, shard, project, experiment) -> StoredSpending | None:
    """For a shard of a run with a run ``budget``: what the run spends outside this shard's items of
    ``experiment`` (the other shards' items, and its own of the experiments before); else None."""
    if shard is None or project.budget is None:
        return None
    from yamleval.engine import shards as sharding

    hashed = sharding.key(experiment)
    return StoredSpending(db, run_id, lambda experiment_id, item_id: experiment_id == experiment.id
                         and shard.holds(hashed, item_id))


def limits(project, experiment, results: Sequence[ExperimentResult], seconds: float,
           elsewhere: StoredSpending | None = None) -> list[budget.Limit]:
    """The budgets ``experiment`` runs under: its own, and the run's against what the experiments
    before it spent (or, for a shard, what the run has stored, read as it goes: ``elsewhere``) and
    the ``seconds`` this call has taken."""
    found = [budget.Limit(experiment.budget)] if experiment.budget is not None else []
    if project.budget is not None and elsewhere is not None:
        found.append(budget.Limit(project.budget, "the run's", budget.Spent(seconds=seconds), elsewhere))
    elif project.budget is not None:
        usages = [usage for r in results for usage in (r.summary.tokens, r.summary.judge_tokens)]
        saved = sum((r.summary.cache for r in results), CacheUse())
        found.append(budget.Limit(project.budget, "the run's", budget.spent(usages, seconds, saved)))
    return found
