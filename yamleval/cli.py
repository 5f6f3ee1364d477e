"""The ``yamleval`` command: run, validate, schema."""
from __future__ import annotations

import difflib
import gc
import os
import signal
import subprocess
import sys
import threading
import uuid
from datetime import datetime, timezone

import click

from yamleval import __version__
from yamleval.types import RunInfo
from yamleval.errors import ExitCode, UsageError, YamlevalError, display_path

DEFAULT_CONFIG = "evals.yaml"


def _load(paths: tuple[str, ...]):
    from yamleval.config.loader import load_project

    return load_project(list(paths) or [DEFAULT_CONFIG])


def _select(project, wanted: tuple[str, ...]):
    experiments = list(project.experiments)
    if not wanted:
        return experiments
    known = {e.id: e for e in experiments}
    for name in wanted:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (experiments: {', '.join(known) or 'none'})"
            raise UsageError(f"no experiment with id '{name}'{hint}")
    return [known[name] for name in dict.fromkeys(wanted)]


def _git_commit(folder: str) -> str | None:
    try:
        found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None if found.returncode == 0 else None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Interrupts:
    """First SIGINT/SIGTERM: start no new items. Second: stop waiting for running ones."""

    def __init__(self):
        self.stop = threading.Event()
        self.abandon = threading.Event()
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="yamleval")
def cli():
    """Evaluate LLM applications and agents from YAML."""


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-e", "--experiment", "experiment_ids", multiple=True, metavar="ID",
              help="Run only this experiment (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), help="Run at most N items of each experiment.")
@click.option("--concurrency", type=click.IntRange(min=1, max=1000), help="Items run at once (overrides the config).")
@click.option("--report-dir", type=click.Path(file_okay=False), help="Where reports go [config, else ./reports].")
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the verdict per experiment.")
def run(paths, experiment_ids, limit, concurrency, report_dir, quiet):
    """Run the experiments in PATHS (default: evals.yaml) and write reports.

    Exit code: 0 every experiment passed, 1 one failed, 2 invalid config, 130 interrupted.
    """
    from yamleval import engine, plan
    from yamleval.console import Progress, summary_text
    from yamleval.reporting import json_report

    project = _load(paths)
    experiments = _select(project, experiment_ids)
    prepared = [plan.prepare(e) for e in experiments]
    # Results are long-lived and acyclic: collecting them over and over is wasted work.
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    out_dir = report_dir or project.reports_dir or "reports"
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]
    results = []
    with _Interrupts() as interrupts:
        for item in prepared:
            if interrupts.stop.is_set():
                break
            progress = None if quiet else Progress(item.experiment.id)
            result = engine.run_experiment(
                item, concurrency=concurrency, limit=limit,
                on_item=progress.on_item if progress else None,
                on_progress=progress.on_progress if progress else None,
                stop=interrupts.stop, abandon=interrupts.abandon)
            if progress:
                progress.close()
            results.append(result)
            if quiet:
                click.echo(f"{result.experiment_id}: {'PASSED' if result.passed else 'FAILED'} "
                           f"({result.summary.passed}/{result.summary.completed} items passed)")
            else:
                click.echo(summary_text(result) + "\n")
    interrupted = interrupts.stop.is_set()
    run_info = RunInfo(
        run_id=run_id, status="interrupted" if interrupted else "completed",
        started_at=results[0].started_at if results else _now(),
        completed_at=results[-1].completed_at if results else _now(),
        passed=bool(results) and all(r.passed for r in results) and not interrupted,
        yamleval_version=__version__, config_files=tuple(project.files),
        git_commit=_git_commit(os.path.dirname(os.path.abspath(project.files[0])) if project.files else "."),
    )
    report = json_report.write(os.path.join(out_dir, "results.json"), run_info, results)
    click.echo(f"report: {display_path(report)}", err=quiet)
    if interrupted:
        sys.exit(ExitCode.INTERRUPTED)
    aborted = [r for r in results if r.aborted]
    if aborted:
        for r in aborted:
            click.echo(r.aborted, err=True)
        sys.exit(ExitCode.CONFIG_ERROR)
    sys.exit(ExitCode.OK if all(r.passed for r in results) else ExitCode.FAILED)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
def validate(paths):
    """Check PATHS (default: evals.yaml) without running anything: schema, ids, plugins,
    arguments, datasets. Exit code 0 when valid, 2 otherwise."""
    from yamleval import plan
    from yamleval.errors import raise_all

    project = _load(paths)
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


def main(argv: list[str] | None = None) -> None:
    """Entry point: yamleval errors are shown without a traceback, with their exit code."""
    try:
        cli.main(args=argv, prog_name="yamleval", standalone_mode=False)
    except YamlevalError as exc:
        click.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.CONFIG_ERROR)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    sys.exit(ExitCode.OK)
