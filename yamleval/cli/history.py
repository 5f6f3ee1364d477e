"""Commands over stored runs: runs, show, tag, report, merge, export, compare, history."""
from __future__ import annotations

import sys

import click

from yamleval import api
from yamleval.records import figures
from yamleval.cli import cli
from yamleval.cli.common import JUNIT_FAMILY_OPTION, format_names, github_outputs
from yamleval.records.errors import ExitCode, display_path

STORE_OPTION = click.option("--store", "store_file", type=click.Path(dir_okay=False),
                            help="The results database [./evals.yaml `store:`, else .yamleval/results.db].")
VERDICTS_OPTION = click.option("--verdicts", type=click.Choice(["reviewed", "machine"]), default="reviewed",
                               show_default=True, help="Which verdicts count: a person's where there is one"
                               " (`yamleval review`, a dataset's human_verdict), or the scorers' alone.")


@cli.command()
@STORE_OPTION
@click.option("-n", "--limit", default=20, show_default=True, help="How many runs to list.")
@click.option("--ids", "ids_only", is_flag=True, help="Only the run ids, newest first, one a line (for scripts).")
def runs(store_file, limit, ids_only):
    """List recent runs: id, start, experiments, status, verdict, pass rate, mean score, tags, and
    the run a re-scored one came from."""
    listed = api.runs(store=store_file, limit=limit)
    if ids_only:
        for found in listed:
            click.echo(found.run.run_id)
        return
    rows = [(f.run.run_id, f.run.started_at[:19].replace("T", " "), ",".join(f.experiment_ids), f.run.status,
             _verdict(f.run), figures.percent(f.summary.pass_rate), figures.number(f.summary.mean_score),
             ",".join(f.tags), f.run.rescored_from or "") for f in listed]
    if not rows:
        click.echo("no runs yet")
        return
    header = ("run", "started (UTC)", "experiments", "status", "verdict", "pass rate", "mean score", "tags",
              "rescored from")
    if not any(row[-1] for row in rows):  # no re-scored run listed: no column for it
        header, rows = header[:-1], [row[:-1] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())


def _verdict(run) -> str:
    """PASSED or FAILED, as the run's exit code gated (an aborted run fails); "-" for one that
    has no verdict: running, interrupted or crashed."""
    if run.status == "aborted":
        return "FAILED"
    if run.passed is None or run.status != "completed":
        return "-"
    return "PASSED" if run.passed else "FAILED"


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@STORE_OPTION
@click.option("--config", "config", is_flag=True,
              help="Print the run's configuration as stored instead: each file as written, ${VAR} unexpanded.")
@click.option("--by", "by", metavar="FIELD",
              help="Break each experiment's figures down by an item field: metadata.KEY or tags.")
def show(run_ref, store_file, config, by):
    """The summary of a stored RUN and its failing items.

    RUN is a run id, a tag (its newest completed run), a unique prefix of a run id, or `latest`
    (the default)."""
    from yamleval.reporting.console import summary_text

    shown = api.show(run_ref, store=store_file, by=by, config=config)
    info = shown.run
    if config:
        click.echo(_config_listing(info), nl=False)
        return
    click.echo(f"run {info.run_id} · {info.status} · started {info.started_at}"
               + (f" · git {info.git_commit[:12]}{' (dirty)' if info.git_dirty else ''}" if info.git_commit else "")
               + (f" · rescored from {info.rescored_from}" if info.rescored_from else "")
               + (f" · errors of {info.retried_from} retried" if info.retried_from else ""))
    click.echo("")
    for result, found in zip(shown.results, shown.breakdowns or (None,) * len(shown.results)):
        click.echo(summary_text(result) + "\n" + ("" if found is None else _breakdown_text(result, found) + "\n"))


def _breakdown_text(result, found) -> str:
    from yamleval.reporting import breakdowns

    return "\n".join(breakdowns.table_lines(found, figures.level(result.summary.confidence)))


@cli.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("names", metavar="NAME...", nargs=-1, required=True)
@STORE_OPTION
def tag(run_ref, names, store_file):
    """Tag a stored RUN with each NAME (e.g. `main`), for a no_regression criterion's baseline.

    RUN is a run id, a tag (its newest completed run), a unique prefix of a run id, or `latest`."""
    tagged = api.tag(run_ref, names, store=store_file)
    click.echo(f"run {tagged.run.run_id} tagged {', '.join(tagged.tags)}")


def _config_listing(info) -> str:
    """Each stored config file under a ``# NAME`` line (a YAML comment), safe to print."""
    from yamleval.reporting.text import terminal_block

    if not info.config_text:
        return f"# run {info.run_id} stored no configuration\n"
    text = "".join(f"# {name}\n{body}" + ("" if body.endswith("\n") else "\n")
                   for name, body in sorted(info.config_text.items()))
    return terminal_block(text, limit=4 * len(text))  # whole: no cut


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@STORE_OPTION
@click.option("--format", "formats", default="html,junit,json,markdown", show_default=True,
              help="Comma-separated: html, junit, json, markdown.")
@click.option("--report-dir", default="reports", show_default=True, type=click.Path(file_okay=False))
@JUNIT_FAMILY_OPTION
@click.option("--gate", is_flag=True, help="Exit as the stored run's verdict, as `yamleval run` would (inside GitHub"
              " Actions, with its job summary and annotations): for the job that merges shards.")
@click.option("--max-html-mb", type=click.FloatRange(0, min_open=True), metavar="MB",
              help="The size report.html keeps within by cutting long texts [25].")
@VERDICTS_OPTION
def report(run_ref, store_file, formats, report_dir, junit_family, gate, max_html_mb, verdicts):
    """Render the reports of a stored RUN again.

    RUN is a run id, a tag (its newest completed run), a unique prefix of a run id, or `latest`
    (the default)."""
    outcome = api.report(run_ref, store=store_file, formats=format_names(formats), report_dir=report_dir,
                         junit_family=junit_family, gate=gate, max_html_mb=max_html_mb, verdicts=verdicts)
    for path in outcome.reports:
        click.echo(f"report: {display_path(path)}")
    if gate:
        github_outputs(outcome.run, outcome.results, outcome.reports)
        _verdicts(outcome.results)
        sys.exit(outcome.exit_code)


def _verdicts(results) -> None:
    from yamleval.reporting.console import verdict_word

    for result in results:
        click.echo(f"{result.experiment_id}: {verdict_word(result, short=True)}"
                   f" ({result.summary.passed}/{result.summary.completed} items passed)")


@cli.command()
@click.argument("out", metavar="OUT", type=click.Path(dir_okay=False))
@click.argument("shards", metavar="SHARD_STORE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
def merge(out, shards):
    """Merge the results databases of a sharded run's jobs (`yamleval run --shard I/N`) into
    one run, stored in OUT (a results database, made if missing).

    Every shard must be there, once, each run to its end with the same config. The merged
    run's summaries, criteria and verdict are counted from all the items: `yamleval report
    RUN --store OUT --gate` writes its reports and exits with its verdict."""
    outcome = api.merge(out, shards)
    _verdicts(outcome.results)
    click.echo(f"merged {len(shards)} shards into run {outcome.run.run_id} in {display_path(out)}:"
               f" `yamleval report {outcome.run.run_id} --store {display_path(out)} --gate` writes its reports"
               " and exits with its verdict")


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@STORE_OPTION
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl"]), default="csv", show_default=True)
@click.option("--experiment", "experiment_ids", multiple=True, metavar="ID", help="Only this experiment (repeatable).")
@click.option("--status", "statuses", multiple=True, type=click.Choice(["passed", "failed", "error", "skipped"]),
              help="Only items with this status (repeatable).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of the standard output.")
def export(run_ref, store_file, fmt, experiment_ids, statuses, output):
    """Write the items of a stored RUN as CSV or JSON lines, in dataset order, read from the store as
    they are written (any size): id, status, input, output, expected, error, latency, tokens and a
    score per scorer; the same columns as the report page's export buttons.

    RUN is a run id, a tag (its newest completed run), a unique prefix of a run id, or `latest`
    (the default)."""
    done = api.export(run_ref, store=store_file, format=fmt, experiments=experiment_ids, statuses=statuses,
                      output=click.get_text_stream("stdout") if output is None else output)
    if done.path is not None:
        click.echo(f"export: {display_path(done.path)} ({done.count:,} item{'' if done.count == 1 else 's'})", err=True)


@cli.command()
@click.argument("base_ref", metavar="BASE")
@click.argument("candidate_ref", metavar="[CANDIDATE]", default="latest")
@STORE_OPTION
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), default="text",
              show_default=True, help="html: one self-contained page (redirect it to a file: > compare.html).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True,
              help="Significance level of each paired verdict (and 1 − alpha the level of its interval).")
@click.option("--margin", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="The smallest change that counts: of a pass rate or a mean score, in [0, 1] (0.02: 2 points).")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when an experiment or scorer regressed significantly (paired test at --alpha, beyond "
                   "--margin) or the candidate run did not complete.")
@click.option("--fail-on-any-regression", is_flag=True,
              help="Exit 1 when any item got worse (e.g. passed → failed) or the candidate run did not complete.")
@VERDICTS_OPTION
def compare(base_ref, candidate_ref, store_file, fmt, alpha, margin, fail_on_regression, fail_on_any_regression,
            verdicts):
    """Compare two stored runs item by item: flips, score deltas, added and removed items, how
    their configs differ, and a paired verdict per experiment and scorer: regressed, improved
    or no significant change.

    BASE and CANDIDATE are each a run id, a tag (its newest completed run), a unique prefix of a
    run id, or `latest`; CANDIDATE is `latest` when it is not given. Two variants compare as two
    runs do: `RUN:VARIANT` (or `RUN:EXPERIMENT/VARIANT`, or the variant's address in the Eval
    Center) on both sides, e.g. `compare latest:baseline latest:new-prompt`."""
    compared = api.compare(base_ref, candidate_ref, store=store_file, alpha=alpha, margin=margin, format=fmt,
                           verdicts=verdicts)
    click.echo(compared.text, nl=False)
    if fail_on_regression or fail_on_any_regression:
        failure = compared.comparison.gate_failure(strict=fail_on_any_regression)
        if failure:
            click.echo(f"regression gate failed: {failure}", err=True)
            sys.exit(ExitCode.FAILED)


@cli.command("history")
@STORE_OPTION
@click.option("--last", "last", default=10, show_default=True, type=click.IntRange(min=1, max=1000),
              help="How many of the newest runs.")
@click.option("--tag", metavar="NAME", help="Only runs with this tag (`run --tag`, `yamleval tag`).")
@click.option("--html", "html_file", type=click.Path(dir_okay=False),
              help="Write a self-contained page with a chart per experiment instead (links to RUN_ID/report.html"
                   " beside it).")
def history_command(store_file, last, tag, html_file):
    """How each experiment has moved over the newest runs: pass rate, mean score and verdict per
    run, and the items whose verdict changes most often."""
    found = api.history(store=store_file, last=last, tag=tag, html=html_file)
    if found.page is not None:
        click.echo(f"history: {display_path(found.page)}")
        return
    histories = found.experiments
    if not histories:
        click.echo("no runs yet" if tag is None else f"no run tagged {tag}")
    for found in histories:
        click.echo(_history_text(found))


def _history_text(found) -> str:
    from yamleval.reporting.text import clean_text

    rows = [(p.run.run_id, p.run.started_at[:19].replace("T", " "), p.run.status, "passed" if p.passed else "FAILED",
             figures.percent(p.summary.pass_rate), figures.number(p.summary.mean_score)) for p in found.points]
    header = ("run", "started (UTC)", "status", "verdict", "pass rate", "mean score")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = [clean_text(found.experiment_id, limit=200)]
    lines += ["  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in [header, *rows]]
    if found.churn:
        lines.append("  verdicts that change most: " + "; ".join(
            f"{clean_text(c.item_id, limit=80)} ({c.changes}×: {' '.join(s or '–' for s in c.statuses)})"
            for c in found.churn[:5]))
    return "\n".join(lines) + "\n"
