"""Commands about the project in this folder: init, validate, preview, schema."""
from __future__ import annotations

import click

from yamleval import api
from yamleval.cli import cli


@cli.command()
@click.option("--base-url", metavar="URL", help="The OpenAI-compatible endpoint of the model to test"
              " (e.g. http://127.0.0.1:8080/v1); with --model.")
@click.option("--model", metavar="NAME", help="The model to test at --base-url: the project's runner asks it.")
@click.option("--force", is_flag=True, help="Overwrite those of the files that exist.")
def init(base_url, model, force):
    """Start a project in this folder: evals.yaml, a dataset of cases, a runner plugin that
    answers offline, and the schema editors read. `yamleval run` then evaluates it.

    With --base-url and --model, the project tests that model instead: `models:` names it
    and its runner is `openai` (a key, when the endpoint needs one, goes in as
    `api_key: "${OPENAI_API_KEY}"`)."""
    files = api.init(base_url=base_url, model=model, force=force)
    click.echo(f"wrote {', '.join(files)}\nnext: yamleval run")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--set", "sets", multiple=True, metavar="[ID:]PATH=VALUE", help="Check with this value set, as `run`.")
def validate(paths, sets):
    """Check PATHS (default: evals.yaml) without running anything: schema, ids, plugins,
    arguments, datasets; list the variants of the experiments that have them. Exit code 0
    when valid, 2 otherwise."""
    found = api.validate(paths, sets=sets)
    count = len(found.experiments)
    click.echo(f"ok: {count} experiment{'s' if count != 1 else ''} in {', '.join(found.files)}")
    for experiment_id, experiments in found.experiments.items():
        if experiments[0].variant is not None:
            click.echo(f"{experiment_id}: {len(experiments)} variant{'' if len(experiments) == 1 else 's'}")
            for variant in (e.variant for e in experiments):
                notes = ", ".join(n for n, on in (("baseline", variant.baseline), ("not gated", not variant.gate)) if on)
                click.echo(f"  {variant.id}" + (f"  {variant.label}" if variant.label else "")
                           + (f"  ({notes})" if notes else ""))


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-e", "--experiment", "experiment_ids", multiple=True, metavar="ID",
              help="Preview only this experiment (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), default=3, show_default=True,
              help="Show the requests of the first N items of each experiment.")
def preview(paths, experiment_ids, limit):
    """Show what a run of PATHS (default: evals.yaml) would send, and estimate its calls, tokens
    and cost, without calling anything: the runner's request and every LLM judge's prompt for
    the first items, secrets masked. Exit code 0, or 2 for an invalid config."""
    click.echo(api.preview(paths, experiments=experiment_ids, limit=limit).text, nl=False)


@cli.command()
def schema():
    """Print the JSON Schema of yamleval's YAML files."""
    click.echo(api.schema(), nl=False)
