"""Score one output with every scorer of an experiment and decide the item's status."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from yamleval.calls import BoundCall, ItemContext
from yamleval.config.model import ScorerSpec
from yamleval.errors import describe_exception
from yamleval.types import Item, ItemResult, Score, ScoreResult, Usage


@dataclass(frozen=True)
class Scorer:
    """A scorer entry bound to its function."""

    spec: ScorerSpec
    call: BoundCall

    @property
    def id(self) -> str:
        return self.spec.id


def _count(value: Any) -> bool:
    """A token count: a whole number, not negative, not a bool (summed into the run's totals)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def as_usage(value: Any) -> Usage | None:
    """Token counts given as ``Usage`` or a mapping (``prompt_tokens``/``completion_tokens``,
    optional ``cost``); ValueError for anything else."""
    if value is None or isinstance(value, Usage):
        return value
    if isinstance(value, Mapping):
        prompt = value.get("prompt_tokens", value.get("prompt", 0)) or 0
        completion = value.get("completion_tokens", value.get("completion", 0)) or 0
        cost = value.get("cost")
        if _count(prompt) and _count(completion) and (cost is None or (
                isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < math.inf)):
            return Usage(prompt, completion, None if cost is None else float(cost))
    raise ValueError(f"usage {value!r}; give prompt_tokens and completion_tokens as whole numbers, "
                     "and cost (if any) as a finite number, none of them negative")


def _finish(spec: ScorerSpec, score: float | None, verdict: bool | None, reason: str | None,
            metadata: Mapping[str, Any] | None, usage: Usage | None = None) -> ScoreResult:
    if spec.negate:
        score = None if score is None else 1.0 - score
        verdict = None if verdict is None else not verdict
    passed = verdict
    if spec.threshold is not None and score is not None:
        meets = score >= spec.threshold
        passed = meets if passed is None else (passed and meets)
    return ScoreResult(spec.id, "success", score, passed, spec.threshold, reason, None, metadata, usage)


def _error(spec: ScorerSpec, message: str) -> ScoreResult:
    return ScoreResult(spec.id, "error", None, None, spec.threshold, None, message)


def _skipped(spec: ScorerSpec, reason: str) -> ScoreResult:
    return ScoreResult(spec.id, "skipped", None, None, spec.threshold, reason)


def normalize(spec: ScorerSpec, value: Any) -> ScoreResult:
    """A scorer's return value as a ScoreResult; anything unusable is that score's error."""
    if value is True or value is False:
        return _finish(spec, 1.0 if value else 0.0, value, None, None)
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            return _error(spec, f"returned {value!r}; a score must be a number from 0 to 1")
        return _finish(spec, float(value), None, None, None)
    if isinstance(value, Score):
        if value.skipped:
            return _skipped(spec, value.reason or "skipped by the scorer")
        score = value.score
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
                    or not 0.0 <= score <= 1.0:
                return _error(spec, f"returned score {score!r}; a score must be a number from 0 to 1")
            score = float(score)
        elif value.passed is None:
            return _skipped(spec, value.reason or "no score")
        try:
            usage = as_usage(value.usage)
        except ValueError as exc:
            return _error(spec, f"returned {exc}")
        return _finish(spec, score, value.passed, value.reason, dict(value.metadata) if value.metadata else None,
                       usage)
    if value is None:
        return _skipped(spec, "no score")
    return _error(spec, f"returned {type(value).__name__}; return a number from 0 to 1, a bool or yamleval.Score")


def score_output(scorers: tuple[Scorer, ...], context: ItemContext) -> dict[str, ScoreResult]:
    """Run every scorer; an exception in one is that score's error, not the item's end."""
    results: dict[str, ScoreResult] = {}
    for scorer in scorers:
        spec = scorer.spec
        expected = spec.value if spec.has_value else context.expected
        if expected is None and scorer.call.requires_expected:
            results[spec.id] = _skipped(spec, "the item has no expected value")
            continue
        try:
            own = context if expected is context.expected else dataclasses.replace(context, expected=expected)
            results[spec.id] = normalize(spec, scorer.call(own))
        except BaseException as exc:  # sys.exit() or KeyboardInterrupt raised by a scorer is its error too:
            results[spec.id] = _error(spec, describe_exception(exc))  # Ctrl-C reaches the main thread only
    return results


def item_status(scores: Mapping[str, ScoreResult]) -> tuple[str, str | None]:
    """DESIGN §4: error, then failed, then skipped (every score skipped), else passed."""
    if not scores:
        return "passed", None
    skipped = 0
    failed = False
    for score in scores.values():
        if score.status == "error":
            return "error", f"scorer '{score.scorer_id}': {score.error}"
        if score.status == "skipped":
            skipped += 1
        elif score.passed is False:
            failed = True
    if failed:
        return "failed", None
    if skipped == len(scores):
        return "skipped", None
    return "passed", None


def error_result(item: Item, message: str, latency_ms: float = 0.0) -> ItemResult:
    return ItemResult(item=item, status="error", error=message, latency_ms=latency_ms)
