"""Read project and experiment files: includes, defaults, ``${VAR}``, schema, id checks."""
from __future__ import annotations

import difflib
import glob
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from yamleval.config import interpolate, schema, yaml_source
from yamleval.config.model import Experiment, build_experiment
from yamleval.config.yaml_source import SourceMap
from yamleval.errors import ConfigError, Location, raise_all

PROJECT_KEYS = {"models", "defaults", "store", "reports", "include", "experiments"}


@dataclass(frozen=True)
class Project:
    """Everything the given files say, experiments in file order."""

    experiments: tuple[Experiment, ...]
    files: tuple[str, ...]
    models: Mapping[str, Any] = field(default_factory=dict)
    store: str | None = None
    reports_dir: str | None = None
    report_formats: tuple[str, ...] = ("json",)


def _is_project(data: Mapping[str, Any]) -> bool:
    return bool(PROJECT_KEYS & data.keys()) or not ({"id", "runner", "dataset"} & data.keys())


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


class _Loader:
    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        self.errors: list[ConfigError] = []
        self.experiments: list[Experiment] = []
        self.files: list[str] = []
        self.settings: dict[str, Any] = {}

    def load(self, file_path: str, defaults: Mapping[str, Any], project_vars: Mapping[str, Any],
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
                exc = source.error(at, f"included file not found: {_display(file_path)}", hint="check the path")
            self.errors.append(exc)
            return
        self.files.append(_display(file_path))
        if not isinstance(raw, dict):
            self.errors.append(ConfigError("the file must hold a mapping of keys (a project or an experiment)",
                                           Location(source.file, 1, 1, "$")))
            return
        data, errors = interpolate.expand(raw, source, self.environ)
        source.raw = raw
        if errors:
            self.errors.extend(errors)
            return
        project = _is_project(data)
        errors = schema.validate(data, source, "project_file" if project else "experiment_file")
        if errors:
            self.errors.extend(errors)
            return
        base_dir = os.path.dirname(os.path.abspath(file_path))
        if not project:
            self.experiments.append(build_experiment(data, raw, (), source, base_dir, defaults, project_vars))
            return
        defaults = {**defaults, **(data.get("defaults") or {})}
        project_vars = {**project_vars, **(data.get("vars") or {})}
        if not stack:
            self.settings = {k: data[k] for k in ("models", "store", "reports") if k in data}
            self.settings["base_dir"] = base_dir
        for index, entry in enumerate(data.get("experiments") or []):
            at = ("experiments", index)
            self.experiments.append(build_experiment(entry, raw["experiments"][index], at, source,
                                                     base_dir, defaults, project_vars))
        for index, pattern in enumerate(data.get("include") or []):
            self._include(pattern, base_dir, (source, ("include", index)), defaults, project_vars, stack + (real,))

    def _include(self, pattern: str, base_dir: str, at: tuple, defaults, project_vars, stack) -> None:
        full = os.path.join(base_dir, pattern)
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(full, recursive=True))
            if not matches:
                source, path = at
                self.errors.append(source.error(path, f"no file matches '{pattern}'",
                                                hint="check the pattern; it is relative to this file"))
            for match in matches:
                self.load(match, defaults, project_vars, stack, at)
        else:
            self.load(full, defaults, project_vars, stack, at)


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
                errors.append(scorer.plugin.error(
                    f"duplicate scorer id '{scorer.id}'", context=exp.context(scorer.id),
                    hint=f"scorer {scorer_ids[scorer.id] + 1} has it too; give one an `id:`"))
            else:
                scorer_ids[scorer.id] = index
        for index, criterion in enumerate(exp.pass_criteria):
            if criterion.scorer is not None and criterion.scorer not in scorer_ids:
                close = difflib.get_close_matches(criterion.scorer, list(scorer_ids), n=1, cutoff=0.5)
                hint = f"did you mean '{close[0]}'?" if close else (
                    f"scorer ids here: {', '.join(scorer_ids)}" if scorer_ids else "this experiment has no scorers")
                errors.append(exp.source.error(exp.path + ("pass_criteria", index, "scorer"),
                                               f"unknown scorer '{criterion.scorer}'", hint=hint,
                                               context=exp.context()))
    return errors


def load_project(paths: list[str] | tuple[str, ...], environ: Mapping[str, str] | None = None) -> Project:
    """Load every file named, with what they include; raise all config errors found at once."""
    loader = _Loader(os.environ if environ is None else environ)
    for path in paths:
        loader.load(os.fspath(path), {}, {}, ())
    raise_all(loader.errors)
    raise_all(_check_ids(loader.experiments))
    settings = loader.settings
    reports = settings.get("reports") or {}
    base = settings.get("base_dir", ".")
    return Project(
        experiments=tuple(loader.experiments),
        files=tuple(loader.files),
        models=settings.get("models") or {},
        store=os.path.join(base, settings["store"]) if "store" in settings else None,
        reports_dir=os.path.join(base, reports["dir"]) if "dir" in reports else None,
        report_formats=tuple(reports.get("formats") or ("json",)),
    )
