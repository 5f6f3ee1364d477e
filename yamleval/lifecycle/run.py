"""A stored run from start to end, as ``yamleval run`` asks: a new run, one resumed, a shard
joining its run, or the errors of a run retried are ways to make a ``Run`` (``lifecycle.ongoing``),
which then runs each experiment with every item stored as it finishes, writes the reports and
records how the run ended.

The command line and the Python API both run through ``run_project``; the command line
only maps its options onto ``RunOptions``, and its outcome onto output and an exit code.
"""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import threading
from dataclasses import dataclass
from typing import Sequence

from yamleval.records.version import __version__
from yamleval.lifecycle.from_datasets import FromDatasets
from yamleval.lifecycle.ongoing import Controls, Origin, Run, Work, finish_run, git_state, new_run  # noqa: F401
from yamleval.lifecycle.outputs import Outputs, open_outputs
from yamleval.records.errors import UsageError, display_path
from yamleval.records.options import RunOptions
from yamleval.records.outcome import ReportsInterrupted, RunOutcome, RunWatcher  # noqa: F401  (the lifecycle's types)
from yamleval.records.types import RunInfo
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


def run_project(project, options: RunOptions | None = None, *, stop: threading.Event | None = None,
                abandon: threading.Event | None = None, watcher: RunWatcher | None = None, **given) -> RunOutcome:
    """Run a loaded ``project`` as one stored run, as ``options`` say (``RunOptions``; its fields
    may be given as keyword arguments instead, or on top of it).

    The store defaults to the project's ``store:``, else .yamleval/results.db; the reports to its
    ``reports:``. ``resume`` continues a run, its finished items kept; ``shard`` with a ``run_id``
    another shard has started in this store joins that run; ``retry_errors`` starts a new run
    that keeps the items of a stored run that ended without an error. ``stop`` set: start no new
    items; ``abandon`` set: stop waiting for running ones; ``watcher`` hears how the run goes.
    The project's ``budget`` spans the run, the earlier sessions of a resumed one included (but
    for ``max_duration``, which counts this call's time); each experiment's spans the experiment.
    A config error raises ConfigError before anything is stored.
    """
    from yamleval.engine import shards as sharding

    controls = Controls.of(stop, abandon, watcher)
    options = (options or RunOptions()).replaced(**given)
    if options.run_id is not None:
        sharding.check_run_id(options.run_id, options.resume)
    if options.retry_errors is not None and (options.resume is not None or options.shard is not None):
        raise UsageError(f"--retry-errors starts a new run: it takes no {'--resume' if options.resume else '--shard'}")
    chosen = (None if not options.experiments and not options.variants else
              tuple(select_experiments(project, options.experiments, options.variants)))
    asked = Asked(project, options, controls,
                  None if options.shard is None else sharding.parse(options.shard), chosen)
    out = open_outputs(project, options.store, options.report_dir, _formats(project, options), options.tags)
    try:
        run = _made(asked, out)
    except BaseException:  # nothing more is written, the database is let go
        out.store.abandon()
        raise
    return run.go()


@dataclass(frozen=True)
class Asked:
    """What the caller asked of a run: the ``project``, its ``options``, its ``controls``, the
    ``shard`` parsed from the options and the experiments ``chosen`` by them (None: all)."""

    project: object
    options: RunOptions
    controls: Controls
    shard: object = None
    chosen: tuple | None = None


def _formats(project, options: RunOptions):
    """The report formats the options name (with their ``--junit-family``), else None: the project's."""
    if options.junit_family is None:
        return options.formats
    from yamleval.config.loader import with_junit_family

    return with_junit_family(project.report_formats if options.formats is None else options.formats,
                             options.junit_family)


def _made(asked: Asked, out: Outputs) -> Run:
    """The run the options ask for: resumed, a shard joining its run, errors retried, or new."""
    options, db = asked.options, out.store
    if options.resume:
        return resumed(asked, out)
    if asked.shard is not None and options.run_id is not None and db.has_run(options.run_id):
        return joined(asked, out)
    if options.retry_errors is not None:
        return retrying(asked, out)
    return new(asked, out)


def resumed(asked: Asked, out: Outputs) -> Run:
    """An unfinished run (``--resume``) going on: its finished items kept."""
    from yamleval.lifecycle import shards as shard_runs
    from yamleval.lifecycle.resume import experiments_of, resumable

    db, options = out.store, asked.options
    wanted = None if asked.chosen is None else [e.id for e in asked.chosen]
    # a shard is a process of its own: another shard running the run is no reason to refuse
    info = resumable(db, options.resume, asked.project, wanted, options.force or asked.shard is not None)
    experiments = experiments_of(db, info, asked.project)
    shard_runs.resumed_as(db, info.run_id, asked.shard, options.force)
    run = _continued(asked, out, info, experiments, joining=False)
    run.resumed = True
    return run


def joined(asked: Asked, out: Outputs) -> Run:
    """A shard joining the run another shard of it has started in this store (``--shard`` with ``--run-id``)."""
    from yamleval.lifecycle import shards as shard_runs
    from yamleval.lifecycle.resume import experiments_of

    info = shard_runs.joined(out.store, asked.options.run_id, asked.shard, asked.project)
    return _continued(asked, out, info, experiments_of(out.store, info, asked.project), joining=True)


def _continued(asked: Asked, out: Outputs, info: RunInfo, experiments: Sequence, joining: bool) -> Run:
    """Stored run ``info`` going on (resumed, or joined by a shard) with ``experiments``: what
    changed since it started checked (``force`` goes on anyway, its finished items scored again)."""
    from yamleval.config import fingerprint, provenance
    from yamleval.plugins import versions
    from yamleval.lifecycle import shards as shard_runs

    db, run_id, shard, force = out.store, info.run_id, asked.shard, asked.options.force
    work = _work(asked, db, experiments, info)
    texts = provenance.config_texts(asked.project.files, asked.project.sets)
    config_hash = provenance.config_hash(texts)
    changed = _changed(db, info, work, texts)
    if shard is not None:  # its other shards' run: the same datasets (and, joining, plugins) or none
        shard_runs.same_work(db, run_id, shard, list(work.experiments), work.dataset_hashes, work.repeats,
                             joining=joining)
    if changed and not force and joining:
        raise UsageError(f"cannot join run {run_id} as shard {shard}: {'; '.join(changed)} since its first"
                         " shard started (use --force to join anyway, or give another --run-id)")
    if changed and not force:
        raise UsageError(f"cannot resume run {run_id}: {'; '.join(changed)} since it started (use --force to"
                         " resume anyway, its finished items scored again as the config now says, or run"
                         " afresh without --resume)")
    cluster = clusters(work.experiments)
    with _letting_go(cluster):
        if changed or config_hash != info.config_hash:  # it goes on under today's config (budgets, maybe)
            db.record_config(run_id, config_hash, texts, versions.plugin_versions(work.experiments, __version__),
                             fingerprint.fingerprint(asked.project.environment, list(work.experiments),
                                                     repeats=work.repeats, datasets=dict(work.dataset_hashes),
                                                     shards=None if shard is None else shard.count))
        begun = {stored.experiment_id: stored for stored in db.experiments(run_id)}
        if shard is None:
            db.reopen_run(run_id)
        else:
            shard_runs.start(db, run_id, shard, joining=joining)
        source = FromDatasets(asked.options, begun=begun, rescore=bool(changed))
        return _started(asked, out, run_id, work, source, cluster)


def retrying(asked: Asked, out: Outputs) -> Run:
    """A new run of a stored run's experiments (``--retry-errors``) that keeps its items that ended
    without an error and runs again the others (those that errored, or never ran)."""
    from yamleval.config import provenance
    from yamleval.lifecycle.resume import retried

    db = out.store
    origin, experiments = retried(db, asked.options.retry_errors, asked.project,
                                  None if asked.chosen is None else [e.id for e in asked.chosen])
    git = git_state(asked.project)
    work = _work(asked, db, experiments, origin)
    changed = _changed(db, origin, work, provenance.config_texts(asked.project.files, asked.project.sets))
    if changed and not asked.options.force:  # the items it keeps were answered under its config
        raise UsageError(f"cannot retry the errors of run {origin.run_id}: {'; '.join(changed)} since it"
                         " started (use --force to retry anyway, its kept items scored again as the"
                         " config now says, or run afresh)")
    cluster = clusters(work.experiments)
    with _letting_go(cluster):
        run_id = _stored_new(asked, out, work, git, Origin(retried_from=origin.run_id))
        stored_reviews.copy(db, origin.run_id, run_id)  # the items it keeps, people may have judged
        source = FromDatasets(asked.options, rescore=bool(changed), kept_from=origin.run_id)
        return _started(asked, out, run_id, work, source, cluster)


def new(asked: Asked, out: Outputs) -> Run:
    """A new run of the chosen experiments (all of the project's, if none), or a shard's part of one."""
    experiments = list(asked.project.experiments if asked.chosen is None else asked.chosen)
    git = git_state(asked.project)
    work = _work(asked, out.store, experiments, None)
    cluster = clusters(work.experiments)
    with _letting_go(cluster):
        run_id = _stored_new(asked, out, work, git, Origin())
        return _started(asked, out, run_id, work, FromDatasets(asked.options), cluster)


def _stored_new(asked: Asked, out: Outputs, work: Work, git, origin: Origin) -> str:
    """A new run stored (a shard: made, or found made by another shard, and joined)."""
    from yamleval.lifecycle import shards as shard_runs

    db, shard, run_id = out.store, asked.shard, asked.options.run_id
    if run_id is not None and shard is None and db.has_run(run_id):
        raise UsageError(f"run {run_id} is in {display_path(db.path)} already: continue it with --resume {run_id},"
                         " or give another --run-id")
    run_id = new_run(db, work, git, run_id=run_id, shard=shard, origin=origin, datasets=work.dataset_hashes)
    if shard is not None:
        shard_runs.joined(db, run_id, shard, asked.project)  # another shard may have made it meanwhile
        shard_runs.same_work(db, run_id, shard, list(work.experiments), work.dataset_hashes, work.repeats,
                             joining=True)
        shard_runs.start(db, run_id, shard, joining=True)
    return run_id


def _started(asked: Asked, out: Outputs, run_id: str, work: Work, source, cluster) -> Run:
    """The run made, tagged as asked."""
    from yamleval.store import tags as run_tags

    run_tags.add(out.store, run_id, out.tags)
    return Run(out, run_id, work, asked.controls, source, shard=asked.shard, cluster=cluster)


@contextlib.contextmanager
def _letting_go(cluster):
    """The run's Ray connection let go if the run cannot be made (else the run closes it at its end)."""
    try:
        yield
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise


def _work(asked: Asked, db, experiments: Sequence, started_as: RunInfo | None) -> Work:
    """``experiments`` as the options change them (repeats, cache, executor), each prepared, with the
    hashes of their datasets. A run that goes on from ``started_as`` keeps its --repeats."""
    from yamleval.config import fingerprint, provenance
    from yamleval.engine import plan

    options = asked.options
    repeats = options.repeats
    if started_as is not None and repeats is None:  # as the run was started: its --repeats, if any
        repeats = fingerprint.repeats(db.run_detail(started_as.run_id, "fingerprint"))
    if repeats is not None:
        experiments = [dataclasses.replace(e, repeats=repeats) for e in experiments]
    experiments = [dataclasses.replace(e, cache=cached(e.cache, options.cache, options.refresh_cache),
                                       executor=placed(e.executor, options.executor, options.ray_address))
                   for e in experiments]
    prepared = tuple(plan.prepare(e) for e in experiments)
    hashes = {e.id: provenance.dataset_hash(e) for e in experiments}
    return Work(asked.project, tuple(experiments), prepared, hashes, repeats)


def _changed(db, started_as: RunInfo, work: Work, texts: dict[str, str]) -> list:
    """What changed since the run this one goes on from (or retries) started."""
    from yamleval.config import provenance
    from yamleval.lifecycle.resume import changes

    return changes(db, started_as, texts, provenance.config_hash(texts), dict(work.dataset_hashes),
                   work.project.environment, list(work.experiments), work.repeats)


def placed(settings, executor: str | None, ray_address: str | None):
    """An experiment's ``executor:`` as ``--executor`` and ``--ray-address`` change it."""
    if ray_address is not None or executor == "ray":
        from yamleval.engine.executors import ray as ray_executor

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
    from yamleval.engine.executors import ray as ray_executor

    return ray_executor.start(experiments)


def cached(settings, wanted: bool | None, refresh: bool):
    """An experiment's ``cache:`` as ``--cache``/``--no-cache`` and ``--refresh-cache`` change it."""
    if wanted is not None:
        settings = dataclasses.replace(settings, runner=wanted, judges=settings.judges and wanted)
    return dataclasses.replace(settings, refresh=refresh) if refresh else settings
