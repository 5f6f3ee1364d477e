"""One item through its experiment's runner, output checks and scorers (``ItemProcessor``).

A processor belongs to one run of one experiment: it hands the run's network (its limiters
and endpoint records) and the item's answer cache down to the runner and scorers, through the
item's context and the run's models (``Models.for_run``, ``Models.calling``).
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

from yamleval.calls.answers import Use
from yamleval.calls.caching import Caching
from yamleval.engine import plan
from yamleval.engine.plan import Prepared
from yamleval.engine.scoring import as_usage, error_result, item_status, score_output
from yamleval.plugins.calls import EventLoops, ItemContext
from yamleval.records import codec as records
from yamleval.records.errors import describe_exception
from yamleval.records.types import Item, ItemResult, RunnerResult, Usage

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


def caching(prepared: Prepared) -> Caching | None:
    """How ``prepared`` uses the answer cache, or None when it does not."""
    settings = prepared.experiment.cache
    return Caching(prepared, settings) if settings.runner or settings.judges else None


class ItemProcessor:
    """Runs one item: runner, output checks, scorers, status; its calls out go through ``network``.

    Sent to another process (a Ray worker), it travels as its experiment, its network (the
    cluster's proxy) and ``worker_folder`` (where that process finds the config's folder), and
    is prepared there once per worker process (``processor_for``); there it writes what the cache keeps after
    every item, as the process may end at any time."""

    def __init__(self, prepared: Prepared, caching: Caching | None, network: Any,
                 worker_folder: Callable[[str], str] | None = None, sent: bool = False):
        self.prepared = prepared
        self.runner = prepared.runner
        self.scorers = prepared.scorers
        self.vars = prepared.experiment.vars
        self.network = network
        self.models = prepared.models.for_run(network) if prepared.models is not None else None
        self.timeout = prepared.experiment.timeout
        self.config_dir = prepared.experiment.base_dir
        self.caching = caching
        self.baseline = prepared.baseline
        self.worker_folder = worker_folder
        self.loops = EventLoops()  # for async plugins: one loop per thread of the run, closed with it
        self._sent = sent

    def __call__(self, item: Item, slot, repeat: int = 0) -> ItemResult:
        """``item`` run (repeat ``repeat``) in the executor's ``slot``: its start and phases."""
        try:
            return self._run(item, slot, repeat)
        finally:
            if self._sent and self.caching is not None:
                self.caching.flush()

    def _run(self, item: Item, slot, repeat: int) -> ItemResult:
        deadline = slot.started + self.timeout if self.timeout else None  # when the executor gives up
        use = self.caching.use(repeat) if self.caching is not None else None
        context = ItemContext(item, item.expected, self.vars, self._models(use, "runner"), deadline=deadline,
                              config_dir=self.config_dir, network=self.network, loops=self.loops)
        entry = self.caching.runner_entry(use, item) if use is not None else None
        kept = use.get(entry, "output") if entry is not None else None
        started = time.perf_counter()
        try:
            if kept is not None:  # the runner's answer, kept from an earlier run
                returned = RunnerResult(**self.caching.answer(kept))
            else:
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

    def _models(self, use: Use | None, role: str):
        return self.models.calling(use, role) if self.models is not None else None

    def __reduce__(self):
        return processor_for, (self.prepared.experiment, self.baseline, self.caching is not None,
                               self.network, self.worker_folder)

    def scored(self, result: ItemResult, use: Use | None = None) -> ItemResult:
        """``result`` with its output scored (again) by this experiment's scorers; ``use``: the
        cache its judges may use (what it did is kept on the result)."""
        context = ItemContext(result.item, result.item.expected, self.vars, self._models(use, "judge"), result.output,
                              result.trace, latency_ms=result.latency_ms, usage=result.usage,
                              baseline=self.baseline(result.item.id) if self.baseline is not None else None,
                              network=self.network, loops=self.loops)
        scores = score_output(self.scorers, context) if self.scorers else {}
        status, error = item_status(scores)
        return dataclasses.replace(result, status=status, error=error, scores=scores,
                                   cache=use.used() if use is not None else result.cache,
                                   human=None)  # scored anew: a dataset's label is counted again (``labelled``)

    def close(self) -> None:
        """Let go of the clients of the run's models, of the cache and of the async plugins' loops."""
        self.loops.close()
        if self.models is not None:
            self.models.close()
        if self.caching is not None:
            self.caching.close()


def processor_for(experiment, baseline, cached: bool, network, worker_folder) -> ItemProcessor:
    """The processor of an experiment sent to another process, made there: prepared in the worker's
    copy of the config's folder, calling out through the run's ``network`` (the cluster's proxy).
    The executor that sent it unpickles it once per worker process (``executors.ray``)."""
    if worker_folder is not None:
        experiment = dataclasses.replace(experiment, base_dir=worker_folder(experiment.base_dir))
    with plan.importable(experiment):  # the dataset is the driver's to read
        prepared = dataclasses.replace(plan.prepare(experiment, dataset=False), baseline=baseline)
    return ItemProcessor(prepared, caching(prepared) if cached else None, network, worker_folder, sent=True)
