"""The variants of an experiment side by side, as every report shows them: a row of figures per
variant (the best of each column marked), each variant's paired comparison with the baseline
(``compare``: flips, McNemar p, mean difference with its interval), and, with a ``pairwise``
scorer, its wins, ties and losses against the baseline with an interval on the win rate.

Variants run as experiments of their own (``config.variants``); here they are grouped back.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from yamleval.records import figures
from yamleval.analysis import stats
from yamleval.analysis.compare import ALPHA, NO_CHANGE, ExperimentDiff, diff_experiments, mean_over
from yamleval.reporting.comparison import change_details, change_text, errored_text, verdict_words
from yamleval.records.types import ExperimentResult

PAIRWISE = "pairwise"
# column -> whether more is better; per-scorer means are columns too (more is better)
COLUMNS = {"pass_rate": True, "mean_score": True, "p50": False, "p95": False, "tokens": False, "cost": False}


@dataclass(frozen=True)
class Preference:
    """A pairwise scorer's verdicts on one variant against the baseline, over the items it judged."""

    scorer_id: str
    wins: int
    ties: int
    losses: int
    win_rate: float | None  # wins / items judged (ties count as no win)
    interval: stats.Interval | None  # of the win rate, at the summary's confidence


@dataclass(frozen=True)
class VariantRow:
    result: ExperimentResult
    values: dict[str, float | None]  # by column (COLUMNS, then "scorer:<id>")
    best: frozenset[str]  # the columns where it is best of the variants
    comparison: ExperimentDiff | None  # with the baseline (None for the baseline itself)
    preferences: tuple[Preference, ...] = ()


@dataclass(frozen=True)
class VariantGroup:
    experiment_id: str
    label: str | None
    rows: tuple[VariantRow, ...]  # the baseline first
    scorers: tuple[str, ...]  # the scorer ids with a mean column

    @property
    def baseline(self) -> ExperimentResult:
        return self.rows[0].result

    @property
    def comparable(self) -> bool:
        """Whether it holds the baseline and another variant to compare with it."""
        return len(self.rows) > 1 and self.baseline.variant.baseline


def pairwise_scorers(result: ExperimentResult) -> list[str]:
    """The ids of the experiment's ``pairwise`` scorers (its scorers are listed as written, in order)."""
    return [sid for sid, uses in zip(result.summary.scorers, result.scorers) if uses == PAIRWISE]


def _values(result: ExperimentResult, scorers: Sequence[str]) -> dict[str, float | None]:
    """The figures of one variant; its mean score over ``scorers``, those every variant has
    (a ``pairwise`` judge's ties would lift a variant's mean over the baseline's)."""
    s = result.summary
    values = {"pass_rate": s.pass_rate, "mean_score": mean_over(s, [sid for sid in s.scorers if sid in scorers]), "p50": s.latency_ms.p50, "p95": s.latency_ms.p95,
              "tokens": float(s.tokens.total_tokens) if s.completed else None, "cost": s.tokens.cost}
    for sid in scorers:
        found = s.scorers.get(sid)
        values[f"scorer:{sid}"] = found.mean if found else None
    return values


def _best(rows: list[dict[str, float | None]]) -> list[set[str]]:
    marks: list[set[str]] = [set() for _ in rows]
    for column in rows[0]:
        more = COLUMNS.get(column, True)
        known = [v[column] for v in rows if v[column] is not None]
        if len(known) < 2 or min(known) == max(known):
            continue  # nothing to choose between
        top = max(known) if more else min(known)
        for marked, values in zip(marks, rows):
            if values[column] == top:
                marked.add(column)
    return marks


def _preferences(result: ExperimentResult) -> tuple[Preference, ...]:
    """Each pairwise scorer's verdicts, counted from its scores' ``metadata.preferred``."""
    scorers = pairwise_scorers(result)
    if not scorers:
        return ()
    counts = {sid: {"variant": 0, "tie": 0, "baseline": 0} for sid in scorers}
    for item in result.items:
        for sid in scorers:
            score = item.scores.get(sid)
            preferred = (score.metadata or {}).get("preferred") if score is not None and score.status == "success" else None
            if preferred in counts[sid]:
                counts[sid][preferred] += 1
    found = []
    for sid, count in counts.items():
        judged, wins = sum(count.values()), count["variant"]
        found.append(Preference(sid, wins, count["tie"], count["baseline"], wins / judged if judged else None,
                                stats.wilson_interval(wins, judged, result.summary.confidence)))
    return tuple(found)


def _group(results: list[ExperimentResult]) -> VariantGroup:
    results = sorted(results, key=lambda r: not r.variant.baseline)
    pairwise = {sid for r in results for sid in pairwise_scorers(r)}
    scorers = tuple(sid for sid in dict.fromkeys(s for r in results for s in r.summary.scorers) if sid not in pairwise)
    values = [_values(r, scorers) for r in results]
    base = results[0] if results[0].variant.baseline else None  # None: the baseline is not among them
    rows = tuple(VariantRow(r, v, frozenset(b), None if base is None or r is base else diff_experiments(base, r),
                            () if base is None or r is base else _preferences(r))
                 for r, v, b in zip(results, values, _best(values)))
    return VariantGroup(results[0].variant.experiment_id, results[0].label, rows, scorers)


def groups(results: Sequence[ExperimentResult]) -> list[VariantGroup]:
    """The run's experiments that have variants, each with its variants, in run order."""
    found: dict[str, list[ExperimentResult]] = {}
    for result in results:
        if result.variant is not None:
            found.setdefault(result.variant.experiment_id, []).append(result)
    return [_group(members) for members in found.values()]


def tables(results: Sequence[ExperimentResult]) -> list[VariantGroup]:
    """The groups a variants table shows: those that hold the baseline and another variant (one
    variant alone, as on an item's page or after ``--variant``, has nothing to be compared with)."""
    return [group for group in groups(results) if group.comparable]


def columns(group: VariantGroup) -> list[tuple[str, str]]:
    """The table's figure columns: (column, heading)."""
    level = figures.level(group.baseline.summary.confidence)
    return [("pass_rate", f"pass rate ({level})"), ("mean_score", "mean score"),
            *((f"scorer:{sid}", f"{sid} mean") for sid in group.scorers),
            ("p50", "p50 latency"), ("p95", "p95 latency"), ("tokens", "tokens"), ("cost", "cost")]


def cell(row: VariantRow, column: str) -> str:
    """One figure of a variant as the tables show it."""
    value, summary = row.values[column], row.result.summary
    if column == "pass_rate":
        return f"{figures.percent(value)} ({figures.interval(summary.pass_rate_ci, rate=True)})"
    if column in ("p50", "p95"):
        return figures.ms(value)
    if column == "tokens":
        return "—" if value is None else f"{int(value):,}"
    if column == "cost":
        return "—" if value is None else figures.dollars(value)
    return figures.number(value)


def against_baseline(row: VariantRow, markdown: bool = False) -> str:
    """How the variant compares with the baseline, in the words of ``yamleval compare``: the paired
    verdict (``better, not proven with 12 items (about 17 ...)``) with its figures, the items left
    out of the pairs because they errored, and each pairwise scorer's wins."""
    e = row.comparison
    if e is None:
        return "baseline"
    parts = []
    if e.change:
        words = verdict_words(e, ALPHA, "variant")
        if words is None:
            parts.append(change_text(e.change, ALPHA, markdown))
        else:
            shown = f"**{words}**" if markdown and e.change.verdict != NO_CHANGE else words
            parts.append(f"{shown}: {change_details(e.change, ALPHA, pairs=False)}")
    if e.errored:
        parts.append(errored_text(e))
    for p in row.preferences:
        if p.win_rate is None:
            rate = ""
        elif p.wins == p.losses == 0:  # a win rate of 0% would read as a loss on every item
            rate = ", every one a tie: neither answer preferred"
        else:
            rate = f", win rate {figures.percent(p.win_rate)} ({figures.interval(p.interval, rate=True)})"
        parts.append(f"{p.scorer_id}: {figures.count(p.wins, 'win')}, {figures.count(p.ties, 'tie')}, "
                     f"{figures.count(p.losses, 'loss', 'losses')}{rate}")
    return "; ".join(parts)
