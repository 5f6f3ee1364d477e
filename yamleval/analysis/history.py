"""How each experiment has moved over a store's recent runs (``yamleval history``).

Per experiment, oldest run first: its pass rate and mean score with their intervals, as the
run's stored summary has them; and the items whose verdict changed most often from one run
to the next (an item missing from a run breaks no streak: it is compared with its last
verdict before).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from yamleval.analysis import reviewed
from yamleval.store import tags as run_tags
from yamleval.records.types import RunInfo, Summary

CHURN_SHOWN = 10  # items whose verdict changed most, per experiment


@dataclass(frozen=True)
class Point:
    """One experiment in one run."""

    run: RunInfo
    summary: Summary
    passed: bool
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Churn:
    """An item whose verdict changed from run to run: how often, and its status in each run
    (None where the run has no such item), oldest first."""

    item_id: str
    changes: int
    statuses: tuple[str | None, ...]


@dataclass(frozen=True)
class ExperimentHistory:
    experiment_id: str
    points: tuple[Point, ...]  # oldest first
    churn: tuple[Churn, ...]


def recent_runs(store, last: int, tag: str | None = None) -> list[RunInfo]:
    """The newest ``last`` runs (tagged ``tag``, if given), oldest first."""
    if tag is None:
        found = store.runs(last)
    else:
        run_tags.checked([tag])
        found = [run for run in store.runs(10 ** 6) if tag in run_tags.of_run(store, run.run_id)][:last]
    return list(reversed(found))


def read(store, runs: Sequence[RunInfo], failing_first: bool = False) -> list[ExperimentHistory]:
    """The history of every experiment of ``runs`` (in the order they first appear); its items
    those whose verdict changes most, or (``failing_first``) those that fail most often."""
    points: dict[str, list[Point]] = {}
    statuses: dict[str, dict[str, list[str | None]]] = {}
    for at, run in enumerate(runs):
        tags = run_tags.of_run(store, run.run_id)
        for result in reviewed.results(store, run.run_id):
            eid = result.experiment_id
            points.setdefault(eid, []).append(Point(run, result.summary, result.passed, tags))
            by_item = statuses.setdefault(eid, {})
            for item_id, _, status, _ in result.items.verdicts(()):  # statuses only: no record is decoded
                by_item.setdefault(item_id, [None] * len(runs))[at] = status
    return [ExperimentHistory(eid, tuple(found), _churn(statuses[eid], [p.run.run_id for p in found], runs,
                                                        failing_first))
            for eid, found in points.items()]


def _churn(by_item: dict[str, list[str | None]], ran: list[str], runs: Sequence[RunInfo],
           failing_first: bool = False) -> tuple[Churn, ...]:
    """The CHURN_SHOWN items whose status changed most often over the runs the experiment was in
    (``failing_first``: that failed or erred most often, then changed most)."""
    columns = [at for at, run in enumerate(runs) if run.run_id in ran]
    found = []
    for item_id, column in by_item.items():
        seen = [column[at] for at in columns]
        known = [status for status in seen if status is not None]
        changes = sum(1 for before, after in zip(known, known[1:]) if before != after)
        failures = sum(1 for status in known if status in ("failed", "error"))
        if failures if failing_first else changes:
            found.append((failures, Churn(item_id, changes, tuple(seen))))
    found.sort(key=lambda pair: (-pair[0] if failing_first else 0, -pair[1].changes, pair[1].item_id))
    found = [c for _, c in found]
    return tuple(found[:CHURN_SHOWN])
