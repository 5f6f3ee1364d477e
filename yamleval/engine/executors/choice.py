"""Which executor runs an experiment's items: threads of this process, or tasks on a Ray cluster.

The engine is handed the choice (``engine.run_experiment(placement, ...)``, an
``engine.placement.Placement``): it never imports an executor itself. A run hands it ``on(cluster)``:
its experiments share the run's network (one limiter per endpoint, one record of how its
requests ended), or the cluster's on Ray.
"""
from __future__ import annotations

from typing import Any

from yamleval.engine.placement import Placed
from yamleval.calls.network import Network, RunNetwork


def executor_for(experiment, concurrency: int, cluster: Any = None, network: RunNetwork | None = None) -> Placed:
    """Threads of this process, or tasks on a Ray cluster (``executor: {uses: ray}``): the run's
    ``cluster`` (``ray.start``), else a connection of the executor's own. ``network``: the run's,
    for items on threads (None: a network of the experiment's own)."""
    if experiment.executor.uses == "ray":
        from yamleval.engine.executors import ray_shared
        from yamleval.engine.executors.ray import RayExecutor

        executor = RayExecutor(concurrency, experiment.timeout, experiment.executor, experiment.retries,
                               experiment.base_dir, cluster)
        return Placed(executor, executor.network, ray_shared.worker_folder)
    from yamleval.engine.executors.local import LocalExecutor
    return Placed(LocalExecutor(concurrency, experiment.timeout),
                  network if network is not None else Network())


class Placement:
    """Where the experiments of one run run (``executor_for``), with the run's network."""

    def __init__(self, cluster: Any = None):
        self.cluster = cluster
        self.network = Network()

    def place(self, experiment, concurrency: int) -> Placed:
        """The executor of ``experiment``'s items, on the run's cluster or with the run's network."""
        return executor_for(experiment, concurrency, self.cluster, self.network)


def on(cluster: Any) -> Placement:
    """The executors of a run whose Ray experiments run on ``cluster`` (its connection, or None)."""
    return Placement(cluster)
