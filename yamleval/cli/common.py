"""What several commands share: loading the config, reading --format, finding the store."""
from __future__ import annotations

import os

import click

from yamleval.runs import DEFAULT_STORE

DEFAULT_CONFIG = "evals.yaml"

JUNIT_FAMILY_OPTION = click.option(
    "--junit-family", type=click.Choice(["xunit2", "xunit1"]),
    help="junit.xml as xunit2 (valid against junit-10.xsd) or xunit1 (with each case's file and line)"
         " [run: the config's `reports.junit.family`; else xunit2].")


def load(paths: tuple[str, ...]):
    from yamleval.config.loader import load_project

    return load_project(list(paths) or [DEFAULT_CONFIG])


def report_formats(text: str) -> list[str]:
    """The report formats a comma-separated ``--format`` names."""
    from yamleval.errors import UsageError
    from yamleval.reporting import FORMATS

    wanted = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    return wanted


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
