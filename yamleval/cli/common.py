"""What several commands share: options, reading --format, GitHub Actions' outputs."""
from __future__ import annotations

import os
from typing import Sequence

import click

JUNIT_FAMILY_OPTION = click.option(
    "--junit-family", type=click.Choice(["xunit2", "xunit1"]),
    help="junit.xml as xunit2 (valid against junit-10.xsd) or xunit1 (with each case's file and line)"
         " [run: the config's `reports.junit.family`; else xunit2].")


def format_names(text: str) -> list[str]:
    """The report formats a comma-separated ``--format`` names (the api checks each)."""
    return [f.strip() for f in text.split(",") if f.strip()]


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
