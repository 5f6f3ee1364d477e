"""The shards of a stored run: which of its N shards have joined it, and which have finished.

A run split with ``--shard I/N`` is one run, whose shards write their items into it: side by
side in one shared store (``--run-id`` names it for all of them), or each into a store of its
own that ``yamleval merge`` copies into one. Each shard is a row of the ``run_shards`` table:
``running`` while it runs, then ``completed`` (or ``interrupted``, ``stopped`` by a budget). The
run stays ``running`` until every shard has completed; then whoever completes it last (a shard,
or the merge) counts each experiment's summary from all its items, judges its criteria on
them and stores the run's verdict, so that it is the run unsharded's.
"""
from __future__ import annotations

import dataclasses
import json

from yamleval.analysis.verdict import judged, run_passed
from yamleval.lifecycle.stored import finished_experiment
from yamleval.analysis import criteria
from yamleval.analysis.aggregate import recount
from yamleval.records.errors import UsageError
from yamleval.store import shards as stored_shards
from yamleval.engine.shards import Shard
from yamleval.records.types import ExperimentResult, Throttling


def of_run(store, run_id: str) -> dict[int, tuple[int, str]]:
    """The run's shards: by number, (how many shards the run has, status). Empty for a run not split."""
    return {number: (count, status) for number, (count, status, *_) in _rows(store, run_id).items()}


def _rows(store, run_id: str) -> dict[int, tuple]:
    return stored_shards.of_run(store, run_id)


def joined(store, run_id: str, shard: Shard, project):
    """The run that ``shard`` joins (``--run-id`` of a run other shards have started): one split
    in as many shards, of the same config; UsageError else."""
    from yamleval.config import fingerprint
    from yamleval.config import provenance

    run = store.find_run(run_id)
    count = fingerprint.shards(store.run_detail(run_id, "fingerprint"))
    if count is None:
        raise UsageError(f"run {run_id} is in {store.path} already, and not split into shards: give another --run-id")
    if count != shard.count:
        raise UsageError(f"run {run_id} is split into {count} shards, not {shard.count}: give --shard I/{count}")
    if run.config_hash != provenance.config_hash(provenance.config_texts(project.files, project.sets)):
        raise UsageError(f"run {run_id} runs another config than this shard's: its shards must run the same config;"
                         " give another --run-id")
    return run


def same_work(store, run_id: str, shard: Shard, experiments, dataset_hashes: dict[str, str], repeats: int | None,
              joining: bool) -> None:
    """UsageError (exit 2) unless ``shard`` runs what the run's other shards run, as ``merge``
    checks shards stored apart: the same datasets, and when it ``joining`` the run, the same plugin
    code and ``--repeats``. Checked against what the run's first shard recorded as it made the
    run, so an experiment no shard has started yet counts too; ``--force`` never mixes datasets."""
    from yamleval.config import fingerprint

    stored = store.run_detail(run_id, "fingerprint") or {}
    datasets = {e.experiment_id: e.dataset_hash for e in store.experiments(run_id)}
    datasets.update(stored.get("datasets") or {})
    problems = [(f"another dataset for '{eid}'", digest[:12], datasets[eid][:12])
                for eid, digest in dataset_hashes.items() if datasets.get(eid) not in (None, digest)]
    if joining:
        plugins = fingerprint.plugin_sources(experiments)
        if stored.get("plugins") is not None and plugins != stored["plugins"]:
            changed = sorted(ref for ref in plugins.keys() | stored["plugins"].keys()
                             if plugins.get(ref) != stored["plugins"].get(ref))
            problems.append(("other plugin code", ", ".join(changed), "the run's"))
        if stored.get("repeats") != repeats:
            problems.append(("other --repeats", repeats, stored.get("repeats")))
    if problems:
        what, mine, theirs = problems[0]
        raise UsageError(f"shard {shard} runs {what} than the shards of run {run_id}: {mine} against {theirs};"
                         " every shard of a run must run the same config, plugins and datasets (give another"
                         " --run-id to start a new run)")


def resumed_as(store, run_id: str, shard: Shard | None, force: bool) -> None:
    """A resumed run of shards is resumed one shard at a time, ``shard``: one not completed,
    whose process has ended (unless ``force``); a run not split is resumed without ``--shard``."""
    from yamleval.plugins.processes import running
    from yamleval.config.provenance import host

    rows = _rows(store, run_id)
    if not rows and shard is None:
        return
    if shard is None:
        raise UsageError(f"run {run_id} is split into shards: resume one of them with --shard I/"
                         f"{next(iter(rows.values()))[0]}")
    if not rows:
        raise UsageError(f"cannot resume run {run_id} as shard {shard}: it is a whole run, not split into shards;"
                         " resume it without --shard")
    if shard.number not in rows or rows[shard.number][0] != shard.count:
        raise UsageError(f"run {run_id} has no shard {shard}: run it with --shard {shard} --run-id {run_id}")
    count, status, pid, where, _ = rows[shard.number]
    if status == "completed":
        raise UsageError(f"shard {shard} of run {run_id} is completed; only an unfinished shard can be resumed")
    if status == "running" and not force and (where != host() or pid is None or running(pid)):
        raise UsageError(f"shard {shard} of run {run_id} is still running: wait for it to end or stop it, then"
                         " resume; use --force if you know its process has ended")


def start(store, run_id: str, shard: Shard, joining: bool) -> None:
    """``shard`` starts (``joining``) or goes on with its part of the run, in this process."""
    import os

    from yamleval.config.provenance import host

    if joining:
        if not stored_shards.join(store, run_id, shard.number, shard.count, os.getpid(), host()):
            status = of_run(store, run_id)[shard.number][1]
            if status == "completed":
                raise UsageError(f"shard {shard} of run {run_id} is stored already, completed: nothing is left to"
                                 f" run; start a new run with another --run-id, or gate on this one"
                                 f" (`yamleval report {run_id} --gate`)")
            raise UsageError(f"shard {shard} of run {run_id} is stored already ({status}): continue it with"
                             f" --resume {run_id} --shard {shard}")
    else:
        stored_shards.restart(store, run_id, shard.number, os.getpid(), host())


def _part(result: ExperimentResult, breakdowns) -> list:
    """What a shard's part of an experiment tells that its items do not, the fields its figures
    are broken down by (None: the default), and whether it could not be evaluated (an outage)."""
    t = result.summary.throttling
    return [result.summary.duration_ms, t.calls, t.throttled, t.waited_seconds, result.started_at,
            result.completed_at, list(result.warnings), None if breakdowns is None else list(breakdowns),
            result.could_not_evaluate]


def unevaluated(store, run_id: str, shard: Shard) -> set[str]:
    """The experiments whose part ``shard`` could not evaluate when it last ended, by id."""
    *_, written = _rows(store, run_id).get(shard.number, (None,))
    return {experiment_id for experiment_id, part in json.loads(written or "{}").items() if len(part) > 8 and part[8]}


def copy(store, run_id: str, source, source_run_id: str) -> None:
    """The shards of ``source``'s run, as this store's run ``run_id``'s (``yamleval merge``)."""
    stored_shards.copy(store, run_id, _rows(source, source_run_id))


def missing(store, run_id: str) -> list[str]:
    """The shards of the run that have not completed, each ``I/N``, and how it ended when it has
    (``1/2 (aborted)``): none when the run is whole."""
    found = of_run(store, run_id)
    if not found:
        return []
    count = next(iter(found.values()))[0]
    status = {n: found[n][1] for n in found}
    return [f"{n}/{count}" + (f" ({status[n]})" if status.get(n) not in (None, "running") else "")
            for n in range(1, count + 1) if status.get(n) != "completed"]


def finish(store, run_id: str, shard: Shard, status: str, results: list[ExperimentResult],
           breakdowns: dict) -> list[ExperimentResult] | None:
    """``shard`` ends its part of the run as ``status``, with its experiments' ``results`` (and
    their ``breakdowns`` fields, by id); the run's results if that completed it."""
    parts = json.dumps({r.experiment_id: _part(r, breakdowns.get(r.experiment_id)) for r in results})
    stored_shards.finish(store, run_id, shard.number, status, parts)
    return complete(store, run_id) if status == "completed" else None


def complete(store, run_id: str) -> list[ExperimentResult] | None:
    """When every shard of the run has completed: each experiment counted from all its stored
    items and stored finished, then the run with its verdict; the experiments' results. None
    while a shard has not. Its duration is its longest shard's; its calls and waits add up."""
    if missing(store, run_id):
        return None
    parts: dict[str, list] = {}
    for *_, written in _rows(store, run_id).values():
        for experiment_id, part in json.loads(written or "{}").items():
            parts.setdefault(experiment_id, []).append(part)
    results = [finished_experiment(store, run_id, _counted(store, run_id, stored, parts.get(stored.experiment_id, [])))
               for stored in store.results(run_id)]
    store.finish_run(run_id, "completed", run_passed(results), max(r.completed_at or "" for r in results))
    return results


def _counted(store, run_id: str, stored: ExperimentResult, parts: list[list]) -> ExperimentResult:
    items = store.item_view(run_id, stored.experiment_id, 0)
    fields = next((p[7] for p in parts if len(p) > 7), None)
    summary = criteria.with_criteria(recount(stored.summary, items, fields), stored.summary.criteria)
    summary = dataclasses.replace(summary, duration_ms=max((p[0] for p in parts), default=0.0),
                                  throttling=Throttling(sum(p[1] for p in parts), sum(p[2] for p in parts),
                                                        sum(p[3] for p in parts)))
    return judged(dataclasses.replace(
        stored, summary=summary, incomplete=False,
        started_at=min((p[4] for p in parts if p[4]), default=stored.started_at),
        completed_at=max((p[5] for p in parts if p[5]), default=stored.completed_at),
        warnings=tuple(dict.fromkeys(w for p in parts for w in p[6]))))
