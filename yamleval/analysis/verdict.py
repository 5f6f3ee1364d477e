"""The one place a verdict is decided (DESIGN §4): an experiment's, from its counted summary, its
criteria and how it ended, and a run's, from its experiments and how it ended. The engine, resume,
retry, rescore, shards and merge, baselines, reviews, every list of runs and every report ask here."""
from __future__ import annotations

import dataclasses
from typing import Sequence

from yamleval.records.types import ExperimentResult, RunInfo, Summary


def counts_pass(summary: Summary) -> bool:
    """Whether the counted ``summary`` passes: no item errored (with an ``error_rate`` criterion:
    when it holds) and every error-severity criterion holds; without criteria, no item failed either."""
    if summary.errored and not tolerates_errors(summary):
        return False
    if not summary.criteria:
        return summary.failed == 0
    return all(c.passed for c in summary.criteria if c.severity == "error")


def tolerates_errors(summary: Summary) -> bool:
    """Whether an ``error_rate`` criterion, not the rule that no item errors, judges its errors."""
    return any(c.type == "error_rate" for c in summary.criteria)


def ended_early(result: ExperimentResult) -> bool:
    """Whether the experiment stopped before its end (interrupted, aborted, stopped by a budget, could
    not evaluate) or was read back unfinished: then it has no verdict that passes."""
    return bool(result.interrupted or result.aborted or result.incomplete or result.could_not_evaluate
                or result.stopped_by_budget)


def experiment_passed(result: ExperimentResult) -> bool:
    """The experiment's verdict: its summary passes and it ran to its end."""
    return counts_pass(result.summary) and not ended_early(result)


def judged(result: ExperimentResult) -> ExperimentResult:
    """``result`` with the verdict its summary and its ending give it."""
    passed = experiment_passed(result)
    return result if passed == result.passed else dataclasses.replace(result, passed=passed)


def run_passed(results: Sequence[ExperimentResult], planned: int | None = None, interrupted: bool = False) -> bool:
    """A run's verdict: every gated experiment passed (and all ``planned`` of them ran, uninterrupted);
    an experiment's with variants, of ``results`` its variants."""
    ran = planned is None or len(results) == planned
    return ran and all(r.passed for r in results if r.gated) and not interrupted


def run_status(results: Sequence[ExperimentResult], interrupted: bool = False, planned: int | None = None) -> str:
    """How a run (or a shard) ended: interrupted, stopped by a budget, aborted (an experiment ended
    early: a dataset error, an endpoint that cannot be used, a source run that was not complete;
    or fewer than the ``planned`` experiments ran), else completed. Only a completed run has a
    verdict a gate may pass."""
    if interrupted:
        return "interrupted"
    if any(r.stopped_by_budget for r in results):
        return "stopped"
    short = planned is not None and len(results) < planned
    return "aborted" if short or any(r.aborted or r.incomplete for r in results) else "completed"


def run_counted(info: RunInfo, results: Sequence[ExperimentResult]) -> RunInfo:
    """``info`` with the verdict ``results`` give it, counted however they are (people's verdicts or
    the scorers'): a completed run passes when every gated experiment does; any other keeps its own."""
    if info.status != "completed":
        return info
    passed = run_passed(results)
    return info if passed == info.passed else dataclasses.replace(info, passed=passed)


def run_word(info: RunInfo) -> str:
    """A run's verdict in one word: passed or failed once it completed, else how it stands."""
    if info.status == "completed":
        return "passed" if info.passed else "failed"
    return info.status
