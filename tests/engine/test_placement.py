"""The engine takes what it needs: items from an ``ItemSource``, an executor behind the
``engine.placement`` Protocol (run, halt, close, failure), and the network the placement names."""
from __future__ import annotations

import threading

import yamleval
from yamleval.engine import experiment as engine
from yamleval.engine import plan
from yamleval.engine.placement import Placed
from yamleval.engine.executors.core import Slot
from yamleval.calls.network import Network

CONFIG = """
experiments:
  - id: echo
    runner: {uses: echo}
    dataset:
      items:
        - {id: a, input: x, expected: x}
        - {id: b, input: y, expected: nope}
        - {id: c, input: z, expected: z}
        - {id: d, input: w, expected: w}
    scorers: [exact_match]
"""


class InThisThread:
    """An executor of the Protocol alone: one unit at a time, in the caller's thread."""

    concurrency = 1
    failure = None

    def __init__(self):
        self.halted = self.closed = False
        self.ran: list[str] = []

    def run(self, items, process, record, lost, stop=None, abandon=None):
        for unit in items:
            if self.halted or (stop is not None and stop.is_set()):
                return
            self.ran.append(unit.id)
            record(process(unit, Slot(unit)))

    def halt(self):
        self.halted = True

    def close(self):
        self.closed = True


class Here:
    """Every experiment on one ``InThisThread``, calling out through one network."""

    def __init__(self):
        self.executor, self.network, self.asked = InThisThread(), Network(), []

    def place(self, experiment, concurrency):
        self.asked.append((experiment.id, concurrency))
        return Placed(self.executor, self.network)


def _prepared(write_config):
    [experiment] = yamleval.load_experiments(write_config(CONFIG))
    return plan.prepare(experiment)


def test_an_executor_of_the_protocol_runs_the_dataset_and_is_closed(write_config):
    here, seen = Here(), []
    result = engine.run_experiment(_prepared(write_config), here, engine.ItemSource(limit=3),
                                   engine.Hooks(on_item=lambda r: seen.append(r.item.id)), engine.Bounds(concurrency=7))
    assert here.asked == [("echo", 7)] and here.executor.closed
    assert here.executor.ran == ["a", "b", "c"] and sorted(seen) == ["a", "b", "c"]
    assert [r.status for r in result.items] == ["passed", "failed", "passed"] and not result.passed


def test_items_finished_before_are_counted_and_not_run_again(write_config):
    prepared = _prepared(write_config)
    first = engine.run_experiment(prepared, Here(), engine.ItemSource(limit=2))
    here = Here()
    resumed = engine.run_experiment(prepared, here, engine.ItemSource(previous=first.items))
    assert here.executor.ran == ["c", "d"] and resumed.summary.completed == 4
    assert [r.item.id for r in resumed.items] == ["a", "b", "c", "d"]


def test_stored_outputs_are_scored_again_without_the_dataset_or_the_runner(write_config):
    prepared = _prepared(write_config)
    first = engine.run_experiment(prepared, Here(), engine.ItemSource())
    here = Here()
    again = engine.run_experiment(prepared, here, engine.ItemSource.stored(engine.rescored(prepared, first.items)))
    assert here.executor.ran == [] and again.summary.completed == 4
    assert [r.output for r in again.items] == [r.output for r in first.items]


def test_a_stop_set_before_the_start_runs_nothing_and_the_result_says_interrupted(write_config):
    stop = threading.Event()
    stop.set()
    here = Here()
    result = engine.run_experiment(_prepared(write_config), here, bounds=engine.Bounds(stop=stop))
    assert here.executor.ran == [] and result.interrupted and not result.passed and here.executor.closed
