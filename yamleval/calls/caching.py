"""How one experiment uses the answer cache (``yamleval.calls.answers``), as its ``cache:`` says.

A model runner (``openai``, ``agent``) and the judges have each model request answered from the
cache or kept there (``models.client``). Any other runner with ``runner: true`` has its whole
call kept, keyed by its reference, the hash of its source, its version, its bound ``with:``,
the experiment's ``vars`` and the item.
"""
from __future__ import annotations

import sqlite3
import threading
from typing import Any, Mapping

from yamleval.records.version import __version__
from yamleval.calls import answers as cache
from yamleval.records.errors import UsageError
from yamleval.records.types import Item


class Caching:
    """The cache of one experiment's run: opened when an item first needs it, closed by ``close``."""

    def __init__(self, prepared, settings: cache.Settings):
        from yamleval.config import fingerprint
        from yamleval.config import provenance
        from yamleval.plugins import versions

        experiment = prepared.experiment
        self.settings, self.secrets = settings, prepared.secrets
        self._cache: cache.Cache | None = None
        self._opening = threading.Lock()
        self.requests = prepared.runner.hooks.model_runner  # its model calls are cached one request at a time
        self.runner = None
        if settings.runner and not self.requests:
            uses = experiment.runner.uses
            named = fingerprint.named_files(experiment.runner.with_, experiment.base_dir or ".")
            self.runner = {"call": "runner", "uses": uses, "with": dict(experiment.runner.with_),
                           "source": fingerprint.plugin_sources([experiment]).get(uses),
                           "files": fingerprint.files_digest(named) if named else None,  # scripts it runs
                           "version": versions.plugin_versions([experiment], __version__).get(uses),
                           "vars": experiment.vars}

    def use(self, repeat: int) -> cache.Use:
        return cache.Use(self._open, self.settings, repeat, self.secrets, self.requests)

    def _open(self) -> cache.Cache:
        with self._opening:
            if self._cache is None:
                self._cache = cache.Cache(self.settings.path, self.settings.ttl, self.settings.max_size)
            return self._cache

    def runner_entry(self, use: cache.Use, item: Item) -> str | None:
        """The key of the runner's whole answer to ``item``, or None when it is not kept whole."""
        if self.runner is None:
            return None
        return use.key({**self.runner, "item": {"id": item.id, "input": item.input, "expected": item.expected,
                                                "context": item.context, "metadata": item.metadata}})

    @staticmethod
    def answer(kept: Mapping[str, Any]) -> dict[str, Any]:
        """The runner's answer as the cache keeps it: the arguments of a ``RunnerResult``."""
        return {name: kept.get(name) for name in ("output", "usage", "metadata", "trace")}

    def flush(self) -> None:
        """Write the answers kept so far (a worker process that may end at any time)."""
        if self._cache is not None:
            try:
                self._cache.flush()
            except (sqlite3.Error, UsageError):
                pass

    def close(self) -> None:
        """Write what is kept, prune, close; a cache that cannot be written costs the next run
        its answers, never this run its results."""
        if self._cache is not None:
            try:
                self._cache.prune()
                self._cache.close()
            except (sqlite3.Error, UsageError):
                pass

