"""Drive every item of one prepared experiment through its runner and scorers.

Orchestration only: the executor (chosen by the caller) runs items, ``item`` runs one,
``scoring`` judges them, the aggregator counts them, ``analysis.verdict`` decides. The
run's network (its limiters and endpoint records) is the caller's, or the experiment's own.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from yamleval.analysis.aggregate import Aggregator
from yamleval.analysis import criteria
from yamleval.analysis.verdict import judged
from yamleval.engine import budget, repeats
from yamleval.engine import shards as sharding
from yamleval.engine.item import ItemProcessor, caching as caching_of
from yamleval.engine.plan import Prepared
from yamleval.records.redaction import redact_experiment, redact_item
from yamleval.records.reviews import labelled
from yamleval.engine.scoring import error_result
from yamleval.engine.shards import Shard
from yamleval.net import health, limits
from yamleval.net.network import Network, RunNetwork
from yamleval.records.errors import ExitCode, UsageError, YamlevalError, describe_exception
from yamleval.records.types import ExperimentResult, Item, ItemList, ItemResult, now

ItemCallback = Callable[[ItemResult], Any]
RepeatCallback = Callable[[int, ItemResult], Any]  # the repeat's number (from 0) and its result
ProgressCallback = Callable[[int, "int | None"], Any]
# what runs the items, made by the caller for an experiment and a concurrency (``yamleval.executors``):
# ``run``, ``halt``, ``close``, ``concurrency``, ``failure``, ``recording``; its ``network`` (None: the
# run's own) and ``worker_folder`` (None: the items run in this process)
ExecutorFactory = Callable[[Any, int], Any]

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


def run_experiment(prepared: Prepared, *, executor: ExecutorFactory, network: RunNetwork | None = None,
                   concurrency: int | None = None, limit: int | None = None,
                   on_item: ItemCallback | None = None, on_progress: ProgressCallback | None = None,
                   stop: threading.Event | None = None, abandon: threading.Event | None = None,
                   previous: Iterable[ItemResult] = (), keep_items: bool = True,
                   partial: Mapping[str, Mapping[int, ItemResult]] | None = None,
                   on_repeat: RepeatCallback | None = None, run_new: bool = True,
                   budgets: Sequence[budget.Limit] = (), shard: Shard | None = None,
                   on_planned: Callable[[int], None] | None = None) -> ExperimentResult:
    """Run one experiment and return its result, items in dataset order.

    ``executor(experiment, concurrency)`` makes what runs the items (``yamleval.executors``);
    ``network``: the run's limiters and endpoint records (None: the experiment's own), unless
    the executor keeps them itself (a Ray cluster's, shared with its workers).
    ``stop`` set: start no new items, finish those running. ``abandon`` set: stop waiting
    for them too. An exception in a callback is reported in ``warnings``, never fatal.
    Dataset errors met mid-run end the run early; they are in ``aborted``. So does an endpoint
    whose first requests all fail for a lasting reason (``endpoints``): then ``aborted`` says
    which, why and what to do, and ``could_not_evaluate`` is set.
    ``previous`` are results of items finished earlier (a resumed run): they count, and
    items with their ids are not run again. Without ``keep_items`` the result's ``items``
    are empty: ``on_item`` has seen each (the command line stores them), and a run of any
    size needs no memory for them. With ``repeats`` over one, each item runs that many times
    and is recorded once all its runs are in (``repeats``); ``on_repeat`` sees each repeat that
    leaves its item unfinished (the command line stores them), and ``partial`` gives those of a
    resumed run (by item id and repeat number), which are not run again. Without ``run_new``,
    ``previous`` are all the items: the dataset is not opened and no runner is called (a stored
    run scored again).
    ``budgets`` reached (by the tokens and cost of every item, ``previous`` included, and the
    time since it started): no new item starts; ``aborted`` says which, at what figure, and
    ``stopped_by_budget`` is set. ``shard``: only the dataset's items of that shard run (the
    total is then not known ahead). ``on_planned(count)``: the dataset's items in all (of every
    shard), once it is open, when it knows.
    """
    experiment = prepared.experiment
    dataset = prepared.open_dataset(limit) if run_new else None
    total = None if dataset is None or shard is not None else dataset.total
    if on_planned is not None and dataset is not None and dataset.total is not None:
        on_planned(dataset.total)
    aggregator = Aggregator({s.id: (s.spec.name, s.spec.threshold, s.corpus) for s in prepared.scorers},
                            experiment.confidence, experiment.breakdowns)
    results: list[ItemResult] = []
    warnings: list[str] = []
    executor = executor(experiment, concurrency or experiment.concurrency)
    if executor.network is not None:  # a cluster's, shared with its workers
        network = executor.network
    elif network is None:
        network = Network()
    try:
        first_calls = health.first_calls(executor.concurrency)
        unusable: list[health.Unusable] = []
        over_budget: list[str] = []

        def check_budgets() -> None:
            spent = budget.spent((aggregator.tokens.usage(), aggregator.judge_tokens.usage()),
                                 time.perf_counter() - started, aggregator.cache)
            found = budget.first_reached(budgets, spent)
            if found is not None:
                over_budget.append(found)
                executor.halt()

        def warn_callback(name: str, exc: BaseException) -> None:
            if len(warnings) < 20:
                warnings.append(f"{name} callback raised {describe_exception(exc)}")

        def halted() -> bool:
            """Whether an endpoint has turned out unusable (noted in ``unusable`` the first time)."""
            if not unusable:
                found = network.unusable(endpoint_counts, first_calls)
                if found is None:
                    return False
                unusable.append(found)
            return True

        def record(result: ItemResult) -> None:
            result = labelled(redact_item(result, prepared.secrets))  # before anything stores or shows it
            if keep_items:
                results.append(result)
            aggregator.add(result)
            lost = None
            try:
                # an endpoint turns unusable only through calls that failed, and those leave an error on
                # their item: an item without one has nothing to add (on Ray each look is a call to the actor)
                if _has_error(result) and halted():
                    executor.halt()
            except YamlevalError as exc:  # the endpoints' records, kept elsewhere (Ray), are gone: after this item
                lost = exc
            if budgets and not over_budget:
                check_budgets()
            if on_item is not None:
                try:
                    on_item(result)
                except Exception as exc:
                    warn_callback("on_item", exc)
            if on_progress is not None:
                try:
                    on_progress(aggregator.completed, total)
                except Exception as exc:
                    warn_callback("on_progress", exc)
            if lost is not None:
                raise lost

        started_at, started, calls = now(), time.perf_counter(), network.throttling()
        endpoint_counts = network.snapshot()
        done = set()  # one pass over ``previous``, which may be read (and scored) from the store as it goes
        for result in previous:
            if keep_items:
                results.append(result)
            aggregator.add(result)
            done.add(result.item.id)
            if dataset is None and halted():  # scored again by a judge whose endpoint cannot be used
                break
        rows = iter(()) if dataset is None else iter(dataset) if shard is None else shard.items(dataset, sharding.key(experiment))
        items = _unfinished(rows, done, experiment.id) if done else rows
        if budgets:  # one reached already (a resumed run): nothing starts
            check_budgets()
        processor = ItemProcessor(prepared, caching_of(prepared), network, executor.worker_folder)
        try:
            if experiment.repeats > 1:  # the executor runs each repeat as a unit of its own
                gathered = repeats.Gathered(experiment.repeats, experiment.reduce, partial)

                def record_repeat(done: tuple[repeats.Repeat, ItemResult]) -> None:
                    unit, result = done[0], redact_item(done[1], prepared.secrets)
                    reduced = gathered.add(unit, result)
                    if reduced is not None:
                        record(reduced)
                    elif on_repeat is not None:
                        try:
                            on_repeat(unit.number, result)
                        except Exception as exc:
                            warn_callback("on_repeat", exc)

                executor.run(gathered.units(items), lambda unit, slot: (unit, processor(unit.item, slot, unit.number)),
                             record_repeat, lambda unit, why, ms: (unit, error_result(unit.item, why, ms)),
                             stop=stop, abandon=abandon)
            else:
                executor.run(items, processor, record, error_result, stop=stop, abandon=abandon)
        finally:
            processor.close()
        with executor.recording:
            finished = ItemList(sorted(results, key=lambda r: r.item.index))
            summary = aggregator.summary((time.perf_counter() - started) * 1000.0, total)
        # the endpoints' counters since the start: this experiment's, as a run's experiments run one at a time
        summary = dataclasses.replace(criteria.with_criteria(summary, experiment.pass_criteria),
                                      throttling=limits.since(calls, network.throttling()))
        interrupted = bool(stop is not None and stop.is_set())
        aborted, could_not_evaluate, stopped_by_budget = None, False, False
        if executor.failure is not None:
            failure = executor.failure
            aborted = getattr(failure, "format_message", lambda: f"dataset: {describe_exception(failure)}")()
            could_not_evaluate = getattr(failure, "exit_code", None) == ExitCode.COULD_NOT_EVALUATE  # not the dataset's
        elif unusable:
            aborted, could_not_evaluate = unusable[0].message(), True
        elif over_budget:
            aborted, stopped_by_budget = over_budget[0], True
        return redact_experiment(judged(ExperimentResult(
            experiment_id=experiment.id, label=experiment.label, passed=False,
            summary=summary, items=finished, started_at=started_at, completed_at=now(),
            interrupted=interrupted, warnings=tuple(warnings), aborted=aborted, could_not_evaluate=could_not_evaluate,
            stopped_by_budget=stopped_by_budget, variant=experiment.variant,
            description=experiment.description, tags=experiment.tags, runner=experiment.runner.written(),
            dataset=experiment.dataset.describe(), scorers=tuple(s.plugin.written() for s in experiment.scorers),
        )), prepared.secrets)
    finally:
        executor.close()
