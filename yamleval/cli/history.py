"""Commands over stored runs: runs, show, tag, report, merge, export, compare."""
from __future__ import annotations

import sys

import click

from yamleval.analysis import figures
from yamleval.cli import cli
from yamleval.cli.common import JUNIT_FAMILY_OPTION, github_outputs, report_formats, store_path
from yamleval.records.errors import ExitCode, display_path

STORE_OPTION = click.option("--store", "store_file", type=click.Path(dir_okay=False),
                            help="The results database [./evals.yaml `store:`, else .yamleval/results.db].")


def _open(store_file):
    import os

    from yamleval.records.errors import UsageError
    from yamleval.store.writer import Store

    from yamleval.store import postgres

    path = store_path(store_file)
    if not postgres.is_url(path) and not os.path.isfile(path):
        raise UsageError(f"no results database at {path}; run `yamleval run` first, or give --store")
    return Store(path)


def _rate(summaries) -> str:
    judged = sum(s.completed - s.skipped for s in summaries)
    passed = sum(s.passed for s in summaries)
    return figures.percent(passed / judged if judged else None)


def _mean(summaries) -> str:
    scores = [(s.mean_score, s.completed) for s in summaries if s.mean_score is not None]
    weight = sum(n for _, n in scores)
    return figures.number(sum(m * n for m, n in scores) / weight if weight else None)


@cli.command()
@STORE_OPTION
@click.option("-n", "--limit", default=20, show_default=True, help="How many runs to list.")
@click.option("--ids", "ids_only", is_flag=True, help="Only the run ids, newest first, one a line (for scripts).")
def runs(store_file, limit, ids_only):
    """List recent runs: id, start, experiments, status, pass rate, mean score, tags, and the run
    a re-scored one came from."""
    from yamleval.store import tags as run_tags

    store = _open(store_file)
    if ids_only:
        for info in store.runs(limit):
            click.echo(info.run_id)
        return
    rows = []
    for info in store.runs(limit):
        summaries = store.summaries(info.run_id)
        ids = store.run_detail(info.run_id, "experiment_ids") or []
        rows.append((info.run_id, info.started_at[:19].replace("T", " "), ",".join(ids), info.status,
                     _rate(summaries), _mean(summaries), ",".join(run_tags.of_run(store, info.run_id)),
                     info.rescored_from or ""))
    if not rows:
        click.echo("no runs yet")
        return
    header = ("run", "started (UTC)", "experiments", "status", "pass rate", "mean score", "tags", "rescored from")
    if not any(row[-1] for row in rows):  # no re-scored run listed: no column for it
        header, rows = header[:-1], [row[:-1] for row in rows]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        click.echo("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())


@cli.command()
@click.argument("run_ref", metavar="[RUN]", default="latest")
@STORE_OPTION
@click.option("--config", "config", is_flag=True,
              help="Print the run's configuration as stored instead: each file as written, ${VAR} unexpanded.")
@click.option("--by", "by", metavar="FIELD",
              help="Break each experiment's figures down by an item field: metadata.KEY or tags.")
def show(run_ref, store_file, config, by):
    """The summary of a stored RUN and its failing items.

    RUN is a run id, a unique prefix of one, or `latest` (the default)."""
    from yamleval.reporting.console import summary_text

    if by is not None and not _breakdown_field(by):
        from yamleval.records.errors import UsageError

        raise UsageError(f"--by {by}: not an item field to break down by; give metadata.KEY (a path into the items'"
                         " metadata) or tags")
    store = _open(store_file)
    info = store.find_run(run_ref)
    if config:
        click.echo(_config_listing(info), nl=False)
        return
    click.echo(f"run {info.run_id} · {info.status} · started {info.started_at}"
               + (f" · git {info.git_commit[:12]}{' (dirty)' if info.git_dirty else ''}" if info.git_commit else "")
               + (f" · rescored from {info.rescored_from}" if info.rescored_from else ""))
    click.echo("")
    for result in store.results(info.run_id):
        click.echo(summary_text(result) + "\n" + ("" if by is None else _breakdown_text(result, by) + "\n"))


def _breakdown_field(field: str) -> bool:
    parts = field.split(".")
    return field == "tags" or (len(parts) > 1 and parts[0] == "metadata" and all(parts[1:]))


def _breakdown_text(result, field: str) -> str:
    """The experiment's breakdown by ``field``: as stored with its summary, else counted from its items."""
    from yamleval.analysis.aggregate import recount
    from yamleval.reporting import breakdowns

    found = next((b for b in result.summary.breakdowns if b.field == field), None)
    if found is None:
        found = recount(result.summary, result.items, (field,)).breakdowns[0]
    return "\n".join(breakdowns.table_lines(found, figures.level(result.summary.confidence)))


@cli.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("names", metavar="NAME...", nargs=-1, required=True)
@STORE_OPTION
def tag(run_ref, names, store_file):
    """Tag a stored RUN with each NAME (e.g. `main`), for a no_regression criterion's baseline.

    RUN is a run id, a unique prefix of one, or `latest`."""
    from yamleval.store import tags as run_tags

    store = _open(store_file)
    info = store.find_run(run_ref)
    run_tags.add(store, info.run_id, names)
    click.echo(f"run {info.run_id} tagged {', '.join(run_tags.of_run(store, info.run_id))}")
    store.close()


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
def report(run_ref, store_file, formats, report_dir, junit_family, gate, max_html_mb):
    """Render the reports of a stored RUN again.

    RUN is a run id, a unique prefix of one, or `latest` (the default)."""
    from yamleval.config.loader import with_html_budget, with_junit_family
    from yamleval.reporting import write_reports
    from yamleval.lifecycle.run import RunOutcome

    wanted = with_html_budget(report_formats(formats), max_html_mb)
    store = _open(store_file)
    info = store.find_run(run_ref)
    if gate:
        _gateable(store, info)
    results = store.results(info.run_id)
    written = write_reports(report_dir, with_junit_family(wanted, junit_family), info, results)
    for path in written:
        click.echo(f"report: {display_path(path)}")
    if gate:
        outcome = RunOutcome(info, tuple(results), tuple(written))
        github_outputs(info, results, written)
        _verdicts(results)
        sys.exit(outcome.exit_code)


def _verdicts(results) -> None:
    from yamleval.reporting.console import verdict_word

    for result in results:
        click.echo(f"{result.experiment_id}: {verdict_word(result, short=True)}"
                   f" ({result.summary.passed}/{result.summary.completed} items passed)")


def _gateable(store, info) -> None:
    """A run whose stored verdict is final: finished, every shard of it (if it is split) in."""
    from yamleval.lifecycle import shards as shard_runs
    from yamleval.records.errors import UsageError

    missing = shard_runs.missing(store, info.run_id)
    if missing:
        raise UsageError(f"run {info.run_id} is split into shards and {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} not in: its verdict is not the run's yet; gate once"
                         " every shard has completed, or on the run `yamleval merge` makes of the shards' stores")
    if info.status in ("running", "crashed"):
        raise UsageError(f"run {info.run_id} is {info.status}, with no verdict yet: resume it"
                         f" (`yamleval run --resume {info.run_id}`), then gate")


@cli.command()
@click.argument("out", metavar="OUT", type=click.Path(dir_okay=False))
@click.argument("shards", metavar="SHARD_STORE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
def merge(out, shards):
    """Merge the results databases of a sharded run's jobs (`yamleval run --shard I/N`) into
    one run, stored in OUT (a results database, made if missing).

    Every shard must be there, once, each run to its end with the same config. The merged
    run's summaries, criteria and verdict are counted from all the items: `yamleval report
    RUN --store OUT --gate` writes its reports and exits with its verdict."""
    from yamleval.lifecycle.merge import merge as merge_stores

    outcome = merge_stores(out, shards)
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

    RUN is a run id, a unique prefix of one, or `latest` (the default)."""
    from yamleval.records.errors import UsageError
    from yamleval.reporting import export as exporting
    from yamleval.reporting.files import atomic_output

    store = _open(store_file)
    info = store.find_run(run_ref)
    results = store.results(info.run_id, set(experiment_ids) if experiment_ids else None)
    missing = sorted(set(experiment_ids) - {r.experiment_id for r in results})
    if missing:
        known = ", ".join(r.experiment_id for r in store.results(info.run_id)) or "none"
        raise UsageError(f"--experiment {missing[0]}: run {info.run_id} has no such experiment (it has: {known})")
    if output is None:
        exporting.write(click.get_text_stream("stdout"), results, fmt, statuses)
        return
    try:
        with atomic_output(output) as out:
            count = exporting.write(out, results, fmt, statuses)
    except OSError as exc:
        raise UsageError(f"cannot write {display_path(output)}: {exc.strerror or exc}") from None
    click.echo(f"export: {display_path(output)} ({count:,} items)", err=True)


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
def compare(base_ref, candidate_ref, store_file, fmt, alpha, margin, fail_on_regression, fail_on_any_regression):
    """Compare two stored runs item by item: flips, score deltas, added and removed items, how
    their configs differ, and a paired verdict per experiment and scorer: regressed, improved
    or no significant change.

    BASE and CANDIDATE are each a run id, a unique prefix of one, or `latest`; CANDIDATE is
    `latest` when it is not given."""
    from yamleval.analysis import compare as comparing

    store = _open(store_file)
    base, candidate = store.find_run(base_ref), store.find_run(candidate_ref)
    base_results, candidate_results = store.results(base.run_id), store.results(candidate.run_id)
    result = comparing.compare(base, base_results, candidate, candidate_results, alpha=alpha, margin=margin)
    if fmt == "html":
        from yamleval.reporting import compare_html

        text = compare_html.render(result, base_results, candidate_results)
    else:
        text = comparing.to_json(result) if fmt == "json" else comparing.to_text(result, markdown=fmt == "markdown")
    click.echo(text, nl=False)
    if fail_on_regression or fail_on_any_regression:
        failure = result.gate_failure(strict=fail_on_any_regression)
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
    from yamleval.analysis import history

    store = _open(store_file)
    histories = history.read(store, history.recent_runs(store, last, tag))
    if html_file:
        from yamleval.reporting import history_html

        history_html.write(html_file, histories, display_path(store.path))
        click.echo(f"history: {display_path(html_file)}")
        return
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
