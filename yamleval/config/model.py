"""Typed experiment records built from a validated, expanded config mapping.

Each record keeps the JSON path it came from and the file's source map, so the
checks that run after the schema (plugins, templates, datasets) report at the
same YAML coordinates.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from yamleval.config.budget import Budget, seconds
from yamleval.config.yaml_source import Path, SourceMap
from yamleval.records.redaction import Secrets
from yamleval.records.types import Variant

DEFAULTS = {"concurrency": 8, "timeout": 60.0, "retries": 2, "confidence": 0.95, "repeats": 1, "reduce": "mean"}


@dataclass(frozen=True)
class PluginSpec:
    """A ``uses:`` reference with its ``with:`` arguments."""

    uses: str
    with_: Mapping[str, Any]
    path: Path
    source: SourceMap = field(repr=False, compare=False)
    # ``with:`` keys a variant sets, and the path of that variant's ``with:``: where they are written
    overrides: Mapping[str, Path] = field(default_factory=dict, compare=False)

    def where(self, sub: Path = ()) -> Path:
        """The path of ``sub`` (``("with", key)``) as written: in the runner, or in the variant that sets it."""
        if sub[:1] == ("with",) and len(sub) > 1 and sub[1] in self.overrides:
            return self.overrides[sub[1]] + sub[1:]
        return self.path + sub

    def error(self, message: str, *, sub: Path = (), key: bool = False, hint: str | None = None,
              context: str | None = None):
        return self.source.error(self.where(sub), message, key=key, hint=hint,
                                 context=context or experiment_context(self.source, self.path))

    def written(self) -> str:
        """The reference as written in the file (``${VAR}`` unexpanded), for reports."""
        raw = self.source.raw_value(self.path, self.uses)
        raw = raw.get("uses", self.uses) if isinstance(raw, dict) else raw
        return raw if isinstance(raw, str) else self.uses


def experiment_context(source: SourceMap, path: Path) -> str | None:
    """``experiment 'x'`` for a path inside an experiment, read from the file as written."""
    at = path[:2] if len(path) >= 2 and path[0] == "experiments" and isinstance(path[1], int) else ()
    if at == () and path[:1] == ("experiments",):
        return None
    found = source.raw_value(at + ("id",), None)
    return f"experiment '{found}'" if isinstance(found, str) else None


@dataclass(frozen=True)
class ScorerSpec:
    id: str
    name: str
    plugin: PluginSpec
    explicit_id: bool = False  # written as `id:`, else taken from `uses:`
    threshold: float | None = None
    negate: bool = False
    has_value: bool = False
    value: Any = None


@dataclass(frozen=True)
class CriterionSpec:
    type: str
    min: float | None  # the bound of mean_score, pass_rate and items; the other types have a max
    scorer: str | None = None
    label: str | None = None
    severity: str = "error"
    description: str | None = None
    source: str | None = None  # "file:line" where it is written
    max: float | None = None
    percentile: int | str | None = None  # latency: 50, 90, 95, 99 or "max"
    per_item: bool = False  # tokens and cost: the mean per completed item, not the whole experiment's
    bound: str = "point"  # mean_score and pass_rate: "lower" holds the interval's lower end to min
    baseline: str | None = None  # no_regression: a run id or a tag (yamleval.lifecycle.baseline)
    alpha: float | None = None
    margin: float | None = None
    metric: str | None = None  # judge_agreement: kappa (default) or agreement


@dataclass(frozen=True)
class DatasetSpec:
    path: Path
    source: SourceMap = field(repr=False, compare=False)
    base_dir: str = "."
    items: list | None = None
    file: str | None = None
    format: str | None = None
    plugin: PluginSpec | None = None
    name: str | None = None
    fields: Mapping[str, str] = field(default_factory=dict)
    limit: int | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold secrets: never reported
    page_size: int = 200
    items_path: str | None = None
    total_path: str | None = None
    next_path: str | None = None

    def error(self, message: str, *, sub: Path = (), hint: str | None = None):
        return self.source.error(self.path + sub, message, hint=hint, context=self.context())

    def describe(self) -> str:
        """What the dataset is, in a few words, for reports."""
        if self.file:
            written = self.source.raw_value(self.path + ("file",), self.file)
            return written if isinstance(written, str) else self.file
        if self.items is not None:
            return f"{len(self.items)} inline items"
        if self.url:
            written = self.source.raw_value(self.path + ("url",), self.url)
            return (written if isinstance(written, str) else self.url).split("?")[0]
        return self.plugin.written() if self.plugin else f"registered dataset '{self.name}'"

    def context(self) -> str | None:
        """``experiment 'x'``, for messages about this dataset."""
        return experiment_context(self.source, self.path)


@dataclass(frozen=True)
class CacheSettings:
    """An experiment's ``cache:``: whether its runner's answers and its judges' are kept, for how
    long, in which file; ``refresh``: read nothing, keep every new answer (``--refresh-cache``)."""

    runner: bool = False
    judges: bool = True
    ttl: float = 7 * 86400.0
    max_size: int = 2 * 1000 ** 3
    path: str = os.path.join(".yamleval", "cache.db")
    refresh: bool = False


@dataclass(frozen=True)
class ExecutorSettings:
    """An experiment's ``executor:``: ``local`` (threads in this process) or ``ray`` (a task per
    item on a Ray cluster: ``address`` None starts one for the run, ``auto`` or host:port joins
    one; ``num_cpus`` per item; ``runtime_env`` as Ray takes it, the config's folder its working_dir)."""

    uses: str = "local"
    address: str | None = None
    num_cpus: float = 1.0
    runtime_env: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    """One experiment as written, with inherited defaults applied."""

    id: str
    dataset: DatasetSpec
    runner: PluginSpec
    scorers: tuple[ScorerSpec, ...]
    pass_criteria: tuple[CriterionSpec, ...]
    path: Path
    source: SourceMap = field(repr=False, compare=False)
    base_dir: str = "."
    label: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = None
    vars: Mapping[str, Any] = field(default_factory=dict)
    models: Mapping[str, Any] = field(default_factory=dict, repr=False)  # name -> endpoint settings (expanded)
    concurrency: int = DEFAULTS["concurrency"]
    timeout: float = DEFAULTS["timeout"]
    retries: int = DEFAULTS["retries"]
    confidence: float = DEFAULTS["confidence"]  # of the intervals around its pass rates and means
    repeats: int = DEFAULTS["repeats"]  # runs of each item
    reduce: str = DEFAULTS["reduce"]  # how an item's repeats become its verdict (``repeats``)
    cache: CacheSettings = CacheSettings()  # what of its answers the cache keeps (``yamleval.calls.answers``)
    budget: Budget | None = None  # what it may spend (``yamleval.engine.budget``)
    breakdowns: tuple[str, ...] | None = None  # item fields its figures are broken down by; None: the default
    executor: ExecutorSettings = ExecutorSettings()  # where its items run
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    secrets: Secrets = field(default_factory=Secrets, repr=False, compare=False)  # of the project's whole load
    variant: Variant | None = None  # one of its ``variants:``: its id is then ``experiment/variant``

    def context(self, scorer: str | None = None) -> str:
        """``experiment 'x' › scorer 'y'``, for messages."""
        text = f"experiment '{self.id}'"
        return text + (f" › scorer '{scorer}'" if scorer else "")


_SIZES = {"B": 1, "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "TB": 1000 ** 4}


def size_bytes(text: str) -> int:
    """``2GB`` in bytes: a number and B, KB, MB, GB or TB (the schema checks the form)."""
    found = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?) ?([A-Z]+)", text.strip())
    return int(float(found.group(1)) * _SIZES[found.group(2)])


def cache_settings(data: Mapping[str, Any], base_dir: str) -> CacheSettings:
    defaults = CacheSettings()
    return CacheSettings(
        runner=data.get("runner", defaults.runner), judges=data.get("judges", defaults.judges),
        ttl=seconds(data["ttl"]) if "ttl" in data else defaults.ttl,
        max_size=size_bytes(data["max_size"]) if "max_size" in data else defaults.max_size,
        path=os.path.join(base_dir, data["path"]) if "path" in data else defaults.path)


def executor_settings(data: Mapping[str, Any]) -> ExecutorSettings:
    return ExecutorSettings(uses=data.get("uses", "local"), address=data.get("address"),
                            num_cpus=float(data.get("num_cpus", 1)), runtime_env=dict(data.get("runtime_env") or {}))


def _plugin(value: Any, path: Path, source: SourceMap) -> PluginSpec:
    if isinstance(value, str):
        return PluginSpec(value, {}, path, source)
    return PluginSpec(value["uses"], value.get("with") or {}, path, source)


def _scorer_name(uses: str) -> str:
    return uses.rpartition(":")[2].rpartition(".")[2] if ":" in uses else uses


def build_scorers(entries: list, path: Path, source: SourceMap) -> tuple[ScorerSpec, ...]:
    out = []
    for index, entry in enumerate(entries):
        at = path + (index,)
        plugin = _plugin(entry, at, source)
        entry = entry if isinstance(entry, dict) else {}
        default_id = _scorer_name(plugin.uses)
        out.append(ScorerSpec(
            id=entry.get("id", default_id),
            name=entry.get("name", entry.get("id", default_id)),
            plugin=plugin,
            explicit_id="id" in entry,
            threshold=entry.get("threshold"),
            negate=entry.get("negate", False),
            has_value="value" in entry,
            value=entry.get("value"),
        ))
    return tuple(out)


def build_dataset(data: Mapping[str, Any], path: Path, source: SourceMap, base_dir: str) -> DatasetSpec:
    plugin = _plugin({"uses": data["uses"], "with": data.get("with")}, path, source) if "uses" in data else None
    remote = "url" in data
    return DatasetSpec(
        path=path, source=source, base_dir=base_dir,
        items=None if remote else data.get("items"), file=data.get("file"), format=data.get("format"),
        plugin=plugin, name=data.get("name"), fields=data.get("fields") or {},
        limit=data.get("limit"), url=data.get("url"), headers=data.get("headers") or {},
        page_size=data.get("page_size", 200), items_path=data.get("items") if remote else None,
        total_path=data.get("total"), next_path=data.get("next"),
    )


def build_experiment(data: Mapping[str, Any], raw: Mapping[str, Any], path: Path, source: SourceMap,
                     base_dir: str, defaults: Mapping[str, Any], project_vars: Mapping[str, Any],
                     models: Mapping[str, Any] | None = None) -> Experiment:
    """The typed experiment at ``path``; ``raw`` is the same mapping before ``${VAR}`` expansion."""
    settings = {**DEFAULTS, **defaults, **{k: data[k] for k in DEFAULTS if k in data}}
    runner = _plugin(data["runner"], path + ("runner",), source)
    if isinstance(data["runner"], dict) and "timeout" in data["runner"]:
        settings["timeout"] = data["runner"]["timeout"]
    return Experiment(
        id=data["id"],
        dataset=build_dataset(data["dataset"], path + ("dataset",), source, base_dir),
        runner=runner,
        scorers=build_scorers(data.get("scorers") or [], path + ("scorers",), source),
        pass_criteria=tuple(
            CriterionSpec(type=c["type"], min=c.get("min"), max=c.get("max"), scorer=c.get("scorer"), label=c.get("label"),
                          severity=c.get("severity", "error"), description=c.get("description"),
                          percentile=c.get("percentile"), per_item=c.get("per_item", False),
                          bound=c.get("bound", "point"),
                          source=source.locate(path + ("pass_criteria", index)).file_line(),
                          baseline=c.get("baseline"), alpha=c.get("alpha", 0.05), margin=c.get("margin", 0.0),
                          metric=c.get("metric", "kappa") if c["type"] == "judge_agreement" else None)
            for index, c in enumerate(data.get("pass_criteria") or [])
        ),
        path=path, source=source, base_dir=base_dir,
        # what reports show comes from the text as written, so no ${VAR} value reaches them
        label=raw.get("label"), description=raw.get("description"),
        tags=tuple(dict.fromkeys(t.strip() for t in raw.get("tags") or [] if t.strip())),
        metadata=raw.get("metadata"),
        vars={**project_vars, **(data.get("vars") or {})},
        models=dict(models or {}),
        concurrency=settings["concurrency"], timeout=float(settings["timeout"]), retries=settings["retries"],
        confidence=float(settings["confidence"]),
        repeats=settings["repeats"], reduce=settings["reduce"],
        cache=cache_settings({**(defaults.get("cache") or {}), **(data.get("cache") or {})}, base_dir),
        # each limit of the experiment's budget: its own, else the one of ``defaults``
        budget=Budget.read({**(defaults.get("budget") or {}), **(data.get("budget") or {})}),
        breakdowns=tuple(data["breakdowns"]) if "breakdowns" in data else None,
        # each key of the experiment's executor: its own, else the one of ``defaults``
        executor=executor_settings({**(defaults.get("executor") or {}), **(data.get("executor") or {})}),
        raw=raw,
    )
