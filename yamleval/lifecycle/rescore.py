"""A stored run scored again: each item's stored output (with its usage, trace and metadata)
judged by the scorers and pass criteria of the config as it is now, stored as a new run that
records the run it came from. No runner is called; scorers that call a model (LLM judges) do.

An item whose runner failed stays the error it was; an item run several times keeps its
repeats, each scored again, then reduced again (``engine.rescored``). The new run is counted,
judged, stored and reported as any run is (``runs``), so it can be compared with its source.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Iterable, Iterator, Sequence

from yamleval.records.errors import UsageError
from yamleval.lifecycle.ongoing import Controls, Origin, Run, Work, git_state, new_run
from yamleval.lifecycle.outputs import DEFAULT_STORE, open_outputs
from yamleval.lifecycle.stored import store_experiment
from yamleval.records.options import RescoreOptions
from yamleval.records.outcome import RunOutcome, RunWatcher
from yamleval.records.types import ExperimentResult, ItemResult, RunInfo
from yamleval.analysis.verdict import judged
from yamleval.store import reviews as stored_reviews


def rescore_run(project, source: str, options: RescoreOptions | None = None, *, stop: threading.Event | None = None,
                watcher: RunWatcher | None = None, **given) -> RunOutcome:
    """Score the stored items of run ``source`` (an id, a tag, a unique prefix of an id, or ``latest``)
    again with ``project``'s experiments of the same ids, as a new run, as ``options``
    (``RescoreOptions``, or its fields as keyword arguments) say.

    ``stop`` set: score no more items (the new run is interrupted). ``watcher.warning`` hears of
    a source run that did not complete and of the experiments left out.
    """
    from yamleval.config.loader import with_junit_family
    from yamleval.lifecycle.stored_runs import report_formats
    from yamleval.store.locations import existing

    options = dataclasses.replace(options or RescoreOptions(), **given)
    controls = Controls.of(stop, None, watcher)
    path = options.store or project.store or DEFAULT_STORE
    formats = (project.report_formats if options.formats is None else
               report_formats(options.formats, project.report_settings))
    formats = with_junit_family(formats, options.junit_family)
    # a database stored already (not a new, empty one: nothing to score again), a file or a URL
    out = open_outputs(project, existing(path), options.report_dir, formats, options.tags)
    try:
        run = rescoring(project, source, options.experiments, out, controls)
    except BaseException:
        out.store.abandon()
        raise
    return run.go()


def rescoring(project, source: str, wanted: Sequence[str], out, controls: Controls) -> Run:
    """A new run of the stored outputs of run ``source``, scored again: made and stored."""
    from yamleval.engine import plan
    from yamleval.store import tags as run_tags

    db, watcher = out.store, controls.watcher
    origin = db.find_run(source)
    experiments = _experiments(db, origin, project, wanted, watcher)
    git = git_state(project)
    prepared = tuple(plan.prepare(e) for e in experiments)
    if origin.status != "completed":
        watcher.warning(f"run {origin.run_id} is {origin.status}: only the items it stored are scored again")
    stored_experiments = db.experiments(origin.run_id)
    hashes = {stored.experiment_id: stored.dataset_hash for stored in stored_experiments}
    known = {e.id for e in project.experiments}
    never = [eid for eid in db.run_detail(origin.run_id, "experiment_ids") or []  # its run stopped before them
             if eid not in hashes and eid in known and (not wanted or eid in wanted)]
    if never:
        watcher.warning(f"run {origin.run_id} never started {', '.join(never)}: nothing of "
                        f"{'them' if len(never) > 1 else 'it'} to score, so the new run is not complete either")
    # an experiment its source did not finish (crashed, stopped, aborted, a shard missing) stays unfinished
    finished = {stored.experiment_id for stored in stored_experiments if stored.status == "completed"}
    work = Work(project, tuple(experiments), prepared, hashes, _repeats(db, origin))
    run_id = new_run(db, work, git, origin=Origin(rescored_from=origin.run_id))
    run_tags.add(db, run_id, out.tags)
    stored_reviews.copy(db, origin.run_id, run_id)  # people judged the outputs, which the new run keeps
    return Run(out, run_id, work, controls, StoredOutputs(origin, finished), planned=len(prepared) + len(never))


def _experiments(db, origin: RunInfo, project, wanted: Sequence[str], watcher: RunWatcher) -> list:
    """The config's experiments that ``origin`` stored items of, in the order it ran them; those
    ``wanted`` (each must be one). What is left out on either side, the watcher is told."""
    from yamleval.lifecycle.run import select_experiments

    stored = [e.experiment_id for e in db.experiments(origin.run_id)]
    chosen = select_experiments(project, wanted)
    missing = [e.id for e in chosen if e.id not in stored]
    if wanted and missing:
        raise UsageError(f"run {origin.run_id} has no experiment {', '.join(repr(m) for m in missing)}"
                         f" (its experiments: {', '.join(stored) or 'none'})")
    known = {e.id: e for e in chosen}
    experiments = [known[i] for i in stored if i in known]
    if not experiments:
        raise UsageError(f"nothing to score again: the config has none of the experiments of run {origin.run_id}"
                         f" ({', '.join(stored) or 'none'})")
    if not wanted:
        if missing:
            watcher.warning(f"not in run {origin.run_id}, not scored: {', '.join(missing)}")
        gone = [i for i in stored if i not in known]
        if gone:
            watcher.warning(f"no longer in the config, not scored: {', '.join(gone)}")
    return experiments


def _repeats(db, origin: RunInfo) -> int | None:
    """The source run's --repeats, if it had one: the new run records what its items are."""
    from yamleval.config import fingerprint

    return fingerprint.repeats(db.run_detail(origin.run_id, "fingerprint"))


class StoredOutputs:
    """Experiments whose items are the stored outputs of run ``origin``, scored again. Of a source
    experiment not ``finished``, the result is incomplete: it never passes, and a gate on the new
    run fails, as it would on the source."""

    def __init__(self, origin: RunInfo, finished: set[str]):
        self.origin, self.done = origin, finished

    def finished(self, run: Run) -> dict:
        return {}  # a new run: none of its experiments is finished yet

    def baseline_items(self, run: Run):
        # a variant's pairwise judge compares with the baseline's answers as the source run stored them
        return lambda stored_id: run.db.item_view(self.origin.run_id, stored_id, 0).find

    def experiment(self, run: Run, position: int, ready, results) -> ExperimentResult:
        """One experiment's stored items scored again, each stored in the new run as it is scored."""
        from yamleval.engine import experiment as engine

        db, experiment_id, watcher, stop = run.db, ready.experiment.id, run.watcher, run.stop

        def rescore(keeper) -> ExperimentResult:
            def kept(results: Iterable[ItemResult]) -> Iterator[ItemResult]:
                for count, result in enumerate(results, 1):
                    keeper.item(result)
                    watcher.progress(experiment_id, count, None)
                    yield result
                    if stop.is_set():
                        return

            stored = db.item_view(self.origin.run_id, experiment_id, 0)
            # the judges call out through the run's network: its endpoint checks stop it; the scorers'
            # verdicts are stored as the items' own, the source's reviews, copied, count as the run is read
            rescored = engine.rescored(ready, stored, run.executors.network)
            result = engine.run_experiment(ready, run.executors, engine.ItemSource.stored(kept(rescored)),
                                           bounds=engine.Bounds(stop=stop), keep_items=False)
            return result if experiment_id in self.done else judged(dataclasses.replace(result, incomplete=True))

        return store_experiment(db, run.run_id, position, ready, run.work.dataset_hashes[experiment_id],
                                run.controls, rescore)
