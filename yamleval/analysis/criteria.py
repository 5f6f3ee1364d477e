"""Pass criteria, each judged against a counted summary (DESIGN §4); the verdict they give is
``analysis.verdict``'s."""
from __future__ import annotations

import dataclasses
from typing import Iterable

from yamleval.analysis.aggregate import Aggregator
from yamleval.analysis.agreement import MIN_VERDICTS
from yamleval.config.model import CriterionSpec, Experiment
from yamleval.records.reviews import UNMEASURABLE
from yamleval.records.types import CriterionResult, Summary


def latency_figure(percentile: int | str) -> str:
    """The latency figure a ``percentile:`` names: ``p95``, or ``max``."""
    return "max" if percentile == "max" else f"p{int(percentile)}"


def _spent(criterion: CriterionSpec, summary: Summary) -> float | None:
    """Tokens or cost of the runner and the judges together, for the experiment or per completed
    item; a cost is None when no call had a price."""
    both = (summary.tokens, summary.judge_tokens)
    if criterion.type == "tokens":
        total: float | None = sum(u.total_tokens for u in both)
    else:
        costs = [u.cost for u in both if u.cost is not None]
        total = sum(costs) if costs else None
    if not criterion.per_item or total is None:
        return total
    return total / summary.completed if summary.completed else None


def actual_value(criterion: CriterionSpec, summary: Summary) -> float | None:
    if criterion.type == "flaky_rate":
        return summary.flaky / summary.completed if summary.completed else None
    if criterion.type == "error_rate":
        return summary.errored / summary.completed if summary.completed else None
    if criterion.type == "items":
        return summary.completed
    if criterion.type == "latency":
        return getattr(summary.latency_ms, latency_figure(criterion.percentile))
    if criterion.type in ("tokens", "cost"):
        return _spent(criterion, summary)
    if criterion.type == "judge_agreement":
        return _agreement(criterion, summary)
    mean = criterion.type == "mean_score"
    if criterion.scorer is None:
        point, interval = ((summary.mean_score, summary.mean_score_ci) if mean
                           else (summary.pass_rate, summary.pass_rate_ci))
    else:
        scorer = summary.scorers.get(criterion.scorer)
        if scorer is None:
            return None
        point, interval = (scorer.mean, scorer.mean_ci) if mean else (scorer.pass_rate, scorer.pass_rate_ci)
    if criterion.bound == "lower":  # "95% sure it is at least min"
        return None if interval is None else interval[0]
    return point


def _agreement(criterion: CriterionSpec, summary: Summary) -> float | None:
    """The scorer's kappa (or plain agreement rate) with people, or its interval's lower end; None
    with fewer than ``MIN_VERDICTS`` items both judged."""
    found = summary.agreement.get(criterion.scorer)
    if found is None or found.n < MIN_VERDICTS or found.one_verdict:
        return None
    point, interval = (found.rate, found.rate_ci) if criterion.metric == "agreement" else (found.kappa, found.kappa_ci)
    return (None if interval is None else interval[0]) if criterion.bound == "lower" else point


def _too_few(criterion: CriterionSpec, summary: Summary) -> str | None:
    """Why a judge_agreement criterion has no value: too few human verdicts (it does not pass)."""
    found = summary.agreement.get(criterion.scorer)
    n = found.n if found is not None else 0
    if found is not None and found.one_verdict:
        return UNMEASURABLE
    if n < MIN_VERDICTS:
        return f"not enough human verdicts (n = {n} < {MIN_VERDICTS})"
    return "no kappa: the scorer and the people gave every item the same one verdict"


NO_BASELINE_HERE = "skipped: compared with its baseline only when a stored run's experiment finishes"


def evaluate(criteria: Iterable[CriterionSpec], summary: Summary) -> tuple[CriterionResult, ...]:
    """Each criterion against the summary; a missing value (no scores at all, no price) fails. A
    no_regression criterion needs the stored baseline: it is skipped here (yamleval.lifecycle.baseline judges it)."""
    results = []
    for c in criteria:
        if c.type == "no_regression":
            results.append(CriterionResult(type=c.type, min=None, actual=None, passed=True, severity=c.severity,
                                           scorer=c.scorer, label=c.label, source=c.source, baseline=c.baseline,
                                           alpha=c.alpha, margin=c.margin, skipped=True, detail=NO_BASELINE_HERE))
            continue
        actual = actual_value(c, summary)
        holds = actual is not None and (actual <= c.max if c.max is not None else actual >= c.min)
        judge = c.type == "judge_agreement"
        results.append(CriterionResult(type=c.type, min=c.min, actual=actual, passed=holds, severity=c.severity,
                                       scorer=c.scorer, label=c.label, source=c.source, max=c.max,
                                       percentile=c.percentile, per_item=c.per_item, bound=c.bound,
                                       confidence=summary.confidence if c.bound == "lower" else None,
                                       detail=_too_few(c, summary) if judge and actual is None else None,
                                       metric=c.metric if judge else None))
    return tuple(results)


def started(experiment: Experiment) -> Summary:
    """The summary of ``experiment`` before any item: its scorers and criteria, with which its stored
    items are counted should its run never finish it."""
    scorers = {s.id: (s.name, s.threshold) for s in experiment.scorers}
    return with_criteria(Aggregator(scorers, experiment.confidence).summary(0.0), experiment.pass_criteria)


def with_criteria(summary: Summary, criteria: Iterable[CriterionSpec]) -> Summary:
    return dataclasses.replace(summary, criteria=evaluate(criteria, summary))
