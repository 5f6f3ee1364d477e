"""What a run tells its caller as it goes (``RunWatcher``) and how it ended (``RunOutcome``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from yamleval.records.errors import ExitCode, YamlevalError
from yamleval.records.types import ExperimentResult, ItemResult, RunInfo


class RunWatcher:
    """What a caller is told while a run goes on; each method does nothing unless overridden."""

    def run_started(self, run_id: str, resumed: bool) -> None:
        """The run is stored (new, or reopened to resume it)."""

    def experiment_started(self, experiment_id: str) -> None:
        """An experiment's items are about to run."""

    def item_finished(self, experiment_id: str, result: ItemResult) -> None:
        """An item is finished (and queued for the store)."""

    def item_kept(self, experiment_id: str, result: ItemResult) -> None:
        """An item that finished before is counted again: one a resumed run had finished, or one
        that ``--retry-errors`` keeps (and stores as it was)."""

    def progress(self, experiment_id: str, completed: int, total: int | None) -> None:
        """How far the experiment is."""

    def experiment_finished(self, result: ExperimentResult) -> None:
        """An experiment is finished (or stopped) and stored."""

    def run_finished(self, results: Sequence[ExperimentResult]) -> None:
        """Every experiment is done: their results, items read from the store (before the reports)."""

    def writing_reports(self) -> None:
        """Every experiment is done; the reports are being written."""

    def warning(self, message: str) -> None:
        """Something the caller should know that does not stop the run."""


class ReportsInterrupted(YamlevalError):
    """Ctrl-C or SIGTERM while the reports were written: the run is stored as interrupted."""

    exit_code = ExitCode.INTERRUPTED


@dataclass(frozen=True)
class RunOutcome:
    """A finished (or stopped) run: how it is stored, each experiment's result (items read
    from the store) and the report files written."""

    run: RunInfo
    results: tuple[ExperimentResult, ...]
    reports: tuple[str, ...]
    shard: Any = None  # a sharding.Shard: the run is one part of a run split over several jobs
    shard_status: str | None = None  # how that shard ended: completed, interrupted, stopped (by a budget), aborted
    own: tuple[ExperimentResult, ...] = ()  # a shard's own experiments (``results`` are the run's, as stored)

    @property
    def interrupted(self) -> bool:
        return (self.shard_status or self.run.status) == "interrupted"

    @property
    def stopped_by_budget(self) -> bool:
        return (self.shard_status or self.run.status) == "stopped"

    @property
    def aborted(self) -> tuple[ExperimentResult, ...]:
        """Experiments ended early: by a dataset error met mid-run, an endpoint that cannot be used,
        or a budget reached (a shard's: its own)."""
        return tuple(r for r in self.own or self.results if r.aborted)

    @property
    def passed(self) -> bool:
        return bool(self.run.passed)

    @property
    def exit_code(self) -> ExitCode:
        """What ``yamleval run`` exits with: 130 interrupted, 3 an endpoint could not be used,
        4 a budget stopped it, 2 a dataset error stopped an experiment, else 0 passed or 1 failed.
        A shard's items are not the run's: its verdict is the merged run's, so a shard that ran to
        its end exits 0 (passed or not)."""
        if self.interrupted:
            return ExitCode.INTERRUPTED
        ended = self.own or self.results
        if any(r.could_not_evaluate for r in ended):
            return ExitCode.COULD_NOT_EVALUATE
        if self.stopped_by_budget:
            return ExitCode.STOPPED_BY_BUDGET
        if any(r.aborted for r in ended):
            return ExitCode.CONFIG_ERROR
        return ExitCode.OK if self.passed or self.shard is not None else ExitCode.FAILED
