"""``results.json``: the whole run for machines, items in dataset order.

Items are written as they stream by, encoded one at a time, so a large run needs no second
copy of itself in memory. ``reporting.write_reports``
writes it.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import IO, Any, Sequence

from yamleval.records import encode, encode_record
from yamleval.reporting import breakdowns
from yamleval.reporting.text import criterion_name
from yamleval.types import CriterionResult, ExperimentResult, ItemResult, RunInfo, Summary, Usage

FILE_NAME = "results.json"  # in the report folder
FORMAT_VERSION = 1
_CHUNK = 1000  # items joined into one write


def _tokens(usage: Usage) -> dict[str, Any]:
    return {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens, "total": usage.total_tokens,
            "cost": usage.cost}


def _criterion_details(criterion: CriterionResult) -> dict[str, Any]:
    """What a criterion says beyond type and bound, when it says it, and its readable name."""
    out: dict[str, Any] = {"name": criterion_name(criterion)}
    if criterion.percentile is not None:
        out["percentile"] = criterion.percentile
    if criterion.per_item:
        out["per_item"] = True
    if criterion.bound != "point":
        out["bound"], out["confidence"] = criterion.bound, criterion.confidence
    if criterion.baseline is not None:
        out.update(baseline=criterion.baseline, alpha=criterion.alpha, margin=criterion.margin,
                   skipped=criterion.skipped, detail=criterion.detail)
    return out


def summary_dict(summary: Summary) -> dict[str, Any]:
    return {
        "total": summary.total, "completed": summary.completed, "passed": summary.passed,
        "failed": summary.failed, "errored": summary.errored, "skipped": summary.skipped,
        "mean_score": summary.mean_score, "pass_rate": summary.pass_rate, "confidence": summary.confidence,
        "pass_rate_ci": summary.pass_rate_ci, "mean_score_ci": summary.mean_score_ci,
        "duration_ms": round(summary.duration_ms, 3),
        "latency_ms": asdict(summary.latency_ms),
        "tokens": _tokens(summary.tokens), "judge_tokens": _tokens(summary.judge_tokens),
        "throttling": asdict(summary.throttling), "noted": summary.noted, "flaky": summary.flaky,
        "cache": asdict(summary.cache),
        "scorers": {sid: {"name": s.name, "mean": s.mean, "min": s.min, "max": s.max, "pass_rate": s.pass_rate,
                          "passed": s.passed, "failed": s.failed, "errored": s.errored, "skipped": s.skipped,
                          "threshold": s.threshold, "pass_rate_ci": s.pass_rate_ci, "mean_ci": s.mean_ci,
                          "corpus": s.corpus}
                    for sid, s in summary.scorers.items()},
        "criteria": [{"type": c.type, "scorer": c.scorer, "min": c.min, "actual": c.actual, "passed": c.passed,
                      "severity": c.severity, "label": c.label, **({"max": c.max} if c.max is not None else {}),
                      **_criterion_details(c)}
                     for c in summary.criteria],
    }


def run_dict(run: RunInfo) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "yamleval_version": run.yamleval_version, "run_id": run.run_id,
            "status": run.status, "started_at": run.started_at, "completed_at": run.completed_at,
            "passed": run.passed, "interrupted": run.status == "interrupted",
            "stopped_by_budget": run.status == "stopped",
            "config_files": list(run.config_files), "config_hash": run.config_hash,
            "git_commit": run.git_commit, "git_dirty": run.git_dirty, "host": run.host,
            "python_version": run.python_version, "rescored_from": run.rescored_from}


def experiment_dict(result: ExperimentResult) -> dict[str, Any]:
    """An experiment's entry without its items."""
    return {"id": result.experiment_id, "label": result.label, "passed": result.passed,
            "interrupted": result.interrupted, "aborted": result.aborted, "incomplete": result.incomplete,
            "stopped_by_budget": result.stopped_by_budget,
            "started_at": result.started_at, "completed_at": result.completed_at,
            "description": result.description, "tags": list(result.tags), "runner": result.runner,
            "dataset": result.dataset, "scorers": list(result.scorers),
            "warnings": list(result.warnings), "summary": summary_dict(result.summary),
            "breakdowns": [breakdowns.as_dict(b) for b in result.summary.breakdowns]}


class Writer:
    """Writes the document as items stream by: each experiment's entry, then its items' records."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult]):
        self.out = out
        out.write(encode(run_dict(run))[:-1] + ',\n"experiments": [')
        self.separator = "\n"
        self.pending: list[str] = []
        self.first = True

    def begin(self, result: ExperimentResult) -> None:
        self.out.write(self.separator + encode(experiment_dict(result))[:-1] + ',\n"items": [')
        self.separator, self.first = ",\n", True

    def item(self, result: ItemResult) -> None:
        self.pending.append(encode_record(result))
        if len(self.pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            self.out.write(("\n" if self.first else ",\n") + ",\n".join(self.pending))
            self.pending, self.first = [], False

    def end(self, result: ExperimentResult) -> None:
        self.flush()
        self.out.write("]}")

    def close(self) -> None:
        self.out.write("]}\n")
