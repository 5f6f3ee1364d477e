"""What ``yamleval run --resume`` checks before it continues a run: which unfinished run it is,
that no process still runs it, and what changed since it started; and which run and items
``--retry-errors`` starts from."""
from __future__ import annotations

from typing import Iterator

from yamleval.records.errors import UsageError
from yamleval.records.types import ItemResult, RunInfo

UNFINISHED = ("running", "interrupted", "stopped", "aborted", "crashed")  # stopped: by a budget


def resumable(db, ref: str, project, wanted: list[str] | None, force: bool) -> RunInfo:
    """The unfinished run ``ref`` names; ``latest``: the newest unfinished run whose experiments
    the config has (and that includes ``wanted``, when given)."""
    if ref != "latest":
        run = db.find_run(ref)
        if run.status not in UNFINISHED:
            raise UsageError(f"run {run.run_id} is {run.status}; only an unfinished run can be resumed")
        return _not_running(run, force)
    known = {e.id for e in project.experiments}
    for run in db.runs(limit=200):
        stored = set(db.run_detail(run.run_id, "experiment_ids") or [])
        if run.status in UNFINISHED and stored <= known and (wanted is None or set(wanted) <= stored):
            return _not_running(run, force)
    raise UsageError("no unfinished run of these experiments to resume (see `yamleval runs`); to run again the"
                     " items of a finished run that ended in error, use --retry-errors RUN")


def retried(db, ref: str, project, wanted: list[str] | None) -> tuple[RunInfo, list]:
    """The run ``ref`` names whose errored (and never run) items ``--retry-errors`` runs again, and
    the experiments it runs again: the run's own, in its order (those ``wanted``, when given)."""
    run = db.find_run(ref)
    if run.status == "running":
        raise UsageError(f"run {run.run_id} is still running: wait for it to end, then retry its errors")
    experiments = experiments_of(db, run, project, "retry the errors of")
    if wanted is not None:
        missing = [w for w in wanted if w not in {e.id for e in experiments}]
        if missing:
            raise UsageError(f"run {run.run_id} has no experiment {', '.join(repr(m) for m in missing)}"
                             f" (its experiments: {', '.join(e.id for e in experiments)})")
        experiments = [e for e in experiments if e.id in wanted]
    return run, experiments


def kept_items(db, run_id: str, experiment_id: str) -> Iterator[ItemResult]:
    """The items of a stored experiment a retry keeps: all but those that ended in error."""
    return (r for r in db.item_view(run_id, experiment_id, 0) if r.status != "error")


def forget_outage(db, run_id: str, experiment, begun, shard) -> None:
    """Before a resumed experiment goes on: when it could not be evaluated (``begun.status``
    unevaluated, or ``shard``'s part of it: an endpoint nothing answered, or one that refused
    every first call), its items that ended in error (a shard's: its own) are forgotten, so it
    runs them again as never started; an error met in an outage is no verdict on its item."""
    from yamleval.engine import shards as sharding
    from yamleval.lifecycle import shards as shard_runs
    from yamleval.store import unevaluated

    if begun is None:
        return
    if shard is None and begun.status == "unevaluated":
        unevaluated.forget_errors(db, run_id, experiment.id)
    elif shard is not None and experiment.id in shard_runs.unevaluated(db, run_id, shard):
        hashed = sharding.key(experiment)
        unevaluated.forget_errors(db, run_id, experiment.id, lambda item_id: shard.holds(hashed, item_id))


def experiments_of(db, run: RunInfo, project, doing: str = "resume") -> list:
    """A resumed run goes on with exactly its own experiments, in its own order."""
    known = {e.id: e for e in project.experiments}
    ids = db.run_detail(run.run_id, "experiment_ids") or []
    missing = [i for i in ids if i not in known]
    if missing:
        raise UsageError(f"cannot {doing} run {run.run_id}: the config no longer has experiment"
                         f" {', '.join(repr(m) for m in missing)}; {doing} it with the config it ran")
    return [known[i] for i in ids]


def _not_running(run: RunInfo, force: bool) -> RunInfo:
    """``run``, unless its own process may still be running it: two processes would run
    its items twice and store them side by side. (A run whose process is known to have died
    reads as crashed; one started on another machine cannot be checked from here.)"""
    if run.status == "running" and not force:
        from yamleval.config.provenance import host

        where = "on this machine" if run.host == host() else f"on {run.host or 'another machine'}, maybe"
        raise UsageError(f"run {run.run_id} is still running ({where}): wait for it to end or stop it, then resume;"
                         " use --force if you know its process has ended")
    return run


def changes(db, run: RunInfo, texts: dict[str, str], config_hash: str, dataset_hashes: dict[str, str], environment,
            experiments, repeats: int | None) -> list:
    """What differs from when the run started: config text (but budgets and the cache, which
    decide no answer), datasets, --repeats, environment values, plugin code."""
    from yamleval.config import fingerprint
    from yamleval.config import provenance

    problems = []
    if run.config_text.get(provenance.SETS) != texts.get(provenance.SETS):
        problems.append("its --set values changed (give the same ones to resume it)")
    elif run.config_hash != config_hash and not provenance.same_but_budgets(run.config_text, texts):
        problems.append("the config files changed")
    for stored in db.experiments(run.run_id):
        was = stored.dataset_hash
        if stored.experiment_id in dataset_hashes and was and was != dataset_hashes[stored.experiment_id]:
            problems.append(f"the dataset of '{stored.experiment_id}' changed")
    return problems + fingerprint.changes(db.run_detail(run.run_id, "fingerprint"), environment, experiments, repeats)


def replace_items(db, run_id: str, experiment_id: str, results) -> None:
    batch = []
    for result in results:
        batch.append(result)
        if len(batch) >= 500:
            db.replace_items(run_id, experiment_id, batch)
            batch = []
    if batch:
        db.replace_items(run_id, experiment_id, batch)
