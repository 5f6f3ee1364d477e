"""What several commands share: loading the config, choosing experiments, finding the store."""
from __future__ import annotations

import difflib
import os

from yamleval.errors import UsageError

DEFAULT_CONFIG = "evals.yaml"
DEFAULT_STORE = os.path.join(".yamleval", "results.db")


def load(paths: tuple[str, ...]):
    from yamleval.config.loader import load_project

    return load_project(list(paths) or [DEFAULT_CONFIG])


def select(project, wanted: tuple[str, ...]):
    experiments = list(project.experiments)
    if not wanted:
        return experiments
    known = {e.id: e for e in experiments}
    for name in wanted:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (experiments: {', '.join(known) or 'none'})"
            raise UsageError(f"no experiment with id '{name}'{hint}")
    return [known[name] for name in dict.fromkeys(wanted)]


def store_path(given: str | None, config: str = DEFAULT_CONFIG) -> str:
    """``--store``, else the ``store:`` of ./evals.yaml, else .yamleval/results.db."""
    if given:
        return given
    if os.path.isfile(config):
        from yamleval.config import yaml_source

        try:
            data, _ = yaml_source.load(config)
        except Exception:  # a broken config does not stop reading past runs
            data = None
        if isinstance(data, dict) and isinstance(data.get("store"), str):
            return os.path.join(os.path.dirname(config), data["store"])
    return DEFAULT_STORE
