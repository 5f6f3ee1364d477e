"""An experiment's ``variants:`` (or ``matrix:``) as one experiment per variant.

A variant overrides keys of the runner's ``with:`` and of ``vars:``; everything else (dataset,
scorers, criteria, repeats, timeouts) is the experiment's. Each runs as an experiment of its own
whose id is ``experiment/variant``, so the store, resume and ``compare`` keep every variant's
results apart; the reports group them back. The baseline (``baseline: true``, else the first)
comes first, so the others can be compared with answers already stored (``pairwise``).

``matrix: {model: [small, big], system: [terse, kind]}`` is the cartesian product of its lists:
each key names an entry of the runner's ``with:`` (first) or of ``vars:``, and each variant's
id joins its values (``small-terse``).
"""
from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import os
import re
from typing import Any, Mapping

from yamleval.config.model import Experiment
from yamleval.records.errors import ConfigError
from yamleval.records.types import Variant

ID_PART = 24  # characters of one matrix value in a variant's id
MAX_VARIANTS = 1000  # variants one matrix may stand for, unless YAMLEVAL_MAX_VARIANTS says otherwise


def _slug(value: Any, key: str, position: int) -> str:
    """A value as a part of an id: its letters and digits, else its key and position (``suffix-2``)."""
    text = re.sub(r"[^a-z0-9.]+", "-", str(value).lower()).strip("-.")
    return text[:ID_PART].strip("-.") or f"{key}-{position + 1}"


def _matrix(experiment: Experiment, matrix: Mapping[str, list], errors: list[ConfigError]) -> list[dict]:
    """The variants a matrix stands for, as ``variants:`` entries."""
    known_with, known_vars = experiment.runner.with_, experiment.vars
    for key in matrix:
        if key not in known_with and key not in known_vars:
            close = difflib.get_close_matches(key, [*known_with, *known_vars], n=1, cutoff=0.6)
            names = ", ".join([*known_with, *known_vars]) or "none"
            errors.append(experiment.source.error(
                experiment.path + ("matrix", key), f"the matrix key '{key}' names no entry of the runner's"
                " `with:` or of `vars:`", key=True, context=experiment.context(),
                hint=f"did you mean '{close[0]}'?" if close else f"entries there: {names}"))
    if errors:
        return []
    count, limit = math.prod(len(values) for values in matrix.values()), _max_variants()
    if count > limit:
        sizes = " × ".join(str(len(values)) for values in matrix.values())
        errors.append(experiment.source.error(
            experiment.path + ("matrix",), f"the matrix stands for {count:,} variants ({sizes}), more than"
            f" the {limit:,} a run may have", key=True, context=experiment.context(),
            hint="give fewer values, or split it into experiments of their own; the environment"
                 " variable YAMLEVAL_MAX_VARIANTS raises the limit"))
        return []
    positions = list(itertools.product(*(range(len(values)) for values in matrix.values())))
    combinations = [{key: matrix[key][at] for key, at in zip(matrix, where)} for where in positions]
    natural = ["-".join(_slug(chosen[key], key, at) for key, at in zip(matrix, where))
               for chosen, where in zip(combinations, positions)]
    entries = []
    for chosen, variant_id in zip(combinations, _unique(natural)):
        entries.append({"id": variant_id, "label": ", ".join(f"{k}={v}" for k, v in chosen.items()),
                        "with": {k: v for k, v in chosen.items() if k in known_with},
                        "vars": {k: v for k, v in chosen.items() if k not in known_with},
                        "_path": experiment.path + ("matrix",)})
    return entries


def _unique(ids: list[str]) -> list[str]:
    """``ids`` with each one met before numbered (``gpt-2``), never as an id another one has."""
    taken, out = set(ids), []
    used: set[str] = set()
    for variant_id in ids:
        if variant_id in used:  # two values read alike ("A b", "a-b")
            number = 2
            while f"{variant_id}-{number}" in taken or f"{variant_id}-{number}" in used:
                number += 1
            variant_id = f"{variant_id}-{number}"
        used.add(variant_id)
        out.append(variant_id)
    return out


def _max_variants() -> int:
    try:
        return max(1, int(os.environ.get("YAMLEVAL_MAX_VARIANTS", MAX_VARIANTS)))
    except ValueError:
        return MAX_VARIANTS


def expand(experiment: Experiment, data: Mapping[str, Any], errors: list[ConfigError]) -> list[Experiment]:
    """``experiment`` as its variants (itself, without any); problems are added to ``errors``."""
    if "variants" in data and "matrix" in data:
        errors.append(experiment.source.error(experiment.path + ("matrix",), "give `variants:` or `matrix:`, not both",
                                              key=True, context=experiment.context()))
        return [experiment]
    if "matrix" in data:
        entries = _matrix(experiment, data["matrix"], errors)
    else:
        entries = [dict(entry, _path=experiment.path + ("variants", n)) for n, entry in enumerate(data.get("variants") or [])]
    if not entries:
        return [experiment]
    first_seen: dict[str, int] = {}
    for n, entry in enumerate(entries):
        if entry["id"] in first_seen:
            errors.append(experiment.source.error(entry["_path"] + ("id",), f"duplicate variant id '{entry['id']}'",
                                                  context=experiment.context(), hint="variant ids must be unique"))
        first_seen.setdefault(entry["id"], n)
    marked = [n for n, entry in enumerate(entries) if entry.get("baseline")]
    for n in marked[1:]:
        errors.append(experiment.source.error(entries[n]["_path"] + ("baseline",), "a second baseline variant",
                                              context=experiment.context(),
                                              hint=f"'{entries[marked[0]]['id']}' is the baseline already"))
    baseline = marked[0] if marked else 0
    ordered = [entries[baseline]] + [e for n, e in enumerate(entries) if n != baseline]
    out = []
    for entry in ordered:
        variant = Variant(entry["id"], experiment.id, entry.get("label"), entry is entries[baseline],
                          entry.get("gate", True))
        overrides = entry.get("with") or {}
        at = entry["_path"] + (() if "matrix" in data else ("with",))
        runner = dataclasses.replace(experiment.runner, with_={**experiment.runner.with_, **overrides},
                                     overrides=dict.fromkeys(overrides, at))
        out.append(dataclasses.replace(experiment, id=f"{experiment.id}/{variant.id}", runner=runner,
                                       vars={**experiment.vars, **(entry.get("vars") or {})}, variant=variant))
    return out


def parents(experiments: list[Experiment]) -> dict[str, list[Experiment]]:
    """The experiments as written, by id: each with its variants (or itself alone)."""
    grouped: dict[str, list[Experiment]] = {}
    for experiment in experiments:
        grouped.setdefault(experiment.variant.experiment_id if experiment.variant else experiment.id, []).append(experiment)
    return grouped


def told_once(found: list[tuple[Experiment, ConfigError]]) -> list[ConfigError]:
    """Each problem once: one that several variants share (a typo in their experiment's runner
    ``with:``, at one place in the file) is told once, of the experiment and the variants that have it."""
    shared: dict[tuple, tuple[ConfigError, list[Experiment]]] = {}
    for experiment, error in found:
        key = (error.location.prefix() if error.location else "", error.message, error.hint)
        shared.setdefault(key, (error, []))[1].append(experiment)
    told = []
    for error, experiments in shared.values():
        first = experiments[0]
        if len(experiments) > 1 and first.variant is not None and error.context:
            variant_ids = ", ".join(e.variant.id for e in experiments if e.variant is not None)
            of_all = f"experiment '{first.variant.experiment_id}' (variants {variant_ids})"
            error = ConfigError(error.message, error.location, error.hint,
                                error.context.replace(f"experiment '{first.id}'", of_all), error.source_line)
        told.append(error)
    return told
