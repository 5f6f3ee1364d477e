"""Score one output with every scorer of an experiment and decide the item's status."""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from yamleval.plugins.calls import BoundCall, ItemContext
from yamleval.config.model import ScorerSpec
from yamleval.records.errors import describe_exception
from yamleval.records.types import Item, ItemResult, Score, ScoreResult, Usage


@dataclass(frozen=True)
class Scorer:
    """A scorer entry bound to its function."""

    spec: ScorerSpec
    call: BoundCall

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def corpus(self) -> Callable[[list], float] | None:
        """The plugin's ``corpus_score(stats, **with)`` (``hooks.CorpusScorer``), its ``with:``
        bound: the whole run's score from its items' summed ``corpus_stats`` (None without one)."""
        found = self.call.hooks.corpus_score
        return None if found is None else functools.partial(found, **self.call.static)


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


def _truth(value: Any) -> bool | None:
    """A bool or a numpy bool (recognised without importing numpy) as its truth value; None for
    anything else, which is not a verdict however truthy it looks."""
    if value is True or value is False:
        return value
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"):
        return bool(value)
    return None


def _fraction(value: Any) -> float | None:
    """A real number from 0 to 1 (int, float, numpy number; not a bool) as a float, else None."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value <= 1:  # NaN fails
        return float(value)
    return None


def normalize(spec: ScorerSpec, value: Any) -> ScoreResult:
    """A scorer's return value as a ScoreResult; anything unusable is that score's error."""
    verdict = _truth(value)
    if verdict is not None:
        return _finish(spec, 1.0 if verdict else 0.0, verdict, None, None)
    if isinstance(value, numbers.Real):
        score = _fraction(value)
        if score is None:
            return _error(spec, f"returned {value!r}; a score must be a number from 0 to 1")
        return _finish(spec, score, None, None, None)
    if isinstance(value, Score):
        if value.skipped:
            return _skipped(spec, value.reason or "skipped by the scorer")
        verdict = None if value.passed is None else _truth(value.passed)
        if verdict is None and value.passed is not None:
            return _error(spec, f"returned passed={value.passed!r}; passed must be True, False or None")
        score = None if value.score is None else _fraction(value.score)
        if score is None and value.score is not None:
            return _error(spec, f"returned score {value.score!r}; a score must be a number from 0 to 1")
        if score is None and verdict is None:
            return _skipped(spec, value.reason or "no score")
        try:
            usage = as_usage(value.usage)
        except ValueError as exc:
            return _error(spec, f"returned {exc}")
        return _finish(spec, score, verdict, value.reason, dict(value.metadata) if value.metadata else None, usage)
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
