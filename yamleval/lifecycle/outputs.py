"""Where a run goes, opened and checked before anything runs: the results database, the report
folder and the tags; and the end of a run: its reports written, then the run recorded as finished."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Sequence

from yamleval.records.errors import UsageError, display_path
from yamleval.records.outcome import ReportsInterrupted
from yamleval.records.types import RunInfo, now

DEFAULT_STORE = os.path.join(".yamleval", "results.db")


@dataclass(frozen=True)
class Outputs:
    """Where a run goes: its results database, its reports (none without ``formats``) and its tags."""

    store: Any  # yamleval.store.writer.Store
    report_dir: str
    formats: tuple[str, ...]
    tags: tuple[str, ...]


def open_outputs(project, store: str | None, report_dir: str | None, formats: Sequence[str] | None,
                 tags: Sequence[str]) -> Outputs:
    """The store opened and the report folder checked, defaults from ``project``, before anything runs."""
    from yamleval.store import tags as run_tags
    from yamleval.store.writer import Store

    formats = project.report_formats if formats is None else tuple(formats)
    out_dir = report_dir or project.reports_dir or "reports"
    tags = run_tags.checked(tags)
    if formats:
        writable_folder(out_dir)
    return Outputs(Store(store or project.store or DEFAULT_STORE), out_dir, tuple(formats), tuple(tags))


def write_reports_then_finish(db, out_dir: str, formats, run_info: RunInfo, results, finish: bool = True) -> list[str]:
    """Write the reports, then record the run as finished.

    In this order, a process killed while rendering leaves the run unfinished, so
    ``--resume`` writes the reports again. Ctrl-C while rendering stops it (no half-written
    report is left) and records the run as interrupted, for the same reason. A report that
    cannot be written (a full disk, a read-only folder) does not undo the run: it is recorded
    as finished, the error says how to render the reports again, and the store is closed.
    Without ``finish`` (a shard's reports: the shard has recorded its end) nothing is recorded.
    """
    from yamleval.reporting import write_reports

    def ended(status: str, passed, completed_at) -> None:
        if finish:
            db.finish_run(run_info.run_id, status, passed, completed_at)
        db.close()

    db.flush()
    try:
        written = write_reports(out_dir, formats, run_info, results) if formats else []
    except KeyboardInterrupt:
        ended("interrupted", False, now())
        raise ReportsInterrupted(f"\ninterrupted while writing the reports: `yamleval run --resume {run_info.run_id}`"
                                 " writes them") from None
    except UsageError:
        ended(run_info.status, run_info.passed, run_info.completed_at)
        raise
    ended(run_info.status, run_info.passed, run_info.completed_at)
    return written


def writable_folder(folder: str) -> None:
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
