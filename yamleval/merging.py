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
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from yamleval import baseline, criteria, fingerprint, postgres, sharding
from yamleval.aggregate import recount
from yamleval.errors import UsageError, display_path
from yamleval.runs import RunOutcome, now
from yamleval.sharding import Shard
from yamleval.store import Store
from yamleval.types import ExperimentResult, RunInfo, Throttling


@dataclass(frozen=True)
class _Part:
    """One shard's store and the shard run in it."""

    path: str
    store: Store
    run: RunInfo
    shard: Shard
    fingerprint: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{display_path(self.path)} (shard {self.shard})"


def merge(out_path: str, paths: Sequence[str]) -> RunOutcome:
    """Merge the shard stores at ``paths`` into one run stored in ``out_path``: its outcome.
    UsageError (nothing stored) when they are not every shard of one run, each finished."""
    if not paths:
        raise UsageError("give the results database of every shard to merge")
    for path in paths:
        if os.path.exists(out_path) and os.path.exists(path) and os.path.samefile(out_path, path):
            raise UsageError(f"{display_path(out_path)} is one of the shards: merge into another file")
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
    if not postgres.is_url(path) and not os.path.isfile(path):
        raise UsageError(f"no results database at {display_path(path)}")
    store = Store(path)
    for run in store.runs(1000):
        stored = store.run_detail(run.run_id, "fingerprint") or {}
        shard = sharding.stored(fingerprint.shard(stored))
        if shard is not None:
            return _Part(path, store, run, shard, stored)
    store.close()
    raise UsageError(f"{display_path(path)} holds no shard's run (`yamleval run --shard I/N` stores one)")


def _check(parts: list[_Part]) -> None:
    """Every shard of one split, each once, of one config, each run to its end."""
    first = parts[0]
    for part in parts[1:]:
        if part.shard.count != first.shard.count:
            raise UsageError(f"the shards were split differently: {first.name}, {part.name}; merge the shards of"
                             " one run")
    seen: dict[int, _Part] = {}
    for part in parts:
        if part.shard.number in seen:
            raise UsageError(f"{seen[part.shard.number].name} and {part.name} are the same shard: merge each"
                             " shard's store once")
        seen[part.shard.number] = part
    missing = [f"{n}/{first.shard.count}" for n in range(1, first.shard.count + 1) if n not in seen]
    if missing:
        raise UsageError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} {'are' if len(missing) > 1 else 'is'}"
                         " missing: merge the stores of every shard")
    for part in parts:
        if part.run.status != "completed":
            raise UsageError(f"{part.name}: run {part.run.run_id} is {part.run.status}, not finished; resume it"
                             f" (`yamleval run --resume {part.run.run_id} --store {display_path(part.path)}`),"
                             " then merge")
        unfinished = [e.experiment_id for e in part.store.experiments(part.run.run_id) if e.status != "completed"]
        if unfinished:
            raise UsageError(f"{part.name}: experiment '{unfinished[0]}' did not finish ({_status(part, unfinished[0])});"
                             " run that shard again, then merge")
        for what, mine, theirs in _differences(first, part):
            raise UsageError(f"{part.name} ran {what} than {first.name}: {mine} against {theirs}; the shards must run"
                             " the same config")


def _status(part: _Part, experiment_id: str) -> str:
    return next(e.status for e in part.store.experiments(part.run.run_id) if e.experiment_id == experiment_id)


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
    parts = sorted(parts, key=lambda p: p.shard.number)
    first = parts[0]
    ids = {p.run.run_id for p in parts}
    run_id = ids.pop() if len(ids) == 1 else None  # the id the shards share (`--run-id`), else a new one
    if run_id is not None and out.has_run(run_id):
        raise UsageError(f"run {run_id} is in {display_path(out.path)} already: it was merged before")
    run_id = run_id or datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]
    started = min(p.run.started_at for p in parts)
    shared = {key: value for key, value in first.fingerprint.items() if key != "shard"}
    out.create_run(dataclasses.replace(first.run, run_id=run_id, status="running", started_at=started,
                                       completed_at=None, passed=None),
                   first.store.run_detail(first.run.run_id, "plugin_versions") or {},
                   first.store.run_detail(first.run.run_id, "experiment_ids") or [], shared)
    results = []
    for experiment in first.store.experiments(first.run.run_id):
        for part in parts:
            out.copy_experiment(run_id, part.store, part.run.run_id, experiment.experiment_id)
        shards = [p.store.results(p.run.run_id, {experiment.experiment_id})[0] for p in parts]
        result = baseline.judge(out, run_id, _experiment(out, run_id, shards))
        out.finish_experiment(run_id, result)
        results.append(dataclasses.replace(result, items=out.item_view(run_id, result.experiment_id,
                                                                         result.summary.completed)))
    passed = all(r.passed for r in results)
    completed = max((p.run.completed_at or now()) for p in parts)
    out.finish_run(run_id, "completed", passed, completed)
    return RunOutcome(out.find_run(run_id), tuple(results), ())


def _experiment(out: Store, run_id: str, shards: list[ExperimentResult]) -> ExperimentResult:
    """One experiment's result counted from all its shards' items, now in ``out``."""
    base = shards[0]
    items = out.item_view(run_id, base.experiment_id, 0)
    summary = criteria.with_criteria(recount(base.summary, items), base.summary.criteria)
    throttling = Throttling(sum(s.summary.throttling.calls for s in shards),
                            sum(s.summary.throttling.throttled for s in shards),
                            sum(s.summary.throttling.waited_seconds for s in shards))
    summary = dataclasses.replace(summary, duration_ms=max(s.summary.duration_ms for s in shards),
                                  throttling=throttling)
    return dataclasses.replace(
        base, summary=summary, passed=criteria.verdict(summary, bool(summary.criteria)),
        started_at=min(s.started_at for s in shards if s.started_at),
        completed_at=max(s.completed_at for s in shards if s.completed_at),
        warnings=tuple(dict.fromkeys(w for s in shards for w in s.warnings)))
