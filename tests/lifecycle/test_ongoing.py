"""The ``Run``: whatever way it is made, one loop takes its experiments in turn from its
``ExperimentSource``, and its verdict, end and reports follow from what they gave."""
from __future__ import annotations

import dataclasses

from yamleval import api
from yamleval.engine import experiment as engine
from yamleval.engine import plan
from yamleval.lifecycle.ongoing import Controls, Run, Work, git_state, new_run
from yamleval.lifecycle.outputs import open_outputs
from yamleval.lifecycle.stored import store_experiment

CONFIG = """
experiments:
  - id: {name}
    runner: {{uses: echo}}
    dataset:
      items:
        - {{id: a, input: x, expected: x}}
        - {{id: b, input: y, expected: y}}
    scorers: [exact_match]
"""


class Unreachable:
    """A source whose first experiment runs, then reads as if its endpoint could not be used."""

    def __init__(self):
        self.asked: list[tuple[int, str, int]] = []

    def finished(self, run):
        return {}

    def baseline_items(self, run):
        return lambda stored_id: run.db.item_view(run.run_id, stored_id, 0).find

    def experiment(self, run, position, ready, results):
        self.asked.append((position, ready.experiment.id, len(results)))

        def produce(keeper):
            result = engine.run_experiment(ready, run.executors, hooks=engine.Hooks(on_item=keeper.item),
                                           keep_items=False)
            return dataclasses.replace(result, passed=False, could_not_evaluate=True,
                                       aborted="endpoint: connection refused")

        return store_experiment(run.db, run.run_id, position, ready, None, run.controls, produce)


def _made(tmp_path, store_at, source):
    config = tmp_path / "evals.yaml"
    config.write_text(CONFIG.format(name="first") + CONFIG.format(name="second").split("experiments:\n")[1])
    project = api.load_project(config)
    out = open_outputs(project, store_at.absolute(), str(tmp_path / "out"), ["json"], ("loop",))
    experiments = tuple(project.experiments)
    work = Work(project, experiments, tuple(plan.prepare(e) for e in experiments), {e.id: None for e in experiments})
    return Run(out, new_run(out.store, work, git_state(project)), work, Controls.of(), source)


def test_the_loop_stops_after_an_experiment_that_could_not_evaluate_and_the_run_is_aborted(tmp_path, store_at):
    source = Unreachable()
    run = _made(tmp_path, store_at, source)
    outcome = run.go()
    assert source.asked == [(0, "first", 0)]  # the second is likely behind the same endpoint: not started
    assert outcome.run.status == "aborted" and not outcome.passed and outcome.exit_code == 3
    assert [r.experiment_id for r in outcome.results] == ["first"] and outcome.results[0].summary.completed == 2
    assert store_at.query("r.db", "SELECT status FROM runs") == [("aborted",)]
    assert (tmp_path / "out" / "results.json").exists()


def test_a_stop_before_the_first_experiment_runs_none_and_the_run_is_interrupted(tmp_path, store_at):
    source = Unreachable()
    run = _made(tmp_path, store_at, source)
    run.controls.stop.set()
    outcome = run.go()
    assert source.asked == [] and outcome.run.status == "interrupted" and outcome.exit_code == 130
