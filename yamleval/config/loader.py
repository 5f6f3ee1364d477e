"""Read project and experiment files: includes, defaults, ``${VAR}``, schema, id checks."""
from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import glob
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import yaml

from yamleval.config.budget import Budget
from yamleval.config import interpolate, overrides, schema, variants, yaml_source
from yamleval.config.model import Experiment, build_experiment
from yamleval.config.yaml_source import SourceMap
from yamleval.records.errors import ConfigError, Location, display_path, raise_all
from yamleval.records.redaction import Secrets

DEFAULT_CONFIG = "evals.yaml"  # the project file a command reads when none is given
DEFAULT_REPORTS = ("html", "junit", "json", "markdown")  # the formats `yamleval report` writes by default

PROJECT_KEYS = {"models", "defaults", "store", "reports", "include", "experiments", "budget"}
REPORT_FORMATS = ("html", "junit", "json", "markdown")


@dataclass(frozen=True)
class Project:
    """Everything the given files say, experiments in file order."""

    experiments: tuple[Experiment, ...]
    files: tuple[str, ...]
    models: Mapping[str, Any] = field(default_factory=dict)
    store: str | None = None
    reports_dir: str | None = None
    report_formats: tuple[str, ...] = REPORT_FORMATS  # the JUnit one with its family: ``junit:xunit1``
    # every built-in format with the settings the config gives it, for a choice made on the command line
    report_settings: tuple[str, ...] = REPORT_FORMATS
    # every ${VAR} the files read, with its value: never stored, only a salted digest of it (fingerprint)
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    budget: Budget | None = None  # over the whole run: every experiment's spending counts
    sets: tuple[str, ...] = ()  # the --set values it was loaded with (``config.overrides``)


def _is_project(data: Mapping[str, Any]) -> bool:
    return bool(PROJECT_KEYS & data.keys()) or not ({"id", "runner", "dataset"} & data.keys())


_display = display_path

_SHAPE_HINT = "a project file has `experiments:`; an experiment file has `id:`, `dataset:` and `runner:`"


def _not_a_mapping(raw: Any, source: SourceMap) -> ConfigError:
    """The error for a file whose top level is empty, a list or a single value."""
    if raw is None:
        return ConfigError("the file is empty", Location(source.file, 1, 1, "$"), hint=_SHAPE_HINT)
    if isinstance(raw, list):
        message, hint = "the file holds a list, not a mapping of keys", (
            "put a list of experiments under `experiments:`" if all(isinstance(e, dict) for e in raw)
            else _SHAPE_HINT)
    else:
        message, hint = f"the file holds a single {type(raw).__name__} value, not a mapping of keys", _SHAPE_HINT
    return source.error((), message, hint=hint)


def _close_files(missing: str, pattern: str = "*") -> list[str]:
    """Files next to a missing one whose names are close to its name, as they would be written."""
    folder, name = os.path.split(missing)
    try:
        names = [n for n in os.listdir(folder or ".") if fnmatch.fnmatch(n, pattern)]
    except OSError:
        return []
    return difflib.get_close_matches(name, names, n=1, cutoff=0.8)


class _Recorded:
    """The environment as the config reads it: each variable read is noted in ``read``."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ, self.read = environ, {}

    def get(self, name: str, default: Any = None) -> Any:
        value = self.environ.get(name)
        if value is not None:
            self.read[name] = value
        return default if value is None else value


class _Loader:
    def __init__(self, environ: Mapping[str, str], sets: Sequence[str] = ()):
        self.overrides = overrides.parse(sets)
        self.applied: set[str] = set()  # the overrides that found their experiment
        self.environ = _Recorded(environ)
        self.errors: list[ConfigError] = []
        self.experiments: list[Experiment] = []
        self.files: list[str] = []
        self.settings: dict[str, Any] = {}
        self.secrets: dict[str, str] = {}  # every value taken from ``environ`` -> its "${NAME}"

    def load(self, file_path: str, defaults: Mapping[str, Any], project_vars: Mapping[str, Any],
             models: Mapping[str, Any],
             stack: tuple[str, ...], include_at: tuple[SourceMap, tuple] | None = None) -> None:
        real = os.path.realpath(file_path)
        if real in stack:
            chain = " -> ".join(_display(p) for p in stack[stack.index(real):] + (real,))
            source, at = include_at
            self.errors.append(source.error(at, f"include cycle: {chain}", hint="remove one of these includes"))
            return
        try:
            raw, source = yaml_source.load(file_path, _display(file_path))
        except ConfigError as exc:
            if include_at and exc.location and exc.message == "file not found":
                source, at = include_at
                written = source.raw_value(at, "")
                close = _close_files(file_path, "*.y*ml")
                hint = (f"did you mean '{os.path.join(os.path.dirname(written), close[0])}'?" if close
                        else "paths are relative to the including file's folder")
                exc = source.error(at, f"included file not found: {_display(file_path)}", hint=hint)
            elif include_at and exc.location and exc.location.line is None:  # a folder, a device, unreadable
                source, at = include_at
                exc = source.error(at, f"cannot include {_display(file_path)}: {exc.message}", hint=exc.hint)
            self.errors.append(exc)
            return
        self.files.append(_display(file_path))
        if not isinstance(raw, dict):
            self.errors.append(_not_a_mapping(raw, source))
            return
        data, errors = interpolate.expand(raw, source, self.environ, self.secrets)
        source.raw = raw
        if errors:
            self.errors.extend(errors)
            return
        project = _is_project(data)
        if self.overrides:
            targets = [(data, raw)] if not project else [
                (entry, written) for entry, written in zip(data.get("experiments") or [], raw.get("experiments") or [])
                if isinstance(entry, dict) and isinstance(written, dict)]
            overrides.apply(self.overrides, targets, self.applied)
        errors = schema.validate(data, source, "project_file" if project else "experiment_file")
        if errors:
            self.errors.extend(errors)
            return
        base_dir = os.path.dirname(os.path.abspath(file_path))
        if not project:
            self._add(build_experiment(data, raw, (), source, base_dir, defaults, project_vars, models), data)
            return
        defaults = {**defaults, **(data.get("defaults") or {})}
        project_vars = {**project_vars, **(data.get("vars") or {})}
        models = {**models, **(data.get("models") or {})}
        if not stack:
            self.settings = {k: data[k] for k in ("models", "store", "reports", "budget") if k in data}
            self.settings["base_dir"] = base_dir
        elif "budget" in data:  # not ignored: a budget left out would let the run spend without one
            self.errors.append(source.error(("budget",), "a budget over the whole run belongs in the project file"
                                            " that is run, not in an included one", key=True,
                                            hint="move it there, or give the experiments here `budget:` each"))
        for index, entry in enumerate(data.get("experiments") or []):
            at = ("experiments", index)
            self._add(build_experiment(entry, raw["experiments"][index], at, source, base_dir, defaults,
                                       project_vars, models), entry)
        for index, pattern in enumerate(data.get("include") or []):
            self._include(pattern, base_dir, (source, ("include", index)), defaults, project_vars, models,
                          stack + (real,))

    def _add(self, experiment: Experiment, data: Mapping[str, Any]) -> None:
        self.experiments.extend(variants.expand(experiment, data, self.errors))

    def _include(self, pattern: str, base_dir: str, at: tuple, defaults, project_vars, models, stack) -> None:
        full = os.path.join(base_dir, pattern)
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(full, recursive=True))
            if not matches:
                source, path = at
                self.errors.append(source.error(path, f"no file matches '{pattern}'",
                                                hint="check the pattern; it is relative to this file"))
            for match in matches:
                self.load(match, defaults, project_vars, models, stack, at)
        else:
            self.load(full, defaults, project_vars, models, stack, at)


def _check_ids(experiments: list[Experiment]) -> list[ConfigError]:
    errors = []
    seen: dict[str, Experiment] = {}
    for exp in experiments:
        if exp.id in seen:
            first = seen[exp.id].source.locate(seen[exp.id].path + ("id",))
            errors.append(exp.source.error(exp.path + ("id",), f"duplicate experiment id '{exp.id}'",
                                           hint=f"first used at {first.file}:{first.line}; ids must be unique"))
        else:
            seen[exp.id] = exp
        scorer_ids: dict[str, int] = {}
        for index, scorer in enumerate(exp.scorers):
            if scorer.id in scorer_ids:
                first = exp.scorers[scorer_ids[scorer.id]].plugin
                line = first.source.locate(first.path).line
                errors.append(scorer.plugin.error(
                    f"duplicate scorer id '{scorer.id}'", sub=("id",) if scorer.explicit_id else (),
                    context=exp.context(scorer.id),
                    hint=f"the scorer on line {line} has it too; give one of them another `id:`"))
            else:
                scorer_ids[scorer.id] = index
    return errors


def with_junit_family(formats: Sequence[str], family: str | None) -> tuple[str, ...]:
    """``formats`` with the JUnit report written in ``family`` (``junit:xunit1``), if one is given."""
    return with_junit_settings(formats, family=family)


def with_junit_settings(formats: Sequence[str], family: str | None = None,
                        item_failures: str | None = None) -> tuple[str, ...]:
    """``formats`` with the JUnit report's settings, those given replacing those it has:
    ``junit:xunit1``, ``junit:xunit2,failure`` (``reports.junit.family`` and ``item_failures``)."""
    def junit(spec: str) -> str:
        name, _, variant = spec.partition(":")
        if name != "junit" or not (family or item_failures):
            return spec
        had_family, _, had_item_failures = variant.partition(",")
        items = item_failures or had_item_failures
        return f"junit:{family or had_family or 'xunit2'}" + (f",{items}" if items else "")
    return tuple(junit(f) for f in formats)


def store_location(base: str, store: str) -> str:
    """A ``store:`` as the store opens it: a file relative to the config's folder, or a URL."""
    return store if "://" in store else os.path.join(base, store)


def with_html_budget(formats: Sequence[str], max_mb: float | None) -> tuple[str, ...]:
    """``formats`` with report.html kept within ``max_mb`` (``html:10``), if a size is given."""
    return tuple(f"html:{max_mb:g}" if max_mb and f.partition(":")[0] == "html" else f for f in formats)


def _with_settings(formats: Sequence[str], reports: Mapping[str, Any]) -> tuple[str, ...]:
    """``formats`` with what ``reports:`` says of them: the JUnit settings, report.html's size."""
    junit = reports.get("junit") or {}
    return with_html_budget(with_junit_settings(formats, junit.get("family"), junit.get("item_failures")),
                            reports.get("max_html_mb"))


def stored_report_settings(files: Sequence[str], texts: Mapping[str, str]) -> tuple[str, ...]:
    """The report settings a stored run's own config gave (its ``reports:`` JUnit settings and
    report.html's size), so its reports rendered again read as they did: from the first of its
    ``files`` (the main one first) whose stored text has a ``reports:`` mapping; none: ()."""
    for name in [*files, *(name for name in texts if name not in files)]:
        try:
            data = yaml.safe_load(texts.get(name) or "")
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("reports"), dict):
            return _with_settings(REPORT_FORMATS, data["reports"])
    return ()


def load_project(paths: str | os.PathLike | list[str] | tuple[str, ...], environ: Mapping[str, str] | None = None,
                 sets: Sequence[str] = ()) -> Project:
    """Load every file named (or the one file ``paths``), with what they include; raise all
    config errors found at once. ``sets``: ``--set [ID:]PATH=VALUE`` overrides (``config.overrides``)."""
    if isinstance(paths, (str, os.PathLike)):  # one file, not the letters of its name
        paths = [paths]
    loader = _Loader(os.environ if environ is None else environ, sets)
    for path in paths:
        loader.load(os.fspath(path), {}, {}, {}, ())
    raise_all(loader.errors)
    overrides.unapplied(loader.overrides, loader.applied)
    raise_all(_check_ids(loader.experiments))
    settings = loader.settings
    reports = settings.get("reports") or {}
    base = settings.get("base_dir", ".")
    secrets = Secrets(loader.secrets)  # what a run of any of these experiments keeps out of its results
    breakdowns = tuple(reports["breakdowns"]) if "breakdowns" in reports else None
    return Project(
        experiments=tuple(dataclasses.replace(e, secrets=secrets, breakdowns=breakdowns if e.breakdowns is None
                                              else e.breakdowns) for e in loader.experiments),
        files=tuple(loader.files),
        models=settings.get("models") or {},
        store=store_location(base, settings["store"]) if "store" in settings else None,
        reports_dir=os.path.join(base, reports["dir"]) if "dir" in reports else None,
        report_formats=_with_settings(reports["formats"] if "formats" in reports else REPORT_FORMATS, reports),
        report_settings=_with_settings(REPORT_FORMATS, reports),
        environment=dict(loader.environ.read),
        budget=Budget.read(settings.get("budget")),
        sets=tuple(sets),
    )
