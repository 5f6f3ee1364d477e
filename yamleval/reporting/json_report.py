"""``results.json``: the whole run for machines, items in dataset order.

Items are written as they stream by, encoded one at a time, so a large run needs no second
copy of itself in memory. ``reporting.write_reports``
writes it.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import IO, Any, Sequence

from yamleval.analysis.verdict import run_passed
from yamleval.reporting.comparison import changes_json
from yamleval.records.codec import encode, encode_record
from yamleval.reporting import people
from yamleval.reporting import variants
from yamleval.reporting import breakdowns
from yamleval.reporting.text import criterion_name
from yamleval.records.types import CriterionResult, ExperimentResult, ItemResult, RunInfo, Summary, Usage

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
    if criterion.metric is not None:
        out.update(metric=criterion.metric, detail=criterion.detail)
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
        **people.people_dict(summary),
    }


def run_dict(run: RunInfo) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "yamleval_version": run.yamleval_version, "run_id": run.run_id,
            "status": run.status, "started_at": run.started_at, "completed_at": run.completed_at,
            "passed": run.passed, "interrupted": run.status == "interrupted",
            "stopped_by_budget": run.status == "stopped",
            "config_files": list(run.config_files), "config_hash": run.config_hash,
            "git_commit": run.git_commit, "git_dirty": run.git_dirty, "host": run.host,
            "python_version": run.python_version, "rescored_from": run.rescored_from,
            "retried_from": run.retried_from}


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


def variant_dict(result: ExperimentResult, row: variants.VariantRow | None) -> dict[str, Any]:
    """A variant's entry without its items: an experiment's, with what it is and how it compares
    with the baseline."""
    variant = result.variant
    out = {**experiment_dict(result), "id": variant.id, "experiment_id": result.experiment_id,
           "label": variant.label, "baseline": variant.baseline, "gate": variant.gate}
    if row is not None and row.comparison is not None:
        out["comparison"] = changes_json(row.comparison)
        out["against_baseline"] = variants.against_baseline(row)
        out["pairwise"] = [{"scorer": p.scorer_id, "wins": p.wins, "ties": p.ties, "losses": p.losses,
                            "win_rate": p.win_rate, "win_rate_ci": p.interval} for p in row.preferences]
    return out


def parent_dict(group: variants.VariantGroup) -> dict[str, Any]:
    """An experiment with variants, without them: it passes when every gated variant passes."""
    members = [row.result for row in group.rows]
    return {"id": group.experiment_id, "label": group.label, "passed": run_passed(members),
            "description": members[0].description, "tags": list(members[0].tags), "dataset": members[0].dataset}


class Writer:
    """Writes the document as items stream by: each experiment's entry, then its items' records;
    an experiment's variants inside its entry, each with its items."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult]):
        self.out = out
        out.write(encode(run_dict(run))[:-1] + ',\n"experiments": [')
        self.separator = "\n"
        self.pending: list[str] = []
        self.first = True
        self.groups = {g.experiment_id: g for g in variants.groups(results)}
        self.parent: str | None = None  # the experiment whose variants are being written

    def _close_parent(self) -> None:
        if self.parent is not None:
            self.out.write("]}")
            self.parent, self.separator = None, ",\n"

    def begin(self, result: ExperimentResult) -> None:
        parent = result.variant.experiment_id if result.variant else None
        if parent != self.parent:
            self._close_parent()
        if parent is None:
            entry = experiment_dict(result)
        else:
            group = self.groups[parent]
            if self.parent is None:
                self.out.write(self.separator + encode(parent_dict(group))[:-1] + ',\n"variants": [')
                self.parent, self.separator = parent, "\n"
            entry = variant_dict(result, next((r for r in group.rows if r.result is result), None))
        self.out.write(self.separator + encode(entry)[:-1] + ',\n"items": [')
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
        self._close_parent()
        self.out.write("]}\n")
