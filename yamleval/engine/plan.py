"""Turn a loaded experiment into one ready to run: plugins bound, dataset openable.

``check`` does every load-time check without running anything (``yamleval validate``);
``prepare`` does the same and keeps the bound plugins (and the dataset's, when it has one).
The config file's folder is on ``sys.path`` only while they import plugins; a run is made
inside ``importable`` by its caller, where the project's code may import its siblings as it
runs (``plugins.importpath``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from yamleval.plugins import calls
from yamleval.plugins import importpath
from yamleval.plugins import registry as plugins
from yamleval.config.model import DatasetSpec, Experiment, PluginSpec, ScorerSpec
from yamleval.builtins.datasets import Dataset, open_dataset
from yamleval.records.errors import ConfigError, raise_all
from yamleval.records.redaction import Secrets, redact_text
from yamleval.engine import templates
from yamleval.engine.scoring import Scorer
from yamleval.records.types import Item, ItemResult

if TYPE_CHECKING:
    from yamleval.builtins.models.registry import Models

FIRST_ROWS = 20  # of a dataset's rows read before a run: as many as `fields:` is checked against


@dataclass(frozen=True)
class Prepared:
    experiment: Experiment
    runner: calls.BoundCall
    scorers: tuple[Scorer, ...]
    models: Models | None = None
    # of a variant: its baseline's stored result for an item (None when there is none), for its scorers
    baseline: Callable[[str], ItemResult | None] | None = None
    dataset_plugin: Callable | None = None  # the dataset's plugin, resolved when it was prepared

    @property
    def compares(self) -> bool:
        """Whether a scorer asks for the baseline's answer (``pairwise``)."""
        return any("baseline" in scorer.call.wanted for scorer in self.scorers)

    @property
    def secrets(self) -> Secrets:
        """What the run keeps out of everything it writes: the secrets of the experiment's load."""
        return self.experiment.secrets

    def open_dataset(self, limit: int | None = None) -> Dataset:
        found = self.dataset_plugin
        return open_dataset(self.experiment.dataset, limit, _dataset_plugin if found is None else lambda _: found)


@contextlib.contextmanager
def importable(experiment: Experiment) -> Iterator[None]:
    """While inside (a run of the experiment), the project's own code may import the modules
    next to it as it runs; ``sys.path`` stays as it is."""
    with importpath.lazy_imports(experiment.base_dir):
        yield


def _dataset_plugin(spec: DatasetSpec) -> Callable:
    if spec.plugin is not None:
        return plugins.resolve(spec.plugin, "datasets")
    named = PluginSpec(spec.name, {}, spec.path + ("name",), spec.source)
    return plugins.resolve(named, "datasets")


def _check_dataset(spec: DatasetSpec, context: str,
                   read_rows: bool) -> tuple[list[ConfigError], Callable | None, int | None, list[Item]]:
    """The dataset's errors, its plugin when it has one, its count of rows when they were read,
    and its first items. Without ``read_rows`` only the first ``FIRST_ROWS`` are read: a file's
    column typo is an error before a run starts, not an aborted run."""
    if spec.url is not None:
        return [], None, None, []  # validate makes no network request
    if spec.plugin is not None or spec.name is not None:
        try:
            function = _dataset_plugin(spec)
        except ConfigError as exc:
            return [exc], None, None, []
        if spec.plugin is not None:
            sig = plugins.signature_of(function, ("limit",))
            return plugins.check_arguments(spec.plugin, sig, spec.plugin.with_, "datasets", context), function, None, []
        return [], function, None, []
    try:
        items = iter(open_dataset(spec))
        first = list(itertools.islice(items, templates.CHECKED_ITEMS))
        if read_rows:
            rows = len(first) + sum(1 for _ in items)
        else:
            rows = None
            sum(1 for _ in itertools.islice(items, FIRST_ROWS - len(first)))
        getattr(items, "close", lambda: None)()  # a file read in part
    except ConfigError as exc:
        return [exc], None, None, []
    return [], None, rows, first


def _check_items_criteria(experiment: Experiment, rows: int) -> list[ConfigError]:
    """An ``items`` criterion asking for more items than the dataset has can never hold."""
    return [experiment.source.error(experiment.path + ("pass_criteria", index, "min"),
                                    f"items min {criterion.min:g} can never hold: the dataset has {rows:,} item"
                                    f"{'' if rows == 1 else 's'}", hint="lower min, or add items to the dataset",
                                    context=experiment.context())
            for index, criterion in enumerate(experiment.pass_criteria)
            if criterion.type == "items" and criterion.min is not None and criterion.min > rows]


def _models(experiment: Experiment) -> Models:
    from yamleval.builtins.models.registry import Models

    return Models(experiment.models, experiment.retries, experiment.timeout, experiment.base_dir)


def _check_model_names(spec: PluginSpec, bound: calls.BoundCall | None, models: Models, context: str) -> list:
    """A ``with: {model: name}`` for a plugin that asks for ``models`` must name one of ``models:``;
    one that only accepts anything (``**kwargs``) has its own ``model``."""
    name = spec.with_.get("model")
    if bound is None or not bound.asks_for("models") or not isinstance(name, str):
        return []
    problem = models.unknown(name)
    return [spec.error(problem, sub=("with", "model"), context=context)] if problem else []


def _check_criteria(experiment: Experiment, unresolved: list[ScorerSpec]) -> list[ConfigError]:
    """A criterion's ``scorer:`` must be a scorer id of its experiment. A scorer whose ``uses:``
    names nothing has an id taken from a misspelt name: it is never offered as the fix, and a
    criterion naming something close to it is left to that scorer's own error (``uses:
    levenstein`` with ``scorer: levenshtein``: fixing the reference fixes both)."""
    ids = [spec.id for spec in experiment.scorers]
    doubtful = [spec.id for spec in unresolved if not spec.explicit_id]
    offered = [i for i in dict.fromkeys(ids) if i not in doubtful]
    errors = []
    for index, criterion in enumerate(experiment.pass_criteria):
        name = criterion.scorer
        if name is None or name in ids or difflib.get_close_matches(name, doubtful, n=1, cutoff=0.5):
            continue
        close = difflib.get_close_matches(name, offered, n=1, cutoff=0.5)
        if close:
            hint = f"did you mean '{close[0]}'?"
        elif offered:
            hint = f"scorer ids here: {', '.join(offered)}"
        else:
            hint = None if ids else "this experiment has no scorers"
        errors.append(experiment.source.error(experiment.path + ("pass_criteria", index, "scorer"),
                                              f"no scorer with the id '{name}' in this experiment", hint=hint,
                                              context=experiment.context()))
    return errors


def _check_executor(experiment: Experiment) -> list[ConfigError]:
    """``executor: {uses: ray}`` needs Ray installed, and a ``runtime_env`` without ``${VAR}``
    values: Ray writes its runtime environment into its logs, and its files onto its workers."""
    settings = experiment.executor
    if settings.uses != "ray":
        return []
    if "executor" in experiment.raw:
        path, where = experiment.path + ("executor",), ""
    elif experiment.source.raw_value(("defaults", "executor"), None) is not None:  # in this file's defaults
        path, where = ("defaults", "executor"), " (by `defaults`)"
    else:
        path, where = experiment.path + ("id",), " (by `defaults`)"
    errors = []
    from yamleval.config import ray_install as ray_executor

    if not ray_executor.installed():
        errors.append(experiment.source.error(path, f"this experiment runs on Ray{where}, which is not installed",
                                              hint=ray_executor.INSTALL, context=experiment.context()))
    text = json.dumps(dict(settings.runtime_env), sort_keys=True, default=str)
    if redact_text(text, experiment.secrets) != text:
        errors.append(experiment.source.error(
            path, f"the `runtime_env` of `executor`{where} holds a ${{VAR}} value, which Ray would write into its logs",
            hint="leave secrets out of runtime_env: the runner's `with:` and the models get them, in memory",
            context=experiment.context()))
    return errors


def _bind_all(experiment: Experiment, instantiate: bool):
    """The bound runner (None if it failed), the bound scorers, the models and every error met."""
    errors: list[ConfigError] = []
    models = _models(experiment)
    runner = None
    scorers, unresolved = [], []
    plugins_to_bind = [(experiment.runner, "runners", calls.RUNNER_CONTEXT, None)]
    plugins_to_bind += [(spec.plugin, "scorers", calls.SCORER_CONTEXT, spec) for spec in experiment.scorers]
    for plugin, kind, reserved, scorer in plugins_to_bind:
        context = experiment.context(scorer.id if scorer else None)
        try:
            target = plugins.resolve(plugin, kind, context)
        except ConfigError as exc:
            errors.append(exc)
            if scorer is not None:
                unresolved.append(scorer)
            continue
        try:
            bound = calls.bind(plugin, target, kind, reserved, context, instantiate)
        except ConfigError as exc:
            errors.extend(getattr(exc, "errors", [exc]))
            continue
        errors.extend(_check_model_names(plugin, bound, models, context))
        if scorer is None:
            runner = bound
        else:
            scorers.append(Scorer(scorer, bound))
    errors.extend(_check_criteria(experiment, unresolved))
    errors.extend(_check_executor(experiment))
    return runner, scorers, models, errors


def check(experiment: Experiment, read_rows: bool = True) -> list[ConfigError]:
    """Every error ``prepare`` would raise, plus every bad dataset row, without running anything."""
    with importpath.importing(experiment.base_dir):
        _, _, _, errors = _bind_all(experiment, instantiate=False)
        problems, _, rows, first = _check_dataset(experiment.dataset, experiment.context(), read_rows)
        errors.extend(problems)
        if not errors:  # a template is worth rendering once the plugins and the dataset are right
            errors.extend(templates.template_errors(experiment, first))
        if rows is not None:
            errors.extend(_check_items_criteria(experiment, rows))
    return errors


def prepare(experiment: Experiment, dataset: bool = True) -> Prepared:
    """Bind the runner and scorers; raise every config error found. Without ``dataset``, its
    dataset is not looked at (a worker that runs items read by another process)."""
    found = None
    with importpath.importing(experiment.base_dir):
        runner, scorers, models, errors = _bind_all(experiment, instantiate=True)
        if dataset:
            problems, found, _, first = _check_dataset(experiment.dataset, experiment.context(), read_rows=False)
            errors.extend(problems)
            if not errors:
                errors.extend(templates.template_errors(experiment, first))
    raise_all(errors)
    return Prepared(experiment, runner, tuple(scorers), models if experiment.models else None, dataset_plugin=found)


def with_baseline(ready: Prepared, experiments: Sequence[Experiment],
                  stored: Callable[[str], Callable[[str], ItemResult | None]]) -> Prepared:
    """``ready``, a variant whose scorers compare its answers with the baseline's (``pairwise``),
    given the baseline's answers: ``stored(experiment_id)`` finds them by item id (the baseline
    runs first, so they are stored when the variant starts)."""
    variant = ready.experiment.variant
    if variant is None or variant.baseline or not ready.compares:
        return ready
    found = [e.id for e in experiments
             if e.variant is not None and e.variant.baseline and e.variant.experiment_id == variant.experiment_id]
    return dataclasses.replace(ready, baseline=stored(found[0])) if found else ready
