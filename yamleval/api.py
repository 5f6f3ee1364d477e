"""The Python API: every ``yamleval`` verb, from Python, with the options of the command.

    >>> from yamleval import api
    >>> outcome = api.run("evals.yaml", store="results.db", report_dir="reports")
    >>> outcome.passed, outcome.exit_code, outcome.reports
    >>> api.compare(outcome.run.run_id, store="results.db").comparison.verdict

Each verb returns a typed record (``RunOutcome``, ``Compared``, ``ListedRun`` ...) that the
command line prints; a problem raises a ``YamlevalError`` that knows its exit code. The verbs
over stored runs take ``store`` (a path or a ``postgresql://`` URL; default: the ``store:`` of
./evals.yaml, else .yamleval/results.db), which must exist. ``run_experiment`` runs one
experiment in memory, without a store or reports.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Callable, Iterable, Mapping, Sequence, Union

from yamleval.config.loader import DEFAULT_CONFIG, DEFAULT_REPORTS, Project, load_project as _load_project
from yamleval.config.model import Experiment
from yamleval.records.errors import UsageError
from yamleval.records.options import RescoreOptions, RunOptions
from yamleval.records.outcome import RunOutcome, RunWatcher
from yamleval.records.types import ExperimentResult

if TYPE_CHECKING:  # pragma: no cover
    from yamleval.lifecycle.stored_runs import Compared, Exported, History, ListedRun, Shown, Tagged
    from yamleval.calls import answers
    from yamleval.engine import experiment as engine
    from yamleval.engine import plan
    from yamleval.lifecycle import reviewing

Paths = Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]
StoreLocation = Union[str, os.PathLike, None]


def _stored_runs():
    """The verbs over stored runs (``lifecycle.stored_runs``), imported when one is asked for:
    ``validate`` and ``--help`` never need them."""
    from yamleval.lifecycle import stored_runs

    return stored_runs


_STORED_TYPES = ("Compared", "Exported", "History", "ListedRun", "Shown", "Tagged")


def __getattr__(name: str):
    """The answers of the verbs over stored runs (``api.Shown`` and the like), read when first asked for."""
    if name in _STORED_TYPES:
        return getattr(_stored_runs(), name)
    raise AttributeError(f"module 'yamleval.api' has no attribute {name!r}")


def _paths(paths) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths] or [DEFAULT_CONFIG]


def _project(config: Union[Paths, Project], sets: Sequence[str] = ()) -> Project:
    if not isinstance(config, Project):
        return _load_project(_paths(config), sets=sets)
    if tuple(sets) != tuple(config.sets) and sets:
        raise UsageError("--set values change the files a project is loaded from: give its paths, not the Project")
    return config


def load_project(paths: Paths, sets: Sequence[str] = ()) -> Project:
    """The project in these files (``evals.yaml`` when none is given), with ``--set`` values;
    ConfigError if invalid."""
    return _load_project(_paths(paths), sets=sets)


def load_experiments(paths: Paths) -> list[Experiment]:
    """The experiments in a project or experiment file (or several); ConfigError if invalid."""
    return list(load_project(paths).experiments)


def run(config: Union[Paths, Project], options: RunOptions | None = None, *, stop: threading.Event | None = None,
        abandon: threading.Event | None = None, watcher: RunWatcher | None = None, **given) -> RunOutcome:
    """Run a project's experiments as one stored run, exactly as ``yamleval run`` does: every item
    stored as it finishes, resumable, reports written, the run tagged.

    ``options`` (``RunOptions``) are the command's options; its fields may be given as keyword
    arguments instead (``api.run("evals.yaml", store="results.db", tags=["main"])``), or on top of
    ``options`` to change them. ``sets`` change the files a project is loaded from: with a loaded
    ``Project``, they must be the ones it was loaded with. ``stop`` set: start no new items;
    ``abandon`` set: stop waiting for running ones; ``watcher`` hears how the run goes."""
    from yamleval.engine import shards as sharding
    from yamleval.lifecycle.run import run_project

    options = (options or RunOptions()).replaced(**given)
    if options.shard is not None:
        sharding.parse(options.shard)  # a wrong --shard is told before the config is read
    project = _project(config, options.sets)
    return run_project(project, options, stop=stop, abandon=abandon, watcher=watcher)


def rescore(run: str, config: Union[Paths, Project] = DEFAULT_CONFIG,
            options: RescoreOptions | None = None, *, stop: threading.Event | None = None,
            watcher: RunWatcher | None = None, **given) -> RunOutcome:
    """Score the stored outputs of ``run`` (an id, a tag, a unique prefix of an id, or ``latest``) again
    with the scorers and criteria of ``config`` as it is now, as a new run, as ``yamleval
    rescore`` does; no runner is called. ``options`` (``RescoreOptions``: ``experiments``,
    ``store``, ``report_dir``, ``formats``, ``junit_family``, ``tags``) may be given as keyword
    arguments instead; ``formats`` (names) take the config's settings; default: the config's
    ``reports.formats``."""
    from yamleval.lifecycle.rescore import rescore_run

    return rescore_run(_project(config), run, options, stop=stop, watcher=watcher, **given)


def report(run: str = "latest", *, store: StoreLocation = None, formats: Sequence[str] = DEFAULT_REPORTS,
           report_dir: str = "reports", junit_family: str | None = None, gate: bool = False,
           max_html_mb: float | None = None, verdicts: str = "reviewed") -> RunOutcome:
    """Render the reports of a stored ``run`` again into ``report_dir``: its outcome, whose
    ``exit_code`` is the run's verdict. ``gate``: first check that verdict is final (the run
    finished, every shard of it in), UsageError else (``yamleval report --gate``). ``verdicts``:
    ``reviewed`` (a person's verdict counts where there is one) or ``machine`` (the scorers')."""
    return _stored_runs().report(store, run, formats, report_dir, junit_family, gate, max_html_mb, verdicts)


def merge(out: Union[str, os.PathLike], shards: Sequence[Union[str, os.PathLike]]) -> RunOutcome:
    """Merge the stores of a sharded run's jobs into one run stored in ``out`` (made if missing),
    counted and judged from all their items (``yamleval merge``); no report is written."""
    from yamleval.lifecycle.merge import merge as merge_stores

    return merge_stores(os.fspath(out), [os.fspath(s) for s in shards])


def compare(base: str, candidate: str = "latest", *, store: StoreLocation = None, alpha: float = 0.05,
            margin: float = 0.0, format: str = "text", verdicts: str = "reviewed") -> Compared:
    """Compare two stored runs item by item, with a paired verdict per experiment and scorer
    (``yamleval compare``); ``text`` is the comparison written as ``format`` (``text``,
    ``markdown``, ``json`` or ``html``); ``comparison.gate_failure()`` says why a gate fails.
    ``verdicts``: as ``report`` takes it, for both runs. ``RUN:VARIANT`` on both sides compares two
    variants (of one run or of two) as two runs are compared."""
    return _stored_runs().compare(store, base, candidate, alpha, margin, format, verdicts)


def export(run: str = "latest", *, store: StoreLocation = None, format: str = "csv", experiments: Sequence[str] = (),
           statuses: Sequence[str] = (), output: Union[str, os.PathLike, IO[str], None] = None) -> Exported:
    """Write the items of a stored ``run`` as ``csv`` or ``jsonl`` (``yamleval export``) to
    ``output``: a file (written whole or not at all), a text stream, or (None) the standard output;
    only the ``experiments`` and item ``statuses`` given, if any."""
    import sys

    if format not in ("csv", "jsonl"):
        raise UsageError(f"unknown format {format}; choose from csv, jsonl")
    return _stored_runs().export(store, run, format, experiments, statuses, sys.stdout if output is None else output)


def history(*, store: StoreLocation = None, last: int = 10, tag: str | None = None,
            html: Union[str, os.PathLike, None] = None) -> History:
    """How each experiment moved over the newest ``last`` runs (tagged ``tag``, if given): pass
    rate, mean score and verdict per run, and the items whose verdict changes most
    (``yamleval history``); ``html``: also write that as a page there."""
    return _stored_runs().history(store, last, tag, html)


def tag(run: str, names: Sequence[str], *, store: StoreLocation = None) -> Tagged:
    """Tag a stored ``run`` with each of ``names`` (``yamleval tag``), for a no_regression
    criterion's baseline: the run with all its tags."""
    return _stored_runs().tag(store, run, names)


def runs(*, store: StoreLocation = None, limit: int = 20) -> tuple[ListedRun, ...]:
    """The newest ``limit`` stored runs, newest first, each with its experiments, pass rate, mean
    score and tags (``yamleval runs``)."""
    return _stored_runs().runs(store, limit)


def show(run: str = "latest", *, store: StoreLocation = None, by: str | None = None, config: bool = False) -> Shown:
    """A stored ``run`` with its experiments' results (``yamleval show``); ``by``: each one's
    breakdown by an item field (``metadata.KEY`` or ``tags``); ``config``: the run only (its
    stored configuration is ``run.config_text``), no results read."""
    return _stored_runs().show(store, run, by, config)


def review(run: str, experiment: str | None = None, item: str | None = None, verdict: str | None = None, *,
           note: str | None = None, by: str | None = None, import_file: Union[str, os.PathLike, None] = None,
           store: StoreLocation = None) -> "reviewing.Reviewed":
    """Store a person's verdict (pass or fail) on an item of a stored run, or those of a CSV or JSONL
    file (experiment, item, verdict, note, by); each is kept, and the newest of an item counts."""
    from yamleval.lifecycle import reviewing

    if import_file is not None:
        if experiment is not None or item is not None or verdict is not None:
            raise UsageError("give either an item and its verdict, or --import FILE, not both")
        asked = reviewing.read_file(os.fspath(import_file), by)
    elif experiment is None or item is None or verdict is None:
        raise UsageError("name the EXPERIMENT and ITEM to review and give --verdict pass|fail (or --import FILE)")
    else:
        asked = [reviewing.Asked(experiment, item, verdict, note, by)]
    return reviewing.review(store, run, asked)


def agreement(run: str = "latest", *, store: StoreLocation = None) -> "reviewing.Agreements":
    """How far each scorer of a stored run agrees with people's verdicts: n, agreement, Cohen's kappa
    with its interval, the confusion matrix (each experiment's ``summary.agreement``)."""
    from yamleval.lifecycle import reviewing

    return reviewing.agreement(store, run)


def serve(*, store: StoreLocation = None, host: str = "127.0.0.1", port: int = 8600, token_env: str | None = None,
          ready: Callable[[str], None] | None = None, reviews: bool = False, reviewer: str | None = None) -> None:
    """Serve the Eval Center over a results database (``yamleval serve``) until interrupted:
    every stored run, a running one as it runs, and the JSON API. A ``host`` other than this
    machine's needs ``token_env``, the variable that holds the token every request must bring
    (UsageError else); ``ready`` is called with the address once the server listens. ``reviews``:
    people may give items their verdict on the items' pages (as ``reviewer``, or as each names
    themselves); else the server writes nothing."""
    from yamleval.serve import serve as serving

    serving(_stored_runs().store_path(store), host, port, token_env, ready, reviews, reviewer)


@dataclass(frozen=True)
class Validated:
    """A valid project: its files, and its experiments by the id written, each with its variants."""

    files: tuple[str, ...]
    experiments: Mapping[str, tuple[Experiment, ...]]


def validate(config: Paths = DEFAULT_CONFIG, *, sets: Sequence[str] = ()) -> Validated:
    """Check a project without running anything (``yamleval validate``): schema, ids, plugins,
    arguments, datasets. ConfigError (every problem, each once) when it is not valid."""
    from yamleval.config.variants import parents, told_once
    from yamleval.engine import plan
    from yamleval.records.errors import raise_all

    project = load_project(config, sets)
    # variants share their experiment's problems: each told once
    raise_all(told_once([(experiment, error) for experiment in project.experiments for error in plan.check(experiment)]))
    grouped = parents(list(project.experiments))
    return Validated(tuple(project.files), {eid: tuple(found) for eid, found in grouped.items()})


@dataclass(frozen=True)
class Preview:
    """What a run would send for its first items, and its estimate (``lifecycle.preview``), with
    ``text``: all of it as ``yamleval preview`` prints it, secrets masked."""

    experiments: tuple
    text: str


def preview(config: Paths = DEFAULT_CONFIG, *, experiments: Sequence[str] = (), limit: int = 3) -> Preview:
    """What a run would send, and an estimate of its calls, tokens and cost, without calling
    anything (``yamleval preview``): the requests of the first ``limit`` items of each experiment."""
    from yamleval.lifecycle import preview as previewing
    from yamleval.lifecycle.run import select_experiments

    chosen = select_experiments(load_project(config), experiments)
    shown = previewing.preview(chosen, limit)
    secrets = chosen[0].secrets if chosen else None
    return Preview(shown, previewing.render(shown, secrets) if secrets else "no experiments\n")


def init(folder: Union[str, os.PathLike] = ".", *, base_url: str | None = None, model: str | None = None,
         force: bool = False) -> list[str]:
    """Start a project in ``folder`` (``yamleval init``): evals.yaml, a dataset of cases, a runner
    plugin that answers offline and the schema editors read; with ``base_url`` and ``model``, a
    project that tests that model instead. Returns the names of the files written."""
    from yamleval.config import starter

    return starter.write_project(starter.starter_files(base_url, model), os.fspath(folder), force)


def schema() -> str:
    """The JSON Schema of yamleval's YAML files (``yamleval schema``)."""
    from yamleval.config.schema import schema_text

    return schema_text()


def run_experiment(experiment: Experiment | plan.Prepared, *, concurrency: int | None = None,
                   limit: int | None = None, on_item: engine.ItemCallback | None = None,
                   on_progress: engine.ProgressCallback | None = None,
                   stop: threading.Event | None = None, repeats: int | None = None) -> ExperimentResult:
    """Run one experiment in memory (nothing stored). ``on_item(item_result)`` and
    ``on_progress(completed, total)`` are called as items finish; an exception in either is kept
    in ``result.warnings``. ``repeats``: how many times each item runs, whatever the experiment says."""
    from yamleval.engine import experiment as engine
    from yamleval.engine import plan
    from yamleval.engine.executors import choice

    prepared = experiment if isinstance(experiment, plan.Prepared) else plan.prepare(experiment)
    if repeats is not None:
        prepared = dataclasses.replace(prepared, experiment=dataclasses.replace(prepared.experiment, repeats=repeats))
    with plan.importable(prepared.experiment):
        return engine.run_experiment(prepared, choice.on(None), engine.ItemSource(limit=limit),
                                     engine.Hooks(on_item=on_item, on_progress=on_progress),
                                     engine.Bounds(concurrency=concurrency, stop=stop))


@dataclass(frozen=True)
class Pruned:
    """How many answers a prune (or a clear) of the answer cache deleted, and what it keeps after."""

    removed: int
    kept: "answers.Stats"


def cache_stats(path: Union[str, os.PathLike, None] = None) -> "answers.Stats":
    """How many answers the answer cache at ``path`` keeps (default: the ``defaults.cache.path`` of
    ./evals.yaml, else .yamleval/cache.db), their size and the tokens they took (``yamleval cache stats``)."""
    with _cache(path) as kept:
        return kept.stats()


def prune_cache(path: Union[str, os.PathLike, None] = None, *, ttl: str | None = None,
                max_size: str | None = None) -> Pruned:
    """Delete the cache's answers older than ``ttl`` (``7d``, ``12h``; default 7d), then the least
    recently used past ``max_size`` (``2GB``, ``500MB``; default 2GB), as ``yamleval cache prune``."""
    from yamleval.calls import answers
    from yamleval.config.model import size_bytes
    from yamleval.config.budget import seconds

    try:
        limits = (seconds(ttl) if ttl else answers.DEFAULT_TTL,
                  size_bytes(max_size) if max_size else answers.DEFAULT_MAX_SIZE)
        if not limits[0]:
            raise ValueError(ttl)
    except (AttributeError, KeyError, ValueError):
        raise UsageError("give --ttl as a number and s, m, h, d or w (`7d`, `12h`), and --max-size as a number and"
                         " B, KB, MB, GB or TB (`2GB`)") from None
    with _cache(path, *limits) as kept:
        return Pruned(kept.prune(), kept.stats())


def clear_cache(path: Union[str, os.PathLike, None] = None) -> Pruned:
    """Delete every answer the cache keeps (``yamleval cache clear``)."""
    with _cache(path) as kept:
        return Pruned(kept.clear(), kept.stats())


@contextlib.contextmanager
def _cache(path, *limits: float):
    """The cache file at ``path`` (which must exist), closed after use; ``limits``: its ttl and max size."""
    from yamleval.calls.answers import DEFAULT_PATH, Cache

    path = os.fspath(path) if path else (_stored_runs().configured_path(DEFAULT_CONFIG, "defaults", "cache",
                                                                     "path") or DEFAULT_PATH)
    if not os.path.exists(path):
        raise UsageError(f"no cache at {path} yet: a run keeps answers there once a cached call is made")
    kept = Cache(path, *limits)
    try:
        yield kept
    finally:
        kept.close()
