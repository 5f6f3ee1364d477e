"""``yamleval run``: run experiments, store every item as it finishes, write the reports;
``yamleval rescore``: score a stored run's outputs again, as a new run."""
from __future__ import annotations

import signal
import sys
import threading
import click

from yamleval import api
from yamleval.cli import cli
from yamleval.cli.common import JUNIT_FAMILY_OPTION, format_names, github_outputs
from yamleval.records.errors import display_path


class _Interrupts:
    """First SIGINT/SIGTERM: start no new items. Second: stop waiting for running ones."""

    def __init__(self):
        self.stop = threading.Event()
        self.abandon = threading.Event()
        self.raising = False  # True while the reports are written: a signal stops them
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.raising:
            raise KeyboardInterrupt
        if self.stop.is_set():
            self.abandon.set()
            click.echo("\nstopping now; writing the report of what finished", err=True)
        else:
            self.stop.set()
            click.echo("\nstopping: no new items start; running ones finish (press Ctrl-C again to stop now)",
                       err=True)

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-e", "--experiment", "experiment_ids", multiple=True, metavar="ID",
              help="Run only this experiment (repeatable).")
@click.option("--variant", "variant_ids", multiple=True, metavar="ID",
              help="Run only this variant of the experiments that have variants (repeatable).")
@click.option("--set", "sets", multiple=True, metavar="[ID:]PATH=VALUE",
              help="Set one value of every experiment (or of experiment ID), as if the file said so:"
                   " --set runner.with.model=big (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), help="Run at most N items of each experiment.")
@click.option("--concurrency", type=click.IntRange(min=1, max=1000), help="Items run at once (overrides the config).")
@click.option("--repeats", type=click.IntRange(min=1, max=1000), help="Run each item N times (overrides the config).")
@click.option("--report-dir", type=click.Path(file_okay=False), help="Where reports go [config, else ./reports].")
@click.option("--store", "store_file", type=click.Path(dir_okay=False),
              help="The results database [config `store:`, else .yamleval/results.db].")
@click.option("--resume", is_flag=False, flag_value="latest", default=None, metavar="[RUN_ID]",
              help="Continue an unfinished run (default: the latest of these experiments); finished items are kept.")
@click.option("--retry-errors", metavar="RUN", help="A new run of RUN's experiments (an id or a tag) that keeps its"
              " items and runs again those that ended in error or never ran.")
@click.option("--force", is_flag=True, help="With --resume: resume even if the config or a dataset changed, or if"
              " the run seems to be running still; with --retry-errors: retry even if they changed.")
@click.option("--tag", "tags", multiple=True, metavar="NAME",
              help="Tag the run (repeatable): a no_regression criterion's baseline can name it.")
@click.option("--cache/--no-cache", "cache", default=None,
              help="Keep the runner's answers too / keep no answer at all (overrides the config's `cache:`).")
@click.option("--refresh-cache", is_flag=True, help="Read no kept answer: ask again, and keep the new answers.")
@click.option("--shard", metavar="I/N", help="Run only shard I of N of every experiment's items (CI jobs split a run;"
              " `yamleval merge` joins their stores into one run and verdict).")
@click.option("--run-id", metavar="ID", help="The new run's id (e.g. the CI run's, shared by its shards).")
@click.option("--executor", type=click.Choice(["local", "ray"]),
              help="Where items run: threads here, or tasks on a Ray cluster (overrides the config's `executor:`).")
@click.option("--ray-address", metavar="ADDR", help="Run on the Ray cluster at ADDR (host:port, or `auto`: the one"
              " started on this machine); implies --executor ray.")
@JUNIT_FAMILY_OPTION
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the verdict per experiment.")
def run(paths, experiment_ids, variant_ids, sets, limit, concurrency, repeats, report_dir, store_file, resume, retry_errors,
        force, tags, cache,
        refresh_cache, shard, run_id, executor, ray_address, junit_family, quiet):
    """Run the experiments in PATHS (default: evals.yaml), store the results, write reports.

    Exit code: 0 every experiment passed, 1 one failed, 2 invalid config, 3 could not evaluate (an
    endpoint cannot be used), 4 stopped by a budget (resume with a larger one), 130 interrupted.
    A shard that runs to its end exits 0: the merged run has the verdict.
    """
    options = api.RunOptions(experiments=experiment_ids, variants=variant_ids, sets=sets, store=store_file,
                             report_dir=report_dir, junit_family=junit_family, resume=resume, force=force, limit=limit,
                             concurrency=concurrency, repeats=repeats, tags=tags, cache=cache,
                             refresh_cache=refresh_cache, shard=shard, run_id=run_id, executor=executor,
                             ray_address=ray_address, retry_errors=retry_errors)
    project = api.load_project(paths, sets)  # loaded before Ctrl-C comes to mean "start no new items"
    with _Interrupts() as interrupts:
        outcome = api.run(project, options, stop=interrupts.stop, abandon=interrupts.abandon,
                          watcher=_Console(interrupts, quiet))
    if outcome.run.retried_from:
        click.echo(f"run {outcome.run.run_id}: the errored items of run {outcome.run.retried_from} run again,"
                   " the others kept", err=quiet)
    _finish(outcome, quiet, options.resume_command(outcome.run.run_id, paths))


@cli.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-e", "--experiment", "experiment_ids", multiple=True, metavar="ID",
              help="Score only this experiment again (repeatable).")
@click.option("--report-dir", type=click.Path(file_okay=False), help="Where reports go [config, else ./reports].")
@click.option("--format", "formats", metavar="LIST",
              help="Comma-separated: html, junit, json, markdown [config `reports.formats`].")
@click.option("--store", "store_file", type=click.Path(dir_okay=False),
              help="The results database [config `store:`, else .yamleval/results.db].")
@click.option("--tag", "tags", multiple=True, metavar="NAME",
              help="Tag the new run (repeatable): a no_regression criterion's baseline can name it.")
@JUNIT_FAMILY_OPTION
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the verdict per experiment.")
def rescore(run_ref, paths, experiment_ids, report_dir, formats, store_file, tags, junit_family, quiet):
    """Score the stored outputs of RUN again with the scorers and pass criteria of PATHS (default:
    evals.yaml), as a new run; no runner is called (LLM judges call their model).

    RUN is a run id, a tag (its newest completed run), a unique prefix of a run id, or `latest`.
    Exit codes as `yamleval run`.
    """
    project = api.load_project(paths)
    with _Interrupts() as interrupts:
        options = api.RescoreOptions(experiments=experiment_ids, store=store_file, report_dir=report_dir,
                                     formats=None if formats is None else format_names(formats),
                                     junit_family=junit_family, tags=tags)
        outcome = api.rescore(run_ref, project, options, stop=interrupts.stop, watcher=_Console(interrupts, quiet))
    click.echo(f"run {outcome.run.run_id}: run {outcome.run.rescored_from} scored again", err=quiet)
    _finish(outcome, quiet)


def _finish(outcome, quiet: bool, resume: str | None = None) -> None:
    """The report files written, inside GitHub Actions the job summary and annotations, what
    to do after an interruption (``resume``: the command that continues the run), why an
    experiment stopped early; then exit as the run says."""
    from yamleval.reporting.text import terminal_block

    for path in outcome.reports:
        click.echo(f"report: {display_path(path)}", err=quiet)
    github_outputs(outcome.run, outcome.results, outcome.reports)
    if outcome.shard is not None:
        run_id = outcome.run.run_id
        click.echo(f"run {run_id}: shard {outcome.shard} completed it; `yamleval report {run_id} --gate` exits with its"
                   " verdict" if outcome.run.status == "completed" else
                   f"run {run_id} is shard {outcome.shard}: the run's verdict comes once every shard is in"
                   " (`yamleval merge` joins shards stored apart)", err=quiet)
    if outcome.interrupted:
        click.echo(f"interrupted: resume with {resume}" if resume else
                   f"interrupted: what was scored is in run {outcome.run.run_id}", err=True)
    for result in outcome.aborted:
        click.echo(terminal_block(result.aborted), err=True)  # it may quote the dataset's own text
    if resume and any(r.could_not_evaluate for r in outcome.aborted):
        click.echo(f"once what stopped it is mended, finish the run with {resume}: it runs again the items"
                   " that could not be evaluated", err=True)
    if outcome.stopped_by_budget:
        click.echo(f"the run is incomplete: raise the budget, then resume it with {resume}" if resume else
                   f"the run is incomplete: what was scored is in run {outcome.run.run_id}", err=True)
    sys.exit(outcome.exit_code)


class _Console:
    """What ``yamleval run`` prints as the run goes: a progress line per experiment, then its summary."""

    def __init__(self, interrupts: "_Interrupts", quiet: bool):
        self.interrupts, self.quiet = interrupts, quiet
        self.bar = None

    def run_started(self, run_id: str, resumed: bool) -> None:
        if resumed:
            click.echo(f"resuming run {run_id}", err=True)

    def experiment_started(self, experiment_id: str) -> None:
        from yamleval.reporting.console import Progress

        self.bar = None if self.quiet else Progress(experiment_id)

    def item_finished(self, experiment_id: str, result) -> None:
        if self.bar is not None:
            self.bar.on_item(result)

    def item_kept(self, experiment_id: str, result) -> None:
        if self.bar is not None:
            self.bar.on_kept(result)

    def progress(self, experiment_id: str, completed: int, total: int | None) -> None:
        if self.bar is not None:
            self.bar.on_progress(completed, total)

    def experiment_finished(self, result) -> None:
        from yamleval.reporting.console import summary_text, verdict_word

        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.quiet:
            click.echo(f"{result.experiment_id}: {verdict_word(result, short=True)} "
                       f"({result.summary.passed}/{result.summary.completed} items passed)")
        else:
            click.echo(summary_text(result) + "\n")

    def run_finished(self, results) -> None:
        from yamleval.reporting.console import variants_text

        for text in variants_text(results):
            click.echo(text + "\n", err=self.quiet)

    def writing_reports(self) -> None:
        self.interrupts.raising = True  # Ctrl-C or SIGTERM now stops the reports at once

    def warning(self, message: str) -> None:
        click.echo(f"warning: {message}", err=True)
