"""What the engine needs of where items run, as typed faces: an executor (``ItemExecutor``) and
a run's choice of one per experiment (``Placement``), which says with it which network the
items call out through and where another process finds the config's folder (``Placed``).

The engine never imports an executor: the run hands it a ``Placement`` (``yamleval.engine.executors.choice``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from yamleval.calls.network import RunNetwork


class ItemExecutor(Protocol):
    """Runs units of work (an item, or one repeat of one), ``concurrency`` at a time."""

    concurrency: int
    failure: BaseException | None  # what stopped it early (a dataset that cannot be read, a state gone)

    def run(self, items: Iterator[Any], process: Callable[[Any, Any], Any], record: Callable[[Any], None],
            lost: Callable[[Any, str, float], Any], stop: threading.Event | None = None,
            abandon: threading.Event | None = None) -> None:
        """Every unit through ``process(unit, slot)``, each result to ``record`` one at a time;
        ``lost(unit, why, elapsed_ms)`` makes the result of one that timed out. Returns once every
        result is recorded: nothing is recorded after."""

    def halt(self) -> None:
        """Start no more units (those running finish); callable from ``record``."""

    def close(self) -> None:
        """Let go of what the executor holds for its run."""


@dataclass(frozen=True)
class Placed:
    """Where an experiment's items run: the ``executor``, the ``network`` they call out through (the
    run's, or a cluster's shared with its workers) and ``worker_folder`` (where another process finds
    a config folder; None: the items run in this process)."""

    executor: ItemExecutor
    network: RunNetwork
    worker_folder: Callable[[str], str] | None = None


class Placement(Protocol):
    """A run's choice of where each of its experiments runs."""

    def place(self, experiment, concurrency: int) -> Placed:
        """The executor (and its network) for ``experiment``'s items, ``concurrency`` at a time."""
