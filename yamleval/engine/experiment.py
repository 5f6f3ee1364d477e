"""Drive every item of one prepared experiment through its runner and scorers.

Orchestration only: the items come from an ``ItemSource`` (the dataset, items finished before,
stored outputs to score again), an executor chosen by the caller runs them (``placement``),
``item`` runs one, ``scoring`` judges them, the aggregator counts them, ``analysis.verdict``
decides. The network the items call out through (its limiters and endpoint records) is the
placement's: the run's, or a cluster's.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from yamleval.analysis.aggregate import Aggregator
from yamleval.analysis import criteria
from yamleval.analysis.verdict import judged
from yamleval.engine import budget, repeats
from yamleval.engine import shards as sharding
from yamleval.engine.item import ItemProcessor, caching as caching_of
from yamleval.engine.placement import Placed, Placement
from yamleval.engine.plan import Prepared
from yamleval.records.redaction import redact_experiment, redact_item
from yamleval.records.reviews import labelled
from yamleval.engine.scoring import error_result
from yamleval.engine.shards import Shard
from yamleval.calls import health, limits
from yamleval.calls.network import Network, RunNetwork
from yamleval.records.errors import ExitCode, UsageError, YamlevalError, describe_exception
from yamleval.records.types import ExperimentResult, Item, ItemList, ItemResult, now

ItemCallback = Callable[[ItemResult], Any]
RepeatCallback = Callable[[int, ItemResult], Any]  # the repeat's number (from 0) and its result
ProgressCallback = Callable[[int, "int | None"], Any]


@dataclass(frozen=True)
class ItemSource:
    """Where an experiment's items come from: its dataset (at most ``limit`` items; only those of
    ``shard``), after the ``previous`` results of items finished before (a resumed run: they
    count, and items with their ids are not run again) and the ``partial`` repeats of items run
    several times (by item id and repeat number: not run again). ``dataset`` False: ``previous``
    are all the items (stored outputs scored again): the dataset is not opened, no runner called."""

    limit: int | None = None
    shard: Shard | None = None
    previous: Iterable[ItemResult] = ()
    partial: Mapping[str, Mapping[int, ItemResult]] | None = None
    dataset: bool = True

    @classmethod
    def stored(cls, results: Iterable[ItemResult]) -> "ItemSource":
        """Items finished before (scored again as they are read), and no others."""
        return cls(previous=results, dataset=False)


@dataclass(frozen=True)
class Hooks:
    """What the caller hears as the experiment goes: ``on_item(result)`` as each item finishes,
    ``on_repeat(number, result)`` as a repeat finishes that leaves its item unfinished,
    ``on_progress(completed, total)``, and ``on_planned(count)``: the dataset's items in all (of
    every shard), once it is open, when it knows. An exception in one is kept in ``warnings``."""

    on_item: ItemCallback | None = None
    on_progress: ProgressCallback | None = None
    on_repeat: RepeatCallback | None = None
    on_planned: Callable[[int], None] | None = None


@dataclass(frozen=True)
class Bounds:
    """How wide and how far the experiment goes: ``concurrency`` items at once (None: as the
    experiment says); ``stop`` set: no new item starts; ``abandon`` set: running ones are not
    waited for; ``budgets`` reached: no new item starts."""

    concurrency: int | None = None
    stop: threading.Event | None = None
    abandon: threading.Event | None = None
    budgets: Sequence[budget.Limit] = ()


def rescored(prepared: Prepared, results: Iterable[ItemResult], network: RunNetwork | None = None) -> Iterator[ItemResult]:
    """Finished items scored again by ``prepared``'s scorers, their outputs kept (no runner
    call; judges through the cache, calling out through ``network``, the run's, else a network
    of their own); an item whose runner failed has no output to score and stays as it was. Each
    keeps its scorers' verdict (or its dataset's label) as its own: people's reviews stay reviews,
    counted where the run is read (``analysis.reviewed``)."""
    caching = caching_of(prepared)
    processor = ItemProcessor(prepared, caching, network if network is not None else Network())
    use = caching.use if caching is not None else lambda number: None
    try:
        for result in results:
            if result.repeats:
                result = repeats.reduced([processor.scored(r, use(n)) if r.error is None or r.scores else r
                                          for n, r in enumerate(result.repeats)], prepared.experiment.reduce)
                result = redact_item(result, prepared.secrets)
            elif result.error is None or result.scores:
                result = redact_item(processor.scored(result, use(0)), prepared.secrets)
            yield labelled(result)
    finally:
        processor.close()


def _has_error(result: ItemResult) -> bool:
    """Whether the item, one of its scores or one of its repeats ended in an error."""
    return (result.status == "error" or any(s.error is not None for s in result.scores.values())
            or any(_has_error(r) for r in result.repeats))


def _unfinished(items: Iterable[Item], done: set[str], experiment_id: str) -> Iterator[Item]:
    """The items whose ids are not ``done``; an id met twice is a duplicate, finished or not."""
    skipped: set[str] = set()
    for item in items:
        if item.id in done:
            if item.id in skipped:
                raise UsageError(f"duplicate item id '{item.id}' in experiment '{experiment_id}': item"
                                 f" {item.index + 1} of the dataset repeats an id met before; ids must be unique,"
                                 " so fix the dataset and run again")
            skipped.add(item.id)
            continue
        yield item


def run_experiment(prepared: Prepared, placement: Placement, source: ItemSource = ItemSource(),
                   hooks: Hooks = Hooks(), bounds: Bounds = Bounds(), keep_items: bool = True) -> ExperimentResult:
    """Run one experiment and return its result, items in dataset order.

    ``placement.place(experiment, concurrency)`` says where its items run and which network they
    call out through (``yamleval.engine.executors.choice``); ``source`` where they come from; ``hooks``
    hear of them; ``bounds`` say how many run at once and when to stop (``budgets`` reached: by the
    tokens and cost of every item, ``previous`` included, and the time since it started).
    Dataset errors met mid-run end the run early; they are in ``aborted``. So does an endpoint
    whose first requests all fail for a lasting reason: then ``aborted`` says which, why and what
    to do, and ``could_not_evaluate`` is set; a budget reached sets ``stopped_by_budget``. Without
    ``keep_items`` the result's ``items`` are empty: ``on_item`` has seen each (the command line
    stores them), and a run of any size needs no memory for them. With ``repeats`` over one, each
    item runs that many times and is recorded once all its runs are in.
    """
    experiment = prepared.experiment
    placed = placement.place(experiment, bounds.concurrency or experiment.concurrency)
    try:
        return _Experiment(prepared, placed, source, hooks, bounds, keep_items).run()
    finally:
        placed.executor.close()


class _Experiment:
    """One experiment as it runs: its counts, its warnings, and why it stopped early, if it did."""

    def __init__(self, prepared: Prepared, placed: Placed, source: ItemSource, hooks: Hooks, bounds: Bounds,
                 keep_items: bool):
        self.prepared, self.experiment = prepared, prepared.experiment
        self.executor, self.network = placed.executor, placed.network
        self.placed, self.source, self.hooks, self.bounds = placed, source, hooks, bounds
        self.keep_items = keep_items
        self.dataset = prepared.open_dataset(source.limit) if source.dataset else None
        self.total = None if self.dataset is None or source.shard is not None else self.dataset.total
        if hooks.on_planned is not None and self.dataset is not None and self.dataset.total is not None:
            hooks.on_planned(self.dataset.total)
        self.aggregator = Aggregator({s.id: (s.spec.name, s.spec.threshold, s.corpus) for s in prepared.scorers},
                                     self.experiment.confidence, self.experiment.breakdowns)
        self.results: list[ItemResult] = []
        self.warnings: list[str] = []
        self.unusable: list[health.Unusable] = []
        self.errored = False  # an item ended in error: an outage may be why (``unreachable``, at the end)
        self.over_budget: list[str] = []
        self.first_calls = health.first_calls(self.executor.concurrency)

    def run(self) -> ExperimentResult:
        """Every item run (or counted from before), then the experiment's result."""
        self.started_at, self.started, calls = now(), time.perf_counter(), self.network.throttling()
        self.endpoint_counts = self.network.snapshot()
        items = self._items()
        if self.bounds.budgets:  # one reached already (a resumed run): nothing starts
            self._check_budgets()
        processor = ItemProcessor(self.prepared, caching_of(self.prepared), self.network, self.placed.worker_folder)
        try:
            self._execute(processor, items)
        finally:
            processor.close()
        finished = ItemList(sorted(self.results, key=lambda r: r.item.index))
        summary = self.aggregator.summary((time.perf_counter() - self.started) * 1000.0, self.total)
        # the endpoints' counters since the start: this experiment's, as a run's experiments run one at a time
        summary = dataclasses.replace(criteria.with_criteria(summary, self.experiment.pass_criteria),
                                      throttling=limits.since(calls, self.network.throttling()))
        if self.errored and not self.unusable and self.executor.failure is None:  # nothing answered, however few items
            self.unusable.extend(filter(None, [self.network.unreachable(self.endpoint_counts)]))
        return self._result(summary, finished)

    def _items(self) -> Iterator[Item]:
        """The items to run: one pass over those finished before, which may be read (and scored)
        from the store as it goes; then the dataset's (its shard's) that are not among them."""
        done = set()
        for result in self.source.previous:
            if self.keep_items:
                self.results.append(result)
            self.aggregator.add(result)
            done.add(result.item.id)
            if self.dataset is None and _has_error(result):  # scored again by a judge whose endpoint cannot be used
                self.errored = True
                if self._halted():
                    break
        shard, dataset = self.source.shard, self.dataset
        rows = (iter(()) if dataset is None else iter(dataset) if shard is None else
                shard.items(dataset, sharding.key(self.experiment)))
        return _unfinished(rows, done, self.experiment.id) if done else rows

    def _execute(self, processor: ItemProcessor, items: Iterator[Item]) -> None:
        stop, abandon = self.bounds.stop, self.bounds.abandon
        if self.experiment.repeats <= 1:
            self.executor.run(items, processor, self._record, error_result, stop=stop, abandon=abandon)
            return
        # the executor runs each repeat as a unit of its own
        gathered = repeats.Gathered(self.experiment.repeats, self.experiment.reduce, self.source.partial)

        def record_repeat(done: tuple[repeats.Repeat, ItemResult]) -> None:
            unit, result = done[0], redact_item(done[1], self.prepared.secrets)
            reduced = gathered.add(unit, result)
            if reduced is not None:
                self._record(reduced)
            elif self.hooks.on_repeat is not None:
                self._call("on_repeat", self.hooks.on_repeat, unit.number, result)

        self.executor.run(gathered.units(items), lambda unit, slot: (unit, processor(unit.item, slot, unit.number)),
                          record_repeat, lambda unit, why, ms: (unit, error_result(unit.item, why, ms)),
                          stop=stop, abandon=abandon)

    def _record(self, result: ItemResult) -> None:
        """An item finished: counted, kept (if asked), its endpoints and the budgets looked at, the hooks told."""
        result = labelled(redact_item(result, self.prepared.secrets))  # before anything stores or shows it
        if self.keep_items:
            self.results.append(result)
        self.aggregator.add(result)
        lost = None
        try:
            # an endpoint turns unusable only through calls that failed, and those leave an error on
            # their item: an item without one has nothing to add (on Ray each look is a call to the actor)
            if _has_error(result):
                self.errored = True
                if self._halted():
                    self.executor.halt()
        except YamlevalError as exc:  # the endpoints' records, kept elsewhere (Ray), are gone: after this item
            lost = exc
        if self.hooks.on_item is not None:
            self._call("on_item", self.hooks.on_item, result)
        if self.bounds.budgets and not self.over_budget:  # after ``on_item`` stored the item: shards sharing a budget count it
            self._check_budgets()
        if self.hooks.on_progress is not None:
            self._call("on_progress", self.hooks.on_progress, self.aggregator.completed, self.total)
        if lost is not None:
            raise lost

    def _call(self, name: str, hook: Callable, *args) -> None:
        """A caller's hook; what it raises is kept as a warning (the first 20), never fatal."""
        try:
            hook(*args)
        except Exception as exc:
            if len(self.warnings) < 20:
                self.warnings.append(f"{name} callback raised {describe_exception(exc)}")

    def _halted(self) -> bool:
        """Whether an endpoint has turned out unusable (noted in ``unusable`` the first time)."""
        if not self.unusable:
            found = self.network.unusable(self.endpoint_counts, self.first_calls)
            if found is None:
                return False
            self.unusable.append(found)
        return True

    def _check_budgets(self) -> None:
        aggregator = self.aggregator
        spent = budget.spent((aggregator.tokens.usage(), aggregator.judge_tokens.usage()),
                             time.perf_counter() - self.started, aggregator.cache)
        found = budget.first_reached(self.bounds.budgets, spent)
        if found is not None:
            self.over_budget.append(found)
            self.executor.halt()

    def _result(self, summary, finished: ItemList) -> ExperimentResult:
        """The experiment's result: its verdict, and why it ended early if it did."""
        experiment, stop = self.experiment, self.bounds.stop
        interrupted = bool(stop is not None and stop.is_set())
        aborted, could_not_evaluate, stopped_by_budget = None, False, False
        if self.executor.failure is not None:
            failure = self.executor.failure
            aborted = getattr(failure, "format_message", lambda: f"dataset: {describe_exception(failure)}")()
            could_not_evaluate = getattr(failure, "exit_code", None) == ExitCode.COULD_NOT_EVALUATE  # not the dataset's
        elif self.unusable:
            aborted, could_not_evaluate = self.unusable[0].message(), True
        elif self.over_budget:
            aborted, stopped_by_budget = self.over_budget[0], True
        return redact_experiment(judged(ExperimentResult(
            experiment_id=experiment.id, label=experiment.label,
            passed=False,
            summary=summary, items=finished, started_at=self.started_at, completed_at=now(),
            interrupted=interrupted, warnings=tuple(self.warnings), aborted=aborted,
            could_not_evaluate=could_not_evaluate, stopped_by_budget=stopped_by_budget, variant=experiment.variant,
            description=experiment.description, tags=experiment.tags, runner=experiment.runner.written(),
            dataset=experiment.dataset.describe(), scorers=tuple(s.plugin.written() for s in experiment.scorers),
        )), self.prepared.secrets)
