"""People's verdicts: review (one item, or a file of them) and agreement."""
from __future__ import annotations

import json

import click

from yamleval import api
from yamleval.records import figures
from yamleval.cli import cli
from yamleval.cli.history import STORE_OPTION


@cli.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("experiment", required=False)
@click.argument("item", required=False)
@click.option("--verdict", type=click.Choice(["pass", "fail"]), help="The item's verdict, as a person gives it.")
@click.option("--note", help="Why: kept with the review.")
@click.option("--by", "by", metavar="NAME", help="Who reviewed it (with --import: for rows without a `by`).")
@click.option("--import", "import_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Reviews from a CSV or JSONL file: experiment, item, verdict, note, by.")
@STORE_OPTION
def review(run_ref, experiment, item, verdict, note, by, import_file, store_file):
    """Give a person's verdict on ITEM of EXPERIMENT in a stored RUN (or those of --import FILE).

    Every review is kept; an item's newest counts instead of its scorers' verdict in every report,
    comparison and gate of the run from then on (`yamleval report RUN --gate` recounts it)."""
    from yamleval.reporting.text import terminal_line

    done = api.review(run_ref, experiment, item, verdict, note=note, by=by, import_file=import_file, store=store_file)
    for r in done.reviews[:20]:
        click.echo(f"{terminal_line(r.experiment_id, 120)} / {terminal_line(r.item_id, 120)}: {r.verdict} by"
                   f" {terminal_line(r.by, 120)} (its scorers: {r.machine})")
    if len(done.reviews) > 20:
        click.echo(f"… and {len(done.reviews) - 20} more")
    click.echo(f"{len(done.reviews)} review{'s' if len(done.reviews) != 1 else ''} stored in run {done.run.run_id}")
    for result in done.results:
        s = result.summary
        click.echo(f"{result.experiment_id}: {s.passed}/{s.completed} items pass ({figures.percent(s.pass_rate)}),"
                   f" {s.reviewed} with a person's verdict, {s.overruled} overruled")


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@STORE_OPTION
def agreement(run_ref, fmt, store_file):
    """How far each scorer of a stored RUN agrees with people's verdicts (reviews and dataset labels):
    n, agreement, Cohen's kappa with its interval, and the confusion matrix."""
    from yamleval.reporting import people

    found = api.agreement(run_ref, store=store_file)
    if fmt == "json":
        click.echo(json.dumps({"run": found.run.run_id, "experiments": {
            r.experiment_id: people.people_dict(r.summary) or {"reviewed": 0, "overruled": 0, "agreement": {}}
            for r in found.results}}, indent=2))
        return
    click.echo(f"run {found.run.run_id}")
    for result in found.results:
        lines = people.text_lines(result.summary)
        click.echo(f"{result.experiment_id}: " + ("no human verdicts (review items with `yamleval review`, or give"
                                                  " the dataset a `human_verdict` column)" if not lines else ""))
        for line in lines:
            click.echo("  " + line)
