"""``results.json``: the whole run for machines, items in dataset order.

Items are encoded one at a time with the C encoder and written as they go, so a
large run needs no second copy of itself in memory.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict
from typing import Any, Callable, Iterable

from yamleval.records import encode, encode_record
from yamleval.reporting.files import atomic_output
from yamleval.types import ExperimentResult, RunInfo, Summary, Usage

FORMAT_VERSION = 1
_CHUNK = 1000  # items joined into one write


def _tokens(usage: Usage) -> dict[str, Any]:
    return {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens, "total": usage.total_tokens,
            "cost": usage.cost}


def summary_dict(summary: Summary) -> dict[str, Any]:
    return {
        "total": summary.total, "completed": summary.completed, "passed": summary.passed,
        "failed": summary.failed, "errored": summary.errored, "skipped": summary.skipped,
        "mean_score": summary.mean_score, "pass_rate": summary.pass_rate,
        "duration_ms": round(summary.duration_ms, 3),
        "latency_ms": asdict(summary.latency_ms),
        "tokens": _tokens(summary.tokens), "judge_tokens": _tokens(summary.judge_tokens),
        "scorers": {sid: {"name": s.name, "mean": s.mean, "min": s.min, "max": s.max, "pass_rate": s.pass_rate,
                          "passed": s.passed, "failed": s.failed, "errored": s.errored, "skipped": s.skipped,
                          "threshold": s.threshold}
                    for sid, s in summary.scorers.items()},
        "criteria": [{"type": c.type, "scorer": c.scorer, "min": c.min, "actual": c.actual, "passed": c.passed,
                      "severity": c.severity, "label": c.label} for c in summary.criteria],
    }


def run_dict(run: RunInfo) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "yamleval_version": run.yamleval_version, "run_id": run.run_id,
            "status": run.status, "started_at": run.started_at, "completed_at": run.completed_at,
            "passed": run.passed, "interrupted": run.status == "interrupted",
            "config_files": list(run.config_files), "config_hash": run.config_hash,
            "git_commit": run.git_commit, "git_dirty": run.git_dirty, "host": run.host,
            "python_version": run.python_version}


def experiment_dict(result: ExperimentResult) -> dict[str, Any]:
    """An experiment's entry without its items."""
    return {"id": result.experiment_id, "label": result.label, "passed": result.passed,
            "interrupted": result.interrupted, "aborted": result.aborted,
            "started_at": result.started_at, "completed_at": result.completed_at,
            "description": result.description, "tags": list(result.tags), "runner": result.runner,
            "dataset": result.dataset, "scorers": list(result.scorers),
            "warnings": list(result.warnings), "summary": summary_dict(result.summary)}


def write(path: str, run: RunInfo, results: Iterable[ExperimentResult],
          records: Callable[[ExperimentResult], Iterable[str]] | None = None) -> str:
    """Write the report to ``path`` atomically (a temporary file renamed over it).

    ``records(result)`` gives the items' JSON records as already encoded (by the store);
    without it they are encoded here from the results.
    """
    with atomic_output(path) as out:
        head = encode(run_dict(run))[:-1]
        out.write(head + ',\n"experiments": [')
        for number, result in enumerate(results):
            entry = experiment_dict(result)
            out.write(("," if number else "") + "\n" + encode(entry)[:-1] + ',\n"items": [')
            texts = records(result) if records else map(encode_record, result.items)
            separator = "\n"
            while chunk := list(itertools.islice(texts, _CHUNK)):
                out.write(separator + ",\n".join(chunk))
                separator = ",\n"
            out.write("]}")
        out.write("]}\n")
    return path
