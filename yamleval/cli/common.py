"""What several commands share: loading the config, reading --format, finding the store."""
from __future__ import annotations

import os
from typing import Sequence

import click

from yamleval.lifecycle.run import DEFAULT_STORE

DEFAULT_CONFIG = "evals.yaml"

JUNIT_FAMILY_OPTION = click.option(
    "--junit-family", type=click.Choice(["xunit2", "xunit1"]),
    help="junit.xml as xunit2 (valid against junit-10.xsd) or xunit1 (with each case's file and line)"
         " [run: the config's `reports.junit.family`; else xunit2].")


def load(paths: tuple[str, ...], sets: tuple[str, ...] = ()):
    from yamleval.config.loader import load_project

    return load_project(list(paths) or [DEFAULT_CONFIG], sets=sets)


def report_formats(text: str, configured: Sequence[str] = ()) -> list[str]:
    """The report formats a comma-separated ``--format`` names, each with the settings the config
    gives it in ``configured`` (``html:10`` for ``max_html_mb: 10``, a JUnit family)."""
    from yamleval.records.errors import UsageError
    from yamleval.reporting import FORMATS

    wanted = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    settings = {f.partition(":")[0]: f for f in configured}
    return [settings.get(f, f) for f in wanted]


def store_path(given: str | None, config: str = DEFAULT_CONFIG) -> str:
    """``--store``, else the ``store:`` of ./evals.yaml, else .yamleval/results.db."""
    return given or config_path(config, "store") or DEFAULT_STORE


def config_path(config: str, *keys: str) -> str | None:
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


def github_outputs(run_info, results, written: Sequence[str] = ()) -> None:
    """Inside GitHub Actions: the job summary (``summary.md`` when it was just written) and annotations."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return
    from yamleval.reporting import github, markdown

    summary = next((path for path in written if os.path.basename(path) == "summary.md"), None)
    if summary is not None:
        with open(summary, encoding="utf-8") as handle:
            text = handle.read()
    else:
        text = markdown.render(run_info, results)
    github.append_step_summary(text, os.environ)
    for line in github.annotations(results):
        click.echo(line)
