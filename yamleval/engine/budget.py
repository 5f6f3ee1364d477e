"""Budgets: how many tokens, dollars and how much time a run or an experiment may spend.

A budget reached starts no new item (those running finish); the experiment ends stopped by
it, with which budget and at what figure, and a resumed run with a larger one goes on.

The run's budget binds the shards of one run in one store together: each counts, at every
item it finishes, what the others have stored meanwhile (``Elsewhere``), so four shards
started at once spend the budget once, not four times. Items running when it is reached
finish: a run of shards ends at most, for each shard, one item per running slot and one
finished but not yet counted past it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from yamleval.records import figures
from yamleval.config.budget import Budget
from yamleval.records.types import CacheUse, ItemResult, Usage

@dataclass(frozen=True)
class Spent:
    """What has been spent against a budget: tokens of runners and judges, dollars, seconds."""

    tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0

    def __add__(self, other: "Spent") -> "Spent":
        return Spent(self.tokens + other.tokens, self.cost_usd + other.cost_usd, self.seconds + other.seconds)


def spent(usages: Iterable[Usage], seconds: float, saved: CacheUse | None = None) -> Spent:
    """What these usages (of runners and judges) add up to, with ``seconds``; less what answers
    from the cache ``saved`` (their usage is counted in the items, but nothing was paid)."""
    tokens, cost = 0, 0.0
    for usage in usages:
        tokens += usage.total_tokens
        cost += usage.cost or 0.0
    if saved is not None:
        tokens, cost = tokens - saved.saved_tokens, cost - saved.saved_cost
    return Spent(tokens, cost, seconds)


def spent_on(result: ItemResult) -> Spent:
    """What one item cost: its runner's usage and its judges', less what the cache saved."""
    usages = [usage for usage in (result.usage, *(s.usage for s in result.scores.values())) if usage is not None]
    return spent(usages, 0.0, result.cache)


class Elsewhere(Protocol):
    """What is spent against a budget outside this experiment's items while it runs: the other
    shards of its run, as stored so far."""

    def spent(self) -> Spent:
        """The tokens and dollars spent there so far (no seconds: time counts where it passes)."""


def _clock(value: float) -> str:
    """``12m 5s``, ``2h 0m 3s``, ``41.2s``."""
    if value < 60:
        return f"{value:.1f}s"
    whole = int(value)
    hours, rest = divmod(whole, 3600)
    return (f"{hours}h " if hours else "") + f"{rest // 60}m {rest % 60}s"


def reached(budget: Budget, spent: Spent) -> str | None:
    """``max_tokens 10,000 reached at 10,412 tokens`` for the first limit ``spent`` has reached."""
    if budget.max_tokens is not None and spent.tokens >= budget.max_tokens:
        return f"max_tokens {budget.max_tokens:,} reached at {spent.tokens:,} tokens"
    if budget.max_cost_usd is not None and spent.cost_usd >= budget.max_cost_usd:
        return f"max_cost_usd ${budget.max_cost_usd:,g} reached at {figures.dollars(spent.cost_usd)}"
    if budget.max_duration is not None and spent.seconds >= budget.max_duration:
        return f"max_duration {budget.duration_text} reached at {_clock(spent.seconds)}"
    return None


@dataclass(frozen=True)
class Limit:
    """A budget as one experiment runs under it: ``whose`` it is (``its``, ``the run's``), what
    was spent against it before the experiment started, and what is spent ``elsewhere`` while
    it runs (read at each look)."""

    budget: Budget
    whose: str = "its"
    before: Spent = Spent()
    elsewhere: Elsewhere | None = None


def first_reached(limits: Sequence[Limit], spent: Spent) -> str | None:
    """``stopped by its budget: max_tokens 10,000 reached at 10,412 tokens``, for the first of
    ``limits`` that ``spent`` (by the experiment, added to what each had before and what is spent
    elsewhere) reaches."""
    for limit in limits:
        total = limit.before + spent
        found = reached(limit.budget, total if limit.elsewhere is None else total + limit.elsewhere.spent())
        if found is not None:
            return f"stopped by {limit.whose} budget: {found}"
    return None
