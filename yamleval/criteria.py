"""Pass criteria and the experiment's verdict (DESIGN §4)."""
from __future__ import annotations

import dataclasses
from typing import Iterable

from yamleval.config.model import CriterionSpec
from yamleval.types import CriterionResult, Summary


def actual_value(criterion: CriterionSpec, summary: Summary) -> float | None:
    if criterion.type == "flaky_rate":
        return summary.flaky / summary.completed if summary.completed else None
    if criterion.scorer is None:
        return summary.mean_score if criterion.type == "mean_score" else summary.pass_rate
    scorer = summary.scorers.get(criterion.scorer)
    if scorer is None:
        return None
    return scorer.mean if criterion.type == "mean_score" else scorer.pass_rate


NO_BASELINE_HERE = "skipped: compared with its baseline only when a stored run's experiment finishes"


def evaluate(criteria: Iterable[CriterionSpec], summary: Summary) -> tuple[CriterionResult, ...]:
    """Each criterion against the summary; a missing value (no scores at all) fails. A
    no_regression criterion needs the stored baseline: it is skipped here (yamleval.baseline judges it)."""
    results = []
    for c in criteria:
        if c.type == "no_regression":
            results.append(CriterionResult(type=c.type, min=None, actual=None, passed=True, severity=c.severity,
                                           scorer=c.scorer, label=c.label, source=c.source, baseline=c.baseline,
                                           alpha=c.alpha, margin=c.margin, skipped=True, detail=NO_BASELINE_HERE))
            continue
        actual = actual_value(c, summary)
        holds = actual is not None and (actual <= c.max if c.max is not None else actual >= c.min)
        results.append(CriterionResult(type=c.type, min=c.min, actual=actual, passed=holds, severity=c.severity,
                                       scorer=c.scorer, label=c.label, source=c.source, max=c.max))
    return tuple(results)


def verdict(summary: Summary, has_criteria: bool) -> bool:
    """Passes when no item errored and every error-severity criterion holds;
    without criteria, when no item failed or errored."""
    if summary.errored:
        return False
    if not has_criteria:
        return summary.failed == 0
    return all(c.passed for c in summary.criteria if c.severity == "error")


def with_criteria(summary: Summary, criteria: Iterable[CriterionSpec]) -> Summary:
    return dataclasses.replace(summary, criteria=evaluate(criteria, summary))
