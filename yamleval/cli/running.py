"""``yamleval run``: run experiments, store every item as it finishes, write the reports."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import tempfile
import threading
import uuid
from datetime import datetime, timezone
from typing import Sequence

import click

from yamleval import __version__
from yamleval.cli import cli
from yamleval.cli.common import DEFAULT_STORE, load, select
from yamleval.errors import ExitCode, UsageError, display_path
from yamleval.types import RunInfo

UNFINISHED = ("running", "interrupted", "crashed")


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


def _resumable(store, ref: str | None, experiment_ids: list[str], force: bool) -> RunInfo:
    if ref and ref != "latest":
        run = store.find_run(ref)
        if run.status not in UNFINISHED:
            raise UsageError(f"run {run.run_id} is {run.status}; only an unfinished run can be resumed")
        return _not_running(run, force)
    for run in store.runs(limit=200):
        stored = store.run_detail(run.run_id, "experiment_ids") or []
        if run.status in UNFINISHED and set(experiment_ids) <= set(stored):
            return _not_running(run, force)
    raise UsageError("no unfinished run of these experiments to resume (see `yamleval runs`)")


def _not_running(run: RunInfo, force: bool) -> RunInfo:
    """``run``, unless its own process may still be running it: two processes would run
    its items twice and store them side by side. (A run whose process is known to have died
    reads as crashed; one started on another machine cannot be checked from here.)"""
    if run.status == "running" and not force:
        from yamleval.provenance import host

        where = "on this machine" if run.host == host() else f"on {run.host or 'another machine'}, maybe"
        raise UsageError(f"run {run.run_id} is still running ({where}): wait for it to end or stop it, then resume;"
                         " use --force if you know its process has ended")
    return run


def _check_unchanged(store, run: RunInfo, config_hash: str, dataset_hashes: dict[str, str]) -> None:
    problems = []
    if run.config_hash != config_hash:
        problems.append("the config files changed")
    for row in store.experiment_rows(run.run_id):
        stored = row["dataset_hash"]
        if row["experiment_id"] in dataset_hashes and stored and stored != dataset_hashes[row["experiment_id"]]:
            problems.append(f"the dataset of '{row['experiment_id']}' changed")
    if problems:
        raise UsageError(f"cannot resume run {run.run_id}: {'; '.join(problems)} since it started "
                         "(use --force to resume anyway, or run afresh without --resume)")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option("-e", "--experiment", "experiment_ids", multiple=True, metavar="ID",
              help="Run only this experiment (repeatable).")
@click.option("--limit", type=click.IntRange(min=0), help="Run at most N items of each experiment.")
@click.option("--concurrency", type=click.IntRange(min=1, max=1000), help="Items run at once (overrides the config).")
@click.option("--report-dir", type=click.Path(file_okay=False), help="Where reports go [config, else ./reports].")
@click.option("--store", "store_file", type=click.Path(dir_okay=False),
              help="The results database [config `store:`, else .yamleval/results.db].")
@click.option("--resume", is_flag=False, flag_value="latest", default=None, metavar="[RUN_ID]",
              help="Continue an unfinished run (default: the latest of these experiments); finished items are kept.")
@click.option("--force", is_flag=True, help="With --resume: resume even if the config or a dataset changed, or if"
              " the run seems to be running still.")
@click.option("-q", "--quiet", is_flag=True, help="No progress; only the verdict per experiment.")
def run(paths, experiment_ids, limit, concurrency, report_dir, store_file, resume, force, quiet):
    """Run the experiments in PATHS (default: evals.yaml), store the results, write reports.

    Exit code: 0 every experiment passed, 1 one failed, 2 invalid config, 130 interrupted.
    """
    from yamleval import engine, plan, provenance
    from yamleval.console import Progress, summary_text
    from yamleval.reporting.text import terminal_block
    from yamleval.store import Store, StoreWriteError

    project = load(paths)
    experiments = select(project, experiment_ids)
    git = None if resume else provenance.GitState(
        os.path.dirname(os.path.abspath(project.files[0])) if project.files else ".")
    helper = _Helper(project.report_formats, sum(provenance.dataset_size(e) for e in experiments))
    prepared = [plan.prepare(e) for e in experiments]
    ids = [e.id for e in experiments]
    store = Store(store_file or project.store or DEFAULT_STORE)
    texts = provenance.config_texts(project.files)
    config_hash = provenance.config_hash(texts)
    dataset_hashes = {e.id: provenance.dataset_hash(e) for e in experiments}
    finished_rows = {}
    out_dir = report_dir or project.reports_dir or "reports"
    if project.report_formats:
        _writable_folder(out_dir)
    if resume:
        run_info = _resumable(store, resume, ids, force)
        if not force:
            _check_unchanged(store, run_info, config_hash, dataset_hashes)
        run_id = run_info.run_id
        finished_rows = {row["experiment_id"]: row for row in store.experiment_rows(run_id)}
        store.reopen_run(run_id)
        click.echo(f"resuming run {run_id}", err=True)
    else:
        run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]
        commit, dirty = git.result()
        store.create_run(RunInfo(
            run_id=run_id, status="running", started_at=_now(), yamleval_version=__version__,
            python_version=provenance.python_version(), host=provenance.host(), config_files=tuple(project.files),
            config_hash=config_hash, git_commit=commit, git_dirty=dirty,
        ), texts, provenance.plugin_versions(experiments, __version__), ids)
    completed = {eid for eid, row in finished_rows.items() if row["status"] == "completed"}
    stored_results = {r.experiment_id: r for r in store.results(run_id, completed)} if completed else {}
    results = []
    helper.knows(store.reading, run_id, out_dir, prepared)
    with _Interrupts() as interrupts:
        for position, item in enumerate(prepared):
            experiment_id = item.experiment.id
            if interrupts.stop.is_set():
                break
            row = finished_rows.get(experiment_id)
            if row is not None and row["status"] == "completed":
                result = stored_results[experiment_id]
            else:
                previous = store.item_view(run_id, experiment_id, 0) if row is not None else ()  # read as it goes
                store.start_experiment(run_id, position, experiment_id, item.experiment.label,
                                       dataset_hashes[experiment_id], _now())
                progress = None if quiet else Progress(experiment_id)

                store_failures = []

                def on_item(result, progress=progress, experiment_id=experiment_id, failures=store_failures):
                    helper.count()
                    try:
                        store.add_item(run_id, experiment_id, result)
                    except StoreWriteError as exc:  # results cannot be kept: start no more items
                        failures.append(exc)
                        interrupts.stop.set()
                    if progress is not None:
                        progress.on_item(result)

                with plan.importable(item.experiment):
                    result = engine.run_experiment(
                        item, concurrency=concurrency, limit=limit, on_item=on_item,
                        on_progress=progress.on_progress if progress else None,
                        stop=interrupts.stop, abandon=interrupts.abandon, previous=previous, keep_items=False)
                if progress:
                    progress.close()
                if store_failures:
                    raise store_failures[0]
                store.finish_experiment(run_id, result)
                # the items are in the store: reports and summaries read them from there, in order
                result = dataclasses.replace(result, items=store.item_view(run_id, experiment_id,
                                                                           result.summary.completed))
                if item.models is not None:
                    item.models.close()
            results.append(result)
            if quiet:
                click.echo(f"{result.experiment_id}: {'PASSED' if result.passed else 'FAILED'} "
                           f"({result.summary.passed}/{result.summary.completed} items passed)")
            else:
                click.echo(summary_text(result) + "\n")
    interrupted = interrupts.stop.is_set()
    passed = len(results) == len(prepared) and all(r.passed for r in results) and not interrupted
    run_info = _finished(store.find_run(run_id), "interrupted" if interrupted else "completed", passed)
    written = _write_reports_then_finish(store, out_dir, project.report_formats, run_info, results,
                                         helper.finished())
    for path in written:
        click.echo(f"report: {display_path(path)}", err=quiet)
    _github(run_info, results, written)
    if interrupted:
        click.echo(f"interrupted: resume with `yamleval run --resume {run_id}`", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    aborted = [r for r in results if r.aborted]
    if aborted:
        for r in aborted:
            click.echo(terminal_block(r.aborted), err=True)  # it may quote the dataset's own text
        sys.exit(ExitCode.CONFIG_ERROR)
    sys.exit(ExitCode.OK if passed else ExitCode.FAILED)


def _finished(run_info: RunInfo, status: str, passed: bool) -> RunInfo:
    """The run as it will be stored once finished, so the reports show what the store keeps
    (and ``yamleval report`` renders them again byte for byte)."""
    return dataclasses.replace(run_info, status=status, passed=passed, completed_at=_now())


class _Helper:
    """The second process that renders report.html, junit.xml and summary.md while the items
    run (``reporting.live``). It begins once a run has had ``START_AFTER`` items; a run whose
    datasets look large starts it at once, so that it has loaded what rendering needs by then.
    A run that ends before it begins writes its reports itself."""

    START_AFTER = 200  # items
    LARGE_DATASETS = 64 * 1024  # bytes of dataset files

    def __init__(self, formats, dataset_bytes: int) -> None:
        from yamleval.reporting import APART, splits

        self.left, self.process, self.start = -1, None, None
        if splits(formats):
            self.left = self.START_AFTER
            self.names = [name for name in dict.fromkeys(formats) if name in APART]
            if dataset_bytes >= self.LARGE_DATASETS:
                self._spawn()

    def knows(self, store_uri: str, run_id: str, directory: str, prepared) -> None:
        """What the process needs to begin: the run, where it is stored, where reports go."""
        self.start = (store_uri, run_id, [(p.experiment.id, [s.id for s in p.scorers]) for p in prepared],
                      directory)

    def _spawn(self) -> None:
        from yamleval.reporting.live import LiveReports, forkable

        # a fork only at the start, before the store is opened and the items' threads start
        self.process = LiveReports(self.names, fork=self.start is None and forkable())

    def count(self) -> None:
        if self.left > 0:
            self.left -= 1
            if self.left == 0 and self.start is not None:
                if self.process is None:
                    self._spawn()
                self.process.begin(*self.start)

    def finished(self):
        """The process, if it has begun; else it is stopped and None."""
        if self.process is not None and not self.process.begun:
            self.process.close()
            return None
        return self.process


def _write_reports_then_finish(store, out_dir: str, formats, run_info: RunInfo, results,
                               helper=None) -> list[str]:
    """Write the reports, then record the run as finished.

    In this order, a process killed while rendering leaves the run unfinished, so
    ``--resume`` writes the reports again. Ctrl-C or SIGTERM while rendering stops it
    (no half-written report is left) and records the run as interrupted, for the same
    reason. A report that cannot be written (a full disk, a read-only folder) does not
    undo the run: it is recorded as finished, the error says how to render the reports
    again, and the store is closed cleanly.
    """
    from yamleval.reporting import write_reports

    store.flush()
    try:
        with _terminate_as_interrupt(), contextlib.ExitStack() as cleanup:
            if helper is not None:
                cleanup.callback(helper.close)
            written = write_reports(out_dir, formats, run_info, results, helper)
    except UsageError:
        store.finish_run(run_info.run_id, run_info.status, run_info.passed, run_info.completed_at)
        store.close()
        raise
    except KeyboardInterrupt:
        store.finish_run(run_info.run_id, "interrupted", False, _now())
        store.close()
        click.echo(f"\ninterrupted while writing the reports: `yamleval run --resume {run_info.run_id}` writes them",
                   err=True)
        sys.exit(ExitCode.INTERRUPTED)
    store.finish_run(run_info.run_id, run_info.status, run_info.passed, run_info.completed_at)
    store.close()
    return written


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt, as Ctrl-C does, instead of ending the process on the spot."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _writable_folder(folder: str) -> None:
    """Fail before anything runs when reports cannot be written into ``folder``, rather than
    after a long (and maybe costly) run."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        why = "it is a file, not a folder" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
        raise UsageError(f"cannot write reports into {display_path(folder)}: {why}; make the folder writable or "
                         "choose another with --report-dir") from None


def _github(run_info: RunInfo, results, written: Sequence[str] = ()) -> None:
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
