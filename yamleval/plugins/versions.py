"""What each plugin a run uses is, as the run records it: yamleval's own (with its version), an
entry point, a module of the project's own files, or a distribution and its version."""
from __future__ import annotations

import sys
from typing import Iterable

from yamleval.config.model import Experiment
from yamleval.config.provenance import plugin_refs
from yamleval.plugins import registry


def plugin_versions(experiments: Iterable[Experiment], yamleval_version: str) -> dict[str, str]:
    """The distribution and version behind each plugin module; ``local`` for the project's own files."""
    versions: dict[str, str] = {}
    distributions = None
    for ref in plugin_refs(experiments):
        if ":" not in ref:
            versions[ref] = f"yamleval {yamleval_version}" if _is_builtin(ref) else "entry point"
            continue
        top = ref.partition(":")[0].split(".")[0]
        module = sys.modules.get(top)
        where = getattr(module, "__file__", None) or ""
        if where and not where.startswith(sys.prefix) and "site-packages" not in where:
            versions[ref] = "local"
            continue
        if distributions is None:
            from importlib.metadata import packages_distributions

            distributions = packages_distributions()
        names = distributions.get(top) or []
        versions[ref] = ", ".join(f"{n} {_version(n)}" for n in names) or "unknown"
    return versions


def _is_builtin(name: str) -> bool:
    return any(name in registry.builtins(kind) for kind in ("runners", "scorers", "datasets"))


def _version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"
