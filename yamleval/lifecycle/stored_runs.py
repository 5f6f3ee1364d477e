"""Stored runs read back: listed, shown, tagged, exported, compared, followed over time, their
reports rendered again (``yamleval.api`` gives each verb its public face). Each opens the
results database once, reads what it needs and lets it go; the items it returns are views
that read the database again when iterated."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Iterator, Sequence

from yamleval.config.loader import DEFAULT_CONFIG, DEFAULT_REPORTS  # noqa: F401  (read here by the api)
from yamleval.analysis import reviewed, verdict
from yamleval.analysis.run_summary import RunSummary, summarize
from yamleval.lifecycle.outputs import DEFAULT_STORE
from yamleval.records.errors import UsageError, display_path
from yamleval.records.outcome import RunOutcome
from yamleval.records.types import Breakdown, ExperimentResult, RunInfo

if TYPE_CHECKING:  # pragma: no cover
    from yamleval.analysis.compare import Comparison
    from yamleval.analysis.history import ExperimentHistory



@dataclass(frozen=True)
class ListedRun:
    """A stored run as ``yamleval runs`` lists it."""

    run: RunInfo
    experiment_ids: tuple[str, ...]
    summary: RunSummary
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Shown:
    """A stored run with its experiments' results (none when only its config was asked for) and,
    when a field was given, each experiment's breakdown by it (in the same order)."""

    run: RunInfo
    results: tuple[ExperimentResult, ...]
    breakdowns: tuple[Breakdown, ...] = ()


@dataclass(frozen=True)
class Tagged:
    """A run that was tagged, with every tag it has now."""

    run: RunInfo
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Compared:
    """Two stored runs compared (``analysis.compare``), written in the format asked for."""

    comparison: Comparison
    text: str


@dataclass(frozen=True)
class History:
    """How each experiment of the newest runs of ``store`` moved, oldest run first; ``page``: the
    HTML page written of it, if one was asked for."""

    experiments: tuple[ExperimentHistory, ...]
    store: str
    page: str | None = None


@dataclass(frozen=True)
class Exported:
    """How many items of ``run`` were written, and where (None: to a stream)."""

    run: RunInfo
    count: int
    path: str | None


def configured_path(config: str, *keys: str) -> str | None:
    """The path at ``keys`` of ``config`` (``store``; ``defaults``, ``cache``, ``path``), relative to
    its folder; None without that file or that key. A broken config does not stop reading past
    runs: it has no paths."""
    if not os.path.isfile(config):
        return None
    from yamleval.config import yaml_source

    try:
        found, _ = yaml_source.load(config)
    except Exception:
        return None
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    if not isinstance(found, str):
        return None
    from yamleval.config.interpolate import expand_text
    from yamleval.config.loader import store_location

    try:
        found = expand_text(found, os.environ, {})  # `store: ${DATABASE_URL}`
    except Exception:
        return None
    return store_location(os.path.dirname(config), found)


def store_path(given: str | os.PathLike | None) -> str:
    """``given``, else the ``store:`` of ./evals.yaml, else .yamleval/results.db."""
    return os.fspath(given) if given else configured_path(DEFAULT_CONFIG, "store") or DEFAULT_STORE


@contextlib.contextmanager
def opened(given: str | os.PathLike | None) -> Iterator:
    """The results database ``given`` (``store_path``), which must exist, opened and closed after use."""
    from yamleval.store import open_store

    store = open_store(store_path(given))
    try:
        yield store
    finally:
        store.close()


def runs(given, limit: int) -> tuple[ListedRun, ...]:
    from yamleval.store import tags as run_tags

    with opened(given) as store:
        return tuple(ListedRun(info, tuple(store.run_detail(info.run_id, "experiment_ids") or ()),
                               summarize(reviewed.listed_summaries(store, info.run_id)), run_tags.of_run(store, info.run_id))
                     for info in store.runs(limit))


def breakdown_field(field: str) -> bool:
    """Whether items can be broken down by ``field``: ``tags``, or ``metadata.KEY`` (a path)."""
    parts = field.split(".")
    return field == "tags" or (len(parts) > 1 and parts[0] == "metadata" and all(parts[1:]))


def show(given, run_ref: str, by: str | None, config: bool) -> Shown:
    if by is not None and not breakdown_field(by):
        raise UsageError(f"--by {by}: not an item field to break down by; give metadata.KEY (a path into the items'"
                         " metadata) or tags")
    with opened(given) as store:
        info = store.find_run(run_ref)
        if config:
            return Shown(info, ())
        results = tuple(reviewed.results(store, info.run_id))
    return Shown(info, results, () if by is None else tuple(_breakdown(result, by) for result in results))


def _breakdown(result: ExperimentResult, field: str) -> Breakdown:
    """The experiment's breakdown by ``field``: as stored with its summary, else counted from its items."""
    from yamleval.analysis.aggregate import recount

    found = next((b for b in result.summary.breakdowns if b.field == field), None)
    return found if found is not None else recount(result.summary, result.items, (field,)).breakdowns[0]


def tag(given, run_ref: str, names: Sequence[str]) -> Tagged:
    from yamleval.store import tags as run_tags

    with opened(given) as store:
        info = store.find_run(run_ref)
        run_tags.add(store, info.run_id, names)
        return Tagged(info, run_tags.of_run(store, info.run_id))


def report_formats(wanted: Sequence[str], configured: Sequence[str] = ()) -> list[str]:
    """The report formats named in ``wanted``, each with the settings the config gives it in
    ``configured`` (``html:10`` for ``max_html_mb: 10``, a JUnit family)."""
    from yamleval.reporting import FORMATS

    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    settings = {f.partition(":")[0]: f for f in configured}
    return [settings.get(f, f) for f in wanted]


def report(given, run_ref: str, formats: Sequence[str], report_dir: str, junit_family: str | None, gate: bool,
           max_html_mb: float | None, verdicts: str = "reviewed") -> RunOutcome:
    from yamleval.config.loader import stored_report_settings, with_html_budget, with_junit_family
    from yamleval.reporting import write_reports
    with opened(given) as store:
        info = store.find_run(run_ref)
        if gate:
            _gateable(store, info)
        results = reviewed.results(store, info.run_id, verdicts=_verdicts(verdicts))
    if verdicts == "machine":  # a review stored the run's verdict as people gave it: count it again
        info = verdict.run_counted(info, results)
    configured = stored_report_settings(info.config_files, info.config_text)  # as the run wrote them
    wanted = with_junit_family(with_html_budget(report_formats(formats, configured), max_html_mb), junit_family)
    written = write_reports(report_dir, wanted, info, results)
    return RunOutcome(info, tuple(results), tuple(written))


def _gateable(store, info: RunInfo) -> None:
    """A run whose stored verdict is final: finished, every shard of it (if it is split) in."""
    from yamleval.lifecycle import shards as shard_runs

    missing = shard_runs.missing(store, info.run_id)
    if missing:
        raise UsageError(f"run {info.run_id} is split into shards and {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} not in: its verdict is not the run's yet; gate once"
                         " every shard has completed, or on the run `yamleval merge` makes of the shards' stores")
    if info.status in ("running", "crashed"):
        raise UsageError(f"run {info.run_id} is {info.status}, with no verdict yet: resume it"
                         f" (`yamleval run --resume {info.run_id}`), then gate")


def export(given, run_ref: str, fmt: str, experiment_ids: Sequence[str], statuses: Sequence[str],
           output: str | os.PathLike | IO[str]) -> Exported:
    from yamleval.reporting import export as exporting
    from yamleval.reporting.files import atomic_output

    with opened(given) as store:
        info = store.find_run(run_ref)
        results = reviewed.results(store, info.run_id, set(experiment_ids) if experiment_ids else None)
        missing = sorted(set(experiment_ids) - {r.experiment_id for r in results})
        if missing:
            known = ", ".join(r.experiment_id for r in store.results(info.run_id)) or "none"
            raise UsageError(f"--experiment {missing[0]}: run {info.run_id} has no such experiment (it has: {known})")
    if not isinstance(output, (str, os.PathLike)):
        return Exported(info, exporting.write(output, results, fmt, statuses), None)
    path = os.fspath(output)
    try:
        with atomic_output(path) as out:
            count = exporting.write(out, results, fmt, statuses)
    except OSError as exc:
        raise UsageError(f"cannot write {display_path(path)}: {exc.strerror or exc}") from None
    return Exported(info, count, path)


COMPARE_FORMATS = ("text", "markdown", "json", "html")


def _verdicts(verdicts: str) -> str:
    if verdicts not in reviewed.VERDICTS:
        raise UsageError(f"--verdicts {verdicts}: choose from {', '.join(reviewed.VERDICTS)}")
    return verdicts


def compare(given, base_ref: str, candidate_ref: str, alpha: float, margin: float, fmt: str,
            verdicts: str = "reviewed") -> Compared:
    from yamleval.analysis import compare as comparing
    from yamleval.reporting import comparison

    if fmt not in COMPARE_FORMATS:
        raise UsageError(f"unknown format {fmt}; choose from {', '.join(COMPARE_FORMATS)}")
    (base_ref, base_variant), (candidate_ref, candidate_variant) = map(comparing.split_variant, (base_ref, candidate_ref))
    with opened(given) as store:
        base, candidate = store.find_run(base_ref), store.find_run(candidate_ref)
        base_results = reviewed.results(store, base.run_id, verdicts=_verdicts(verdicts))
        candidate_results = reviewed.results(store, candidate.run_id, verdicts=verdicts)
    found = comparing.compare_named(base, base_results, base_variant, candidate, candidate_results, candidate_variant,
                                    alpha, margin)
    if base.run_id == candidate.run_id and base_variant == candidate_variant:  # each item paired with itself
        raise UsageError(f"'{base_ref}' and '{candidate_ref}' are both run {base.run_id}: a run compared with"
                         " itself shows nothing; give two runs (`yamleval runs` lists them), or two variants of one")
    if fmt == "html":
        from yamleval.reporting import compare_html

        return Compared(found, compare_html.render(found, base_results, candidate_results))
    return Compared(found, comparison.to_json(found) if fmt == "json" else
                    comparison.to_text(found, markdown=fmt == "markdown"))


def history(given, last: int, tag_name: str | None, html: str | os.PathLike | None) -> History:
    from yamleval.analysis import history as histories

    with opened(given) as store:
        found = History(tuple(histories.read(store, histories.recent_runs(store, last, tag_name))), store.path)
    if html is None:
        return found
    from yamleval.reporting import history_html

    page = os.fspath(html)
    history_html.write(page, found.experiments, display_path(found.store))
    return History(found.experiments, found.store, page)
