"""``yamleval merge``: the stores of a sharded run's jobs (``yamleval run --shard I/N``) as one run.

Each store gives its latest shard run. They must be every shard of one split (1/N to N/N, each
once) of the same config, plugins and datasets, each run to its end. The merged run holds all
their items; each experiment's summary is counted from them and its criteria judged on it, so
its verdict, reports and exit code are those of the run unsharded. Its duration is the longest
shard's (they ran side by side); its calls and waits add up.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Sequence

from yamleval.lifecycle import shards as shard_runs
from yamleval.store import reviews as stored_reviews
from yamleval.store import tags as run_tags
from yamleval.records.errors import UsageError, display_path
from yamleval.lifecycle.run import RunOutcome
from yamleval.lifecycle.stored import new_run_id
from yamleval.store.writer import open_store
from yamleval.store.writer import Store
from yamleval.records.types import RunInfo


@dataclass(frozen=True)
class _Part:
    """One shard's store and the split run in it, with the shards of it that store holds."""

    path: str
    store: Store
    run: RunInfo
    shards: dict[int, tuple[int, str]]  # by number: (how many shards, status)
    fingerprint: dict[str, Any]

    @property
    def name(self) -> str:
        count = next(iter(self.shards.values()))[0]
        return f"{display_path(self.path)} (shard {', '.join(f'{n}/{count}' for n in self.shards)})"


def merge(out_path: str, paths: Sequence[str]) -> RunOutcome:
    """Merge the shard stores at ``paths`` into one run stored in ``out_path``: its outcome.
    UsageError (nothing stored) when they are not every shard of one run, each finished."""
    if not paths:
        raise UsageError("give the results database of every shard to merge")
    for path in paths:
        if path == out_path or (os.path.exists(out_path) and os.path.exists(path) and os.path.samefile(out_path, path)):
            raise UsageError(f"{display_path(out_path)} is one of the shards: merge into another store")
    parts = [_part(path) for path in paths]
    try:
        _check(parts)
        out = Store(out_path)
        try:
            return _merged(out, parts)
        finally:
            out.close()
    finally:
        for part in parts:
            part.store.close()


def _part(path: str) -> _Part:
    store = open_store(path, remedy="")
    for run in store.runs(1000):
        shards = shard_runs.of_run(store, run.run_id)
        if shards:
            return _Part(path, store, run, shards, store.run_detail(run.run_id, "fingerprint") or {})
    store.close()
    raise UsageError(f"{display_path(path)} holds no shard's run (`yamleval run --shard I/N` stores one)")


def _check(parts: list[_Part]) -> None:
    """Every shard of one split, each once, of one config, each run to its end."""
    first = parts[0]
    count = next(iter(first.shards.values()))[0]
    for part in parts[1:]:
        if next(iter(part.shards.values()))[0] != count:
            raise UsageError(f"the shards were split differently: {first.name}, {part.name}; merge the shards of"
                             " one run")
    seen: dict[int, _Part] = {}
    for part in parts:
        for number in part.shards:
            if number in seen:
                raise UsageError(f"{seen[number].name} and {part.name} both hold shard {number}/{count}: merge each"
                                 " shard's store once")
            seen[number] = part
    missing = [f"{n}/{count}" for n in range(1, count + 1) if n not in seen]
    if missing:
        raise UsageError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} {'are' if len(missing) > 1 else 'is'}"
                         " missing: merge the stores of every shard")
    for part in parts:
        for number, (_, status) in part.shards.items():
            if status != "completed":
                raise UsageError(f"{part.name}: shard {number}/{count} of run {part.run.run_id} is {status}, not"
                                 f" finished; resume it (`yamleval run --resume {part.run.run_id} --shard {number}/{count}"
                                 f" --store {display_path(part.path)}`), then merge")
        for what, mine, theirs in _differences(first, part):
            raise UsageError(f"{part.name} ran {what} than {first.name}: {mine} against {theirs}; the shards must run"
                             " the same config")


def _differences(first: _Part, part: _Part):
    if part.run.config_hash != first.run.config_hash:
        yield "another config", f"config hash {part.run.config_hash[:12]}", first.run.config_hash[:12]
    mine, theirs = (p.store.run_detail(p.run.run_id, "experiment_ids") for p in (part, first))
    if mine != theirs:
        yield "other experiments", ", ".join(mine or []), ", ".join(theirs or [])
    for key, what in (("plugins", "other plugin code"), ("repeats", "other --repeats")):
        if part.fingerprint.get(key) != first.fingerprint.get(key):
            yield what, part.fingerprint.get(key), first.fingerprint.get(key)
    datasets = {p.path: {e.experiment_id: e.dataset_hash for e in p.store.experiments(p.run.run_id)}
                for p in (part, first)}
    for experiment_id, digest in datasets[part.path].items():
        if digest != datasets[first.path].get(experiment_id, digest):
            yield f"another dataset for '{experiment_id}'", digest[:12], datasets[first.path][experiment_id][:12]


def _merged(out: Store, parts: list[_Part]) -> RunOutcome:
    first = parts[0]
    ids = {p.run.run_id for p in parts}
    run_id = ids.pop() if len(ids) == 1 else None  # the id the shards share (`--run-id`), else a new one
    if run_id is not None and out.has_run(run_id):
        raise UsageError(f"run {run_id} is in {display_path(out.path)} already: it was merged before")
    run_id = run_id or new_run_id()
    out.create_run(dataclasses.replace(first.run, run_id=run_id, status="running",
                                       started_at=min(p.run.started_at for p in parts), completed_at=None, passed=None),
                   first.store.run_detail(first.run.run_id, "plugin_versions") or {},
                   first.store.run_detail(first.run.run_id, "experiment_ids") or [], first.fingerprint)
    for experiment in first.store.experiments(first.run.run_id):
        for part in parts:
            out.copy_experiment(run_id, part.store, part.run.run_id, experiment.experiment_id)
    for part in parts:
        shard_runs.copy(out, run_id, part.store, part.run.run_id)
    run_tags.add(out, run_id, [tag for part in parts for tag in run_tags.of_run(part.store, part.run.run_id)])
    for part in parts:  # people may have judged a shard's items in its own store
        stored_reviews.copy_from(out, run_id, part.store, part.run.run_id)
    results = shard_runs.complete(out, run_id)
    return RunOutcome(out.find_run(run_id), tuple(results), ())
