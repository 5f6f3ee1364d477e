"""Commands about the config itself: validate, schema."""
from __future__ import annotations

import click

from yamleval.cli import cli
from yamleval.cli.common import load


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
def validate(paths):
    """Check PATHS (default: evals.yaml) without running anything: schema, ids, plugins,
    arguments, datasets. Exit code 0 when valid, 2 otherwise."""
    from yamleval import plan
    from yamleval.errors import raise_all

    project = load(paths)
    errors = []
    for experiment in project.experiments:
        errors.extend(plan.check(experiment))
    raise_all(errors)
    count = len(project.experiments)
    click.echo(f"ok: {count} experiment{'s' if count != 1 else ''} in {', '.join(project.files)}")


@cli.command()
def schema():
    """Print the JSON Schema of yamleval's YAML files."""
    from yamleval.config.schema import schema_text

    click.echo(schema_text(), nl=False)
