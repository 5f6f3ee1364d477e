"""Which executor runs an experiment's items: threads of this process, or tasks on a Ray cluster.

The engine is handed the choice (``engine.run_experiment(executor=...)``): it never imports
an executor itself. A run hands it ``on(cluster)``: its experiments share the run's network
(one limiter per endpoint, one record of how its requests ended), or the cluster's on Ray.
"""
from __future__ import annotations

from typing import Any

from yamleval.net.network import Network, RunNetwork


def executor_for(experiment, concurrency: int, cluster: Any = None, network: RunNetwork | None = None):
    """Threads of this process, or tasks on a Ray cluster (``executor: {uses: ray}``): the run's
    ``cluster`` (``ray.start``), else a connection of the executor's own. ``network``: the run's,
    for items on threads (None: the experiment's own)."""
    if experiment.executor.uses == "ray":
        from yamleval.executors.ray import RayExecutor

        return RayExecutor(concurrency, experiment.timeout, experiment.executor, experiment.retries,
                           experiment.base_dir, cluster)
    from yamleval.executors.local import LocalExecutor
    from yamleval.plugins.calls import close_thread_loop

    return LocalExecutor(concurrency, experiment.timeout, close_thread_loop, network)


class Placement:
    """Where the experiments of one run run (``executor_for``), with the run's network."""

    def __init__(self, cluster: Any = None):
        self.cluster = cluster
        self.network = Network()

    def __call__(self, experiment, concurrency: int):
        return executor_for(experiment, concurrency, self.cluster, self.network)


def on(cluster: Any) -> Placement:
    """The executors of a run whose Ray experiments run on ``cluster`` (its connection, or None)."""
    return Placement(cluster)
