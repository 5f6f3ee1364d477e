"""A stored run from start to end: open the store, resume when asked, run each experiment
with every item stored as it finishes, write the reports, record how the run ended.

The command line and the Python API both run through ``run_project``; the command line
only maps its options onto it, and its outcome onto output and an exit code.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import threading
import time
from typing import Sequence

from yamleval import __version__
from yamleval.records.errors import UsageError, display_path
from yamleval.records.outcome import ReportsInterrupted, RunOutcome, RunWatcher  # noqa: F401  (the lifecycle's types)
from yamleval.records.types import CacheUse, ExperimentResult, RunInfo, StoredExperiment, now
from yamleval.lifecycle.outputs import Outputs, open_outputs, write_reports_then_finish
from yamleval.analysis import reviewed
from yamleval.analysis.verdict import run_passed, run_status
from yamleval.lifecycle.stored import new_run_id, store_experiment
from yamleval.store import reviews as stored_reviews



def _unknown(what: str, name: str, known: Sequence[str]) -> UsageError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else f" ({what}s: {', '.join(known) or 'none'})"
    return UsageError(f"no {what} with id '{name}'{hint}")


def select_experiments(project, wanted: Sequence[str], variants: Sequence[str] = ()) -> list:
    """The experiments of ``project`` with these ids, in the order given (all, if none given); an
    experiment with variants stands for all of them, or for those named in ``variants``."""
    from yamleval.config.variants import parents

    grouped = parents(list(project.experiments))
    for name in wanted:
        if name not in grouped:
            raise _unknown("experiment", name, list(grouped))
    chosen = [e for name in dict.fromkeys(wanted or grouped) for e in grouped[name]]
    if not variants:
        return chosen
    known = [e.variant.id for e in chosen if e.variant is not None]
    for name in variants:
        if name not in known:
            raise _unknown("variant", name, list(dict.fromkeys(known)))
    return [e for e in chosen if e.variant is None or e.variant.id in variants]


def run_project(project, experiments: Sequence | None = None, *, store: str | None = None,
                report_dir: str | None = None, formats: Sequence[str] | None = None, resume: str | None = None,
                force: bool = False, limit: int | None = None, concurrency: int | None = None,
                stop: threading.Event | None = None, abandon: threading.Event | None = None,
                watcher: RunWatcher | None = None, repeats: int | None = None, tags: Sequence[str] = (),
                cache: bool | None = None, refresh_cache: bool = False, shard=None,
                run_id: str | None = None, executor: str | None = None, ray_address: str | None = None,
                retry_errors: str | None = None) -> RunOutcome:
    """Run ``experiments`` (default: all) of a loaded ``project`` as one stored run.

    ``store``: the results database (default: the project's ``store:``, else
    .yamleval/results.db). ``report_dir`` and ``formats`` default to the project's
    ``reports:``. ``resume``: a run id (or ``latest``) to continue; its finished items are
    kept. ``force``: resume although the config or a dataset changed, or the run looks
    alive. ``stop`` set: start no new items; ``abandon`` set: stop waiting for running ones.
    ``repeats``: how many times each item runs, whatever the experiments say. ``tags``: names
    the run is tagged with (yamleval.store.tags), so later runs can find it as their baseline.
    ``cache``: True keeps the runners' answers too, False keeps no answer (``yamleval.cache.answers``);
    ``refresh_cache``: read no kept answer. ``shard`` (a ``sharding.Shard``): run only that
    shard's items, as its part of a run split over several jobs (``yamleval.lifecycle.shards``); given
    with a ``run_id`` another shard has started in this store, it joins that run; with ``resume``
    it goes on with that shard. ``run_id``: the id of a new run (default: made from the time).
    ``executor`` (``local`` or ``ray``) and ``ray_address`` (which implies ``ray``): where every
    experiment's items run, whatever the experiments say; a run on Ray connects before it is
    stored, and lets the cluster go at its end (``ray_executor``). ``retry_errors``: a run (id,
    tag or prefix) whose experiments a new run goes through again, keeping each item that ended
    without an error and running those that errored or never ran (``force``: although the config
    or a dataset changed since, the kept items then scored again as the config now says).
    The project's ``budget`` spans the run, the earlier sessions of a resumed one included (but
    for ``max_duration``, which counts this call's time); each experiment's spans the experiment.
    A config error raises ConfigError before anything is stored.
    """
    from yamleval.config import fingerprint
    from yamleval.engine import plan
    from yamleval.config import provenance
    from yamleval.store import tags as run_tags
    from yamleval.lifecycle import shards as shard_runs
    from yamleval.engine import shards as sharding
    from yamleval.lifecycle.resume import changes, experiments_of, kept_items, resumable, retried
    from yamleval.executors import choice

    if run_id is not None:
        sharding.check_run_id(run_id, resume)
    if retry_errors is not None and (resume is not None or shard is not None):
        raise UsageError(f"--retry-errors starts a new run: it takes no {'--resume' if resume else '--shard'}")
    watcher = watcher or RunWatcher()
    began = time.perf_counter()
    stop = stop or threading.Event()
    out = open_outputs(project, store, report_dir, formats, tags)
    db = out.store
    cluster = origin = None
    try:
        if resume:
            wanted = None if experiments is None else [e.id for e in experiments]
            run_info = resumable(db, resume, project, wanted, force or shard is not None)  # a shard: its own process
            experiments = experiments_of(db, run_info, project)
            shard_runs.resumed_as(db, run_info.run_id, shard, force)
        elif shard is not None and run_id is not None and db.has_run(run_id):  # a shard joins the others' run
            run_info = shard_runs.joined(db, run_id, shard, project)
            experiments = experiments_of(db, run_info, project)
        else:
            run_info = None
            if retry_errors is not None:
                origin, experiments = retried(db, retry_errors, project,
                                              None if experiments is None else [e.id for e in experiments])
            experiments = list(project.experiments if experiments is None else experiments)
            git = git_state(project)
        started_as = run_info or origin
        if started_as is not None and repeats is None:  # as the run was started: its --repeats, if any
            repeats = fingerprint.repeats(db.run_detail(started_as.run_id, "fingerprint"))
        if repeats is not None:
            experiments = [dataclasses.replace(e, repeats=repeats) for e in experiments]
        experiments = [dataclasses.replace(e, cache=cached(e.cache, cache, refresh_cache),
                                           executor=placed(e.executor, executor, ray_address)) for e in experiments]
        prepared = [plan.prepare(e) for e in experiments]
        cluster = clusters(experiments)
        executors = choice.on(cluster)  # where each experiment runs, with the run's network
        dataset_hashes = {e.id: provenance.dataset_hash(e) for e in experiments}
        begun, rescore = {}, False
        if started_as is not None:  # what changed since the run this one goes on from (or retries) started
            texts = provenance.config_texts(project.files, project.sets)
            config_hash = provenance.config_hash(texts)
            changed = changes(db, started_as, texts, config_hash, dataset_hashes, project.environment, experiments,
                              repeats)
        if run_info is not None:
            run_id = run_info.run_id
            if shard is not None:  # its other shards' run: the same datasets (and, joining, plugins) or none
                shard_runs.same_work(db, run_id, shard, experiments, dataset_hashes, repeats, joining=not resume)
            if changed and not force and not resume:  # a shard joining the run
                raise UsageError(f"cannot join run {run_id} as shard {shard}: {'; '.join(changed)} since its first"
                                 " shard started (use --force to join anyway, or give another --run-id)")
            if changed and not force:
                raise UsageError(f"cannot resume run {run_id}: {'; '.join(changed)} since it started (use --force to"
                                 " resume anyway, its finished items scored again as the config now says, or run"
                                 " afresh without --resume)")
            rescore = bool(changed)
            if rescore or config_hash != run_info.config_hash:  # it goes on under today's config (budgets, maybe)
                db.record_config(run_id, config_hash, texts, provenance.plugin_versions(experiments, __version__),
                                 fingerprint.fingerprint(project.environment, experiments, repeats=repeats,
                                                         shards=None if shard is None else shard.count,
                                                         datasets=dataset_hashes))
            begun = {stored.experiment_id: stored for stored in db.experiments(run_id)}
            if shard is None:
                db.reopen_run(run_id)
            else:
                shard_runs.start(db, run_id, shard, joining=not resume)
        else:
            if origin is not None:  # the items it keeps were answered under its config
                if changed and not force:
                    raise UsageError(f"cannot retry the errors of run {origin.run_id}: {'; '.join(changed)} since it"
                                     " started (use --force to retry anyway, its kept items scored again as the"
                                     " config now says, or run afresh)")
                rescore = bool(changed)
            if run_id is not None and shard is None and db.has_run(run_id):
                raise UsageError(f"run {run_id} is in {display_path(db.path)} already: continue it with --resume {run_id},"
                                 " or give another --run-id")
            run_id = new_run(db, project, experiments, git, repeats, run_id=run_id, shard=shard,
                             datasets=dataset_hashes, retried_from=None if origin is None else origin.run_id)
            if origin is not None:  # the items it keeps, people may have judged
                stored_reviews.copy(db, origin.run_id, run_id)
            if shard is not None:
                shard_runs.joined(db, run_id, shard, project)  # another shard may have made it meanwhile
                shard_runs.same_work(db, run_id, shard, experiments, dataset_hashes, repeats, joining=True)
                shard_runs.start(db, run_id, shard, joining=True)
        run_tags.add(db, run_id, out.tags)
        watcher.run_started(run_id, bool(resume))
        completed = set() if rescore else {eid for eid, stored in begun.items() if stored.status == "completed"}
        stored_results = {r.experiment_id: r for r in reviewed.results(db, run_id, completed)} if completed else {}
        results = []
        for position, ready in enumerate(prepared):
            experiment_id = ready.experiment.id
            ready = plan.with_baseline(ready, experiments, lambda stored_id: db.item_view(run_id, stored_id, 0).find)
            if stop.is_set():
                break
            if experiment_id in stored_results:
                result = stored_results[experiment_id]
            else:
                watcher.experiment_started(experiment_id)
                kept = None if origin is None else kept_items(db, origin.run_id, experiment_id)
                result = _run_experiment(db, run_id, position, ready, begun.get(experiment_id), rescore,
                                         dataset_hashes[experiment_id], limit, concurrency, stop, abandon, watcher,
                                         _limits(project, ready.experiment, _spent_by(db, run_id, shard, project, results),
                                                 time.perf_counter() - began), shard,
                                         executors, kept)
            results.append(result)
            watcher.experiment_finished(result)
            if result.could_not_evaluate:  # the endpoint is likely another experiment's too: the run stops here
                break
        return finish_run(out, run_id, results, len(prepared), stop, watcher, shard,
                          {e.id: e.breakdowns for e in experiments})
    except BaseException:  # a failure stops the run: nothing more is written, the database is let go
        db.abandon()
        raise
    finally:
        if cluster is not None:
            cluster.close()


def placed(settings, executor: str | None, ray_address: str | None):
    """An experiment's ``executor:`` as ``--executor`` and ``--ray-address`` change it."""
    if ray_address is not None or executor == "ray":
        from yamleval.executors import ray as ray_executor

        if not ray_executor.installed():
            raise UsageError(f"--executor ray needs Ray, which is not installed: {ray_executor.INSTALL}")
    if ray_address is not None:
        return dataclasses.replace(settings, uses="ray", address=ray_address)
    if executor is not None and executor != settings.uses:
        return dataclasses.replace(settings, uses=executor)
    return settings


def clusters(experiments: Sequence):
    """The run's connection to Ray when an experiment runs there (``ray_executor.start``), else None."""
    if not any(e.executor.uses == "ray" for e in experiments):
        return None
    from yamleval.executors import ray as ray_executor

    return ray_executor.start(experiments)


def git_state(project):
    """The git commit of the project's folder, read in the background (``provenance.GitState``)."""
    from yamleval.config import provenance

    return provenance.GitState(os.path.dirname(os.path.abspath(project.files[0])) if project.files else ".")


def new_run(db, project, experiments: Sequence, git, repeats: int | None, rescored_from: str | None = None,
            run_id: str | None = None, shard=None, datasets: dict[str, str] | None = None,
            retried_from: str | None = None) -> str:
    """A new run of ``experiments`` stored as running, with what it runs under: its id
    (``run_id``, else one made from the time). The first ``shard`` of a run makes it; one
    started at the same moment with the same ``run_id`` finds it made."""
    from yamleval.config import fingerprint
    from yamleval.config import provenance

    run_id = run_id or new_run_id()
    texts = provenance.config_texts(project.files, project.sets)
    commit, dirty = git.result()
    db.create_run(RunInfo(
        run_id=run_id, status="running", started_at=now(), yamleval_version=__version__,
        python_version=provenance.python_version(), host=provenance.host(), config_files=tuple(project.files),
        config_hash=provenance.config_hash(texts), git_commit=commit, git_dirty=dirty, config_text=texts,
        rescored_from=rescored_from, retried_from=retried_from,
    ), provenance.plugin_versions(experiments, __version__), [e.id for e in experiments],
        fingerprint.fingerprint(project.environment, experiments, repeats=repeats,
                                shards=None if shard is None else shard.count, datasets=datasets),
        if_absent=shard is not None)
    return run_id


def finish_run(out: Outputs, run_id: str, results: list[ExperimentResult], planned: int, stop: threading.Event,
               watcher: RunWatcher, shard=None, breakdowns=None) -> RunOutcome:
    """The run's verdict (passed: all ``planned`` experiments ran and passed), its reports, its end
    stored. A ``shard`` ends its part; its reports are the run's as far as it is stored, whole
    (with the run's verdict) when this shard completed it."""
    from yamleval.lifecycle import shards as shard_runs

    interrupted = stop.is_set()
    if shard is None:  # reviews of an experiment given while a later one ran count in the run's verdict too
        results = reviewed.applied(out.store, run_id, results)
        reviewed.keep(out.store, run_id, results)
    own = tuple(results) if shard is not None else ()
    passed = run_passed(results, planned, interrupted)
    status = run_status(results, interrupted, planned)
    run_info = dataclasses.replace(out.store.find_run(run_id), status=status, passed=passed, completed_at=now())
    if shard is not None:
        whole = shard_runs.finish(out.store, run_id, shard, status, results, breakdowns or {})
        run_info = out.store.find_run(run_id)
        results = whole or reviewed.results(out.store, run_id)
    watcher.run_finished(results)
    watcher.writing_reports()
    written = write_reports_then_finish(out.store, out.report_dir, out.formats, run_info, results, shard is None)
    return RunOutcome(run_info, tuple(results), tuple(written), shard, status, own)


def cached(settings, wanted: bool | None, refresh: bool):
    """An experiment's ``cache:`` as ``--cache``/``--no-cache`` and ``--refresh-cache`` change it."""
    if wanted is not None:
        settings = dataclasses.replace(settings, runner=wanted, judges=settings.judges and wanted)
    return dataclasses.replace(settings, refresh=refresh) if refresh else settings


def _run_experiment(db, run_id: str, position: int, ready, begun: StoredExperiment | None, rescore: bool,
                    dataset_hash: str, limit, concurrency, stop: threading.Event, abandon, watcher: RunWatcher, limits,
                    shard, executors, kept=None) -> ExperimentResult:
    """One experiment, its items stored as they finish; resumed where it was ``begun`` before
    (its finished items scored again first, with ``rescore``; its duration counts the time its
    items ran then, as far as it was stored), or begun with the items another
    run ``kept`` (``--retry-errors``: stored in this run as they are read, scored again with
    ``rescore``)."""
    from yamleval.engine import experiment as engine
    from yamleval.engine import plan
    from yamleval.engine import shards as sharding
    from yamleval.store import repeats as stored_repeats
    from yamleval.lifecycle.resume import replace_items

    experiment_id = ready.experiment.id
    previous = db.item_view(run_id, experiment_id, 0) if begun else ()  # read as it goes
    partial = stored_repeats.unfinished(db, run_id, experiment_id) if begun and ready.experiment.repeats > 1 else {}
    if shard is not None:  # the other shards' items are theirs
        hashed = sharding.key(ready.experiment)
        previous = (r for r in previous if shard.holds(hashed, r.item.id))
        partial = {item_id: done for item_id, done in partial.items() if shard.holds(hashed, item_id)}
    if begun and rescore:
        with plan.importable(ready.experiment):
            replace_items(db, run_id, experiment_id, engine.rescored(ready, previous))
            partial = {item_id: dict(zip(done, engine.rescored(ready, done.values())))
                       for item_id, done in partial.items()}

    def run(keeper) -> ExperimentResult:
        if kept is None:
            done = _counted(watcher, experiment_id, previous)
        else:
            done = _stored_as_read(keeper, engine.rescored(ready, kept) if rescore else kept)
        result = engine.run_experiment(
            ready, executor=executors, concurrency=concurrency, limit=limit, on_item=keeper.item,
            on_progress=lambda completed, total: watcher.progress(experiment_id, completed, total),
            stop=stop, abandon=abandon, previous=done, keep_items=False, partial=partial,
            on_repeat=keeper.repeat, budgets=limits, shard=shard,
            on_planned=lambda count: db.plan_experiment(run_id, experiment_id, count))
        if not begun or not begun.duration_ms or shard is not None:  # a shard's time is its own (shards.complete)
            return result
        return dataclasses.replace(result, summary=dataclasses.replace(
            result.summary, duration_ms=result.summary.duration_ms + begun.duration_ms))

    return store_experiment(db, run_id, position, ready, dataset_hash, stop, watcher, run, shared=shard is not None)


def _stored_as_read(keeper, results):
    """Each of ``results`` stored (by ``keeper``) as the engine reads it."""
    for result in results:
        keeper.item(result, kept=True)
        yield result


def _counted(watcher: RunWatcher, experiment_id: str, results):
    """Each of the items a resumed run had finished, told to ``watcher`` as the engine reads it."""
    for result in results:
        watcher.item_kept(experiment_id, result)
        yield result


def _spent_by(db, run_id: str, shard, project, results: Sequence[ExperimentResult]) -> Sequence[ExperimentResult]:
    """What the run has spent before an experiment starts: its experiments so far, and for a shard
    what every shard of the run has stored (shards in one store share the run's budget)."""
    return results if shard is None or project.budget is None else reviewed.results(db, run_id)


def _limits(project, experiment, results: Sequence[ExperimentResult], seconds: float) -> list:
    """The budgets ``experiment`` runs under: its own, and the run's against what the experiments
    before it spent (and the ``seconds`` this call has taken)."""
    from yamleval.engine import budget

    limits = [budget.Limit(experiment.budget)] if experiment.budget is not None else []
    if project.budget is not None:
        usages = [usage for r in results for usage in (r.summary.tokens, r.summary.judge_tokens)]
        saved = sum((r.summary.cache for r in results), CacheUse())
        limits.append(budget.Limit(project.budget, "the run's", budget.spent(usages, seconds, saved)))
    return limits
