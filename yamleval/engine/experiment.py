"""Drive every item of one prepared experiment through its runner and scorers.

Orchestration only: the executor runs items, ``scoring`` judges them, the
aggregator counts them, ``criteria`` gives the verdict.
"""
from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from yamleval.engine import budget
from yamleval.cache import answers as cache
from yamleval.engine import criteria
from yamleval.net import health as endpoints
from yamleval.engine import plan
from yamleval.records import codec as records
from yamleval.engine import repeats
from yamleval.engine import shards as sharding
from yamleval.net import limits as throttle
from yamleval.analysis.aggregate import Aggregator
from yamleval.cache.policy import Caching
from yamleval.plugins.calls import ItemContext, close_thread_loop
from yamleval.executors.local import LocalExecutor, Slot
from yamleval.engine.plan import Prepared
from yamleval.engine.redaction import redact_experiment, redact_item
from yamleval.records.errors import ExitCode, UsageError, YamlevalError, describe_exception
from yamleval.engine.shards import Shard
from yamleval.engine.scoring import as_usage, error_result, item_status, score_output
from yamleval.records.types import ExperimentResult, Item, ItemList, ItemResult, RunnerResult, Usage, now

ItemCallback = Callable[[ItemResult], Any]
RepeatCallback = Callable[[int, ItemResult], Any]  # the repeat's number (from 0) and its result
ProgressCallback = Callable[[int, "int | None"], Any]

# NaN and the infinities are kept as numbers (scorers see them) and stored as the strings "NaN",
# "Infinity" and "-Infinity", as the same numbers read from a dataset are (``records.encode``).
_PLAIN = (str, int, float, bool, type(None))


class JunkOutput(Exception):
    """An output that cannot be stored as JSON."""


def _storable(value: Any, depth: int = 0) -> Any:
    """``value`` if JSON can hold it (tuples become lists), else JunkOutput."""
    if isinstance(value, _PLAIN):
        return value
    if depth > 64:
        raise JunkOutput("a value nested more than 64 levels deep")
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise JunkOutput("a dict with keys that are not strings")
        return {k: _storable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable(v, depth + 1) for v in value]
    raise JunkOutput(f"a {type(value).__name__}")


def _usage(value: Any) -> Usage | None:
    try:
        return as_usage(value)
    except ValueError as exc:
        raise JunkOutput(str(exc)) from None


class _ItemProcessor:
    """Runs one item: runner, output checks, scorers, status.

    Sent to another process (a Ray worker, ``ray_executor``), it travels as its experiment and
    is prepared there once per process, in the copy of the config's folder that Ray gives its
    workers."""

    def __init__(self, prepared: Prepared, caching: Caching | None = None, token: str | None = None):
        self.prepared = prepared
        self.token = token or uuid.uuid4().hex  # which processor it is, in every process it is sent to
        self.runner = prepared.runner
        self.scorers = prepared.scorers
        self.vars = prepared.experiment.vars
        self.models = prepared.models
        self.timeout = prepared.experiment.timeout
        self.config_dir = prepared.experiment.base_dir
        self.caching = caching
        self.baseline = prepared.baseline

    def __call__(self, item: Item, slot: Slot, repeat: int = 0) -> ItemResult:
        deadline = slot.started + self.timeout if self.timeout else None  # when the executor gives up
        context = ItemContext(item, item.expected, self.vars, self.models, deadline=deadline,
                              config_dir=self.config_dir)
        use = self.caching.use(repeat) if self.caching is not None else None
        entry = self.caching.runner_entry(use, item) if use is not None else None
        kept = use.get(entry) if entry is not None else None
        started = time.perf_counter()
        try:
            if kept is not None:  # the runner's answer, kept from an earlier run
                returned = RunnerResult(**self.caching.answer(kept))
            else:
                with cache.using(use, "runner"):
                    returned = self.runner(context)
        except BaseException as exc:  # a plugin calling sys.exit() must not end a worker
            return error_result(item, f"runner raised {describe_exception(exc)}",
                                (time.perf_counter() - started) * 1000.0)
        latency_ms = (time.perf_counter() - started) * 1000.0
        metadata = usage = trace = None
        try:
            if isinstance(returned, RunnerResult):
                output = _storable(returned.output)
                metadata = _storable(dict(returned.metadata)) if returned.metadata else None
                usage = _usage(returned.usage)
                trace = _storable(returned.trace) if returned.trace is not None else None
            else:
                output = _storable(returned)
        except JunkOutput as exc:
            return error_result(item, f"runner returned {exc}, which cannot be stored; return text, "
                                      "numbers, booleans, None, lists or dicts", latency_ms)
        if entry is not None and kept is None:
            use.put(entry, {"output": output, "usage": None if usage is None else records.tokens(usage),
                            "metadata": metadata, "trace": trace},
                    0 if usage is None else usage.total_tokens, None if usage is None else usage.cost)
        slot.enter("scoring")
        return self.scored(ItemResult(item=item, status="passed", output=output, latency_ms=latency_ms,
                                      usage=usage, metadata=metadata, trace=trace), use)

    def __reduce__(self):
        return _processor_for, (self.token, self.prepared.experiment, self.baseline, self.caching is not None)

    def scored(self, result: ItemResult, use: cache.Use | None = None) -> ItemResult:
        """``result`` with its output scored (again) by this experiment's scorers; ``use``: the
        cache its judges may use (what it did is kept on the result)."""
        context = ItemContext(result.item, result.item.expected, self.vars, self.models, result.output,
                              result.trace, latency_ms=result.latency_ms, usage=result.usage,
                              baseline=self.baseline(result.item.id) if self.baseline is not None else None)
        with cache.using(use, "judge"):
            scores = score_output(self.scorers, context) if self.scorers else {}
        status, error = item_status(scores)
        return dataclasses.replace(result, status=status, error=error, scores=scores,
                                   cache=use.used() if use is not None else result.cache)


_SENT: dict[str, _ItemProcessor] = {}  # in a process items are sent to: the processors it has made


def _processor_for(token: str, experiment, baseline, cached: bool) -> _ItemProcessor:
    """The processor ``token`` of another process, made in this one the first time it comes."""
    found = _SENT.get(token)
    if found is None:
        from yamleval.executors.ray_shared import worker_folder

        experiment = dataclasses.replace(experiment, base_dir=worker_folder(experiment.base_dir))
        with plan.importable(experiment):  # the dataset is the driver's to read
            prepared = dataclasses.replace(plan.prepare(experiment, dataset=False), baseline=baseline)
        found = _SENT[token] = _ItemProcessor(prepared, _caching(prepared) if cached else None, token)
    return found


def flush_sent() -> None:
    """Write the answers the processors sent to this process have kept in the cache so far."""
    for processor in list(_SENT.values()):
        if processor.caching is not None:
            processor.caching.flush()


def _caching(prepared: Prepared) -> Caching | None:
    settings = prepared.experiment.cache
    return Caching(prepared, settings) if settings.runner or settings.judges else None


def rescored(prepared: Prepared, results: Iterable[ItemResult]) -> Iterator[ItemResult]:
    """Finished items scored again by ``prepared``'s scorers, their outputs kept (no runner
    call; judges through the cache); an item whose runner failed has no output to score and
    stays as it was."""
    caching = _caching(prepared)
    processor = _ItemProcessor(prepared, caching)
    use = caching.use if caching is not None else lambda number: None
    try:
        for result in results:
            if result.repeats:
                result = repeats.reduced([processor.scored(r, use(n)) if r.error is None or r.scores else r
                                          for n, r in enumerate(result.repeats)], prepared.experiment.reduce)
                result = redact_item(result, prepared.secrets)
            elif result.error is None or result.scores:
                result = redact_item(processor.scored(result, use(0)), prepared.secrets)
            yield result
    finally:
        if caching is not None:
            caching.close()


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


def _executor(experiment, concurrency: int):
    """Threads of this process, or tasks on a Ray cluster (``executor: {uses: ray}``)."""
    if experiment.executor.uses == "ray":
        from yamleval.executors.ray import RayExecutor

        return RayExecutor(concurrency, experiment.timeout, experiment.executor, experiment.retries, experiment.base_dir)
    return LocalExecutor(concurrency, experiment.timeout, close_thread_loop)


def run_experiment(prepared: Prepared, *, concurrency: int | None = None, limit: int | None = None,
                   on_item: ItemCallback | None = None, on_progress: ProgressCallback | None = None,
                   stop: threading.Event | None = None, abandon: threading.Event | None = None,
                   previous: Iterable[ItemResult] = (), keep_items: bool = True,
                   partial: Mapping[str, Mapping[int, ItemResult]] | None = None,
                   on_repeat: RepeatCallback | None = None, run_new: bool = True,
                   budgets: Sequence[budget.Limit] = (), shard: Shard | None = None) -> ExperimentResult:
    """Run one experiment and return its result, items in dataset order.

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
    total is then not known ahead).
    """
    experiment = prepared.experiment
    dataset = prepared.open_dataset(limit) if run_new else None
    total = None if dataset is None or shard is not None else dataset.total
    aggregator = Aggregator({s.id: (s.spec.name, s.spec.threshold, s.corpus) for s in prepared.scorers},
                            experiment.confidence, experiment.breakdowns)
    results: list[ItemResult] = []
    warnings: list[str] = []
    executor = _executor(experiment, concurrency or experiment.concurrency)
    first_calls = endpoints.first_calls(executor.concurrency)
    unusable: list[endpoints.Unusable] = []
    over_budget: list[str] = []

    def check_budgets() -> None:
        spent = budget.spent((aggregator.tokens.usage(), aggregator.judge_tokens.usage()), time.perf_counter() - started,
                             aggregator.cache)
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
            found = endpoints.unusable(endpoint_counts, first_calls)
            if found is None:
                return False
            unusable.append(found)
        return True

    def record(result: ItemResult) -> None:
        result = redact_item(result, prepared.secrets)  # before anything stores or shows it
        if keep_items:
            results.append(result)
        aggregator.add(result)
        lost = None
        try:
            if halted():
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

    started_at, started, calls = now(), time.perf_counter(), throttle.snapshot()
    endpoint_counts = endpoints.snapshot()
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
    caching = _caching(prepared)
    processor = _ItemProcessor(prepared, caching)
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
        if caching is not None:
            caching.close()
    with executor.recording:
        finished = ItemList(sorted(results, key=lambda r: r.item.index))
        summary = aggregator.summary((time.perf_counter() - started) * 1000.0, total)
    # the endpoints' counters since the start: this experiment's, as experiments run one at a time
    summary = dataclasses.replace(criteria.with_criteria(summary, experiment.pass_criteria),
                                  throttling=throttle.since(calls))
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
    return redact_experiment(ExperimentResult(
        experiment_id=experiment.id, label=experiment.label,
        passed=criteria.verdict(summary, bool(experiment.pass_criteria)) and not interrupted and aborted is None,
        summary=summary, items=finished, started_at=started_at, completed_at=now(),
        interrupted=interrupted, warnings=tuple(warnings), aborted=aborted, could_not_evaluate=could_not_evaluate,
        stopped_by_budget=stopped_by_budget, variant=experiment.variant,
        description=experiment.description, tags=experiment.tags, runner=experiment.runner.written(),
        dataset=experiment.dataset.describe(), scorers=tuple(s.plugin.written() for s in experiment.scorers),
    ), prepared.secrets)
