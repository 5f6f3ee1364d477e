"""Two stored runs side by side: flips, score deltas, items added or removed, summary deltas,
and how their stored configs differ, and whether each experiment and scorer changed beyond
chance, its items paired by id.

Items are read from both runs at once, in dataset order, and paired as their ids meet: an item
waits (as the few facts pairing needs of it) only until its partner is read, so two runs of
the same dataset are compared in constant memory, whatever their size.
"""
from __future__ import annotations

import dataclasses
import difflib
import urllib.parse
from itertools import zip_longest
from array import array
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from yamleval.analysis import stats
from yamleval.records.errors import UsageError
from yamleval.records.types import ExperimentResult, ItemResults, RunInfo, Summary, Verdicts

RANK = {"passed": 2, "skipped": 1, "failed": 0, "error": -1}
ALPHA = 0.05
REGRESSED, IMPROVED, NO_CHANGE = "regressed", "improved", "no significant change"


@dataclass(frozen=True)
class Flip:
    experiment_id: str
    item_id: str
    before: str
    after: str

    @property
    def regression(self) -> bool:
        return RANK[self.after] < RANK[self.before]


@dataclass(frozen=True)
class PairedChange:
    """How an experiment's items (by their status) or a scorer (by its own verdicts) changed over
    the items in both runs: flips tested by the exact McNemar test, the mean score's paired
    difference with its interval, and the verdict at the comparison's alpha and margin."""

    pairs: int  # items with a pass/fail verdict in both runs
    worse: int  # passed in the base run, not in the candidate
    better: int  # the other way round
    p_value: float | None  # exact McNemar; None without pairs
    difference: stats.Difference  # of the mean score, candidate − base, over items scored in both
    verdict: str  # REGRESSED, IMPROVED or NO_CHANGE


@dataclass(frozen=True)
class ExperimentDiff:
    experiment_id: str
    flips: tuple[Flip, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    score_deltas: dict[str, float | None]      # scorer id -> change of its mean
    summary_deltas: dict[str, float | None]    # pass_rate, mean_score -> change
    only_in: str | None = None                 # "base" or "candidate" when one run lacks the experiment
    change: PairedChange | None = None          # of its items, paired (None when only in one run)
    scorer_changes: dict[str, PairedChange] = field(default_factory=dict)  # of each scorer in both runs
    pass_rates: tuple[float | None, float | None] = (None, None)  # base, candidate
    errored: tuple[str, ...] = ()  # items in both that errored on either side: left out of the pairs
    stored_as: tuple[str, str] | None = None  # (base, candidate) ids in their runs, when not experiment_id


@dataclass(frozen=True)
class Comparison:
    base: str
    candidate: str
    base_status: str        # each run's status: completed, interrupted, crashed, running
    candidate_status: str
    experiments: tuple[ExperimentDiff, ...] = field(default_factory=tuple)
    config_diff: tuple[str, ...] = ()  # unified diff of the stored configs; empty: the same configuration
    alpha: float = ALPHA
    margin: float = 0.0
    same_run: bool = False  # two variants of one run: one configuration, each variant's overrides

    @property
    def regressions(self) -> list[Flip]:
        return [f for e in self.experiments for f in e.flips if f.regression]

    @property
    def significant_regressions(self) -> list[str]:
        """What regressed beyond chance: ``experiment`` or ``experiment › scorer``."""
        return [name for e in self.experiments for name, change in named_changes(e) if change.verdict == REGRESSED]

    def gate_failure(self, strict: bool = False) -> str | None:
        """Why a regression gate fails, or None: an unfinished candidate, or a significant regression
        (``strict``: any item that got worse)."""
        if self.unfinished:
            return self.unfinished
        unpaired = self.unpaired(strict)
        if unpaired:
            return unpaired
        if strict:
            worse = self.regressions
            return f"{len(worse)} item{'s' if len(worse) != 1 else ''} got worse" if worse else None
        regressed = self.significant_regressions
        return f"significant regression ({self.rule}) in {', '.join(regressed)}" if regressed else None

    def unpaired(self, strict: bool = False) -> str | None:
        """Why there is too little to compare for a gate: no experiment in both runs (a renamed
        experiment, a wrong baseline) or, ``strict``, an experiment of the base run that the
        candidate lacks."""
        base = [e.experiment_id for e in self.experiments if e.only_in == "base"]
        if not any(e.only_in is None for e in self.experiments):
            candidate = [e.experiment_id for e in self.experiments if e.only_in == "candidate"]
            return (f"the runs share no experiment (base: {', '.join(base) or 'none'}; candidate: "
                    f"{', '.join(candidate) or 'none'}): nothing was compared, which is not a pass")
        if strict and base:
            return f"the candidate lacks the base run's {', '.join(base)}: those were not compared"
        return None

    @property
    def rule(self) -> str:
        """When a change counts: ``alpha 0.05`` (``, margin 0.02``)."""
        return f"alpha {self.alpha:g}" + (f", margin {self.margin:g}" if self.margin else "")

    @property
    def unfinished(self) -> str | None:
        """Why the candidate cannot pass a regression gate: it did not complete, so the items it
        never reached show as removed (or its experiments as only in the base run), not as worse."""
        if self.candidate_status == "completed":
            return None
        return (f"the candidate run {self.candidate} is {self.candidate_status}, not completed: "
                "the items it did not reach are not compared")


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


_UNJUDGED = (None, None)  # (verdict, score) of a scorer that did not judge an item


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What pairing needs of an item: its status, whether it passed and its mean score (None: not
    judged, not scored), and each scorer's own (verdict, score)."""

    id: str
    index: int
    status: str
    judged: tuple[bool | None, float | None]
    scorers: dict[str, tuple[bool | None, float | None]]


def _outcome(verdicts: Verdicts) -> _Outcome:
    item_id, index, status, scores = verdicts
    scorers, total, count = {}, 0.0, 0
    for sid, (scored, passed, score) in scores.items():
        if scored == "success":
            scorers[sid] = (passed, score)
            if score is not None:
                total, count = total + score, count + 1
    verdict = None if status == "skipped" else status == "passed"
    return _Outcome(item_id, index, status, (verdict, total / count if count else None), scorers)


class _Pairing:
    """The (base, candidate) outcomes of the items in both runs, as their ids meet when both runs
    are read side by side; ``added`` and ``removed`` are the ids left over once both are read."""

    def __init__(self, base: ItemResults, candidate: ItemResults, scorers: Sequence[str]):
        self.base, self.candidate, self.scorers = base, candidate, scorers
        self.added: list[str] = []
        self.removed: list[str] = []

    def __iter__(self):
        waiting_base: dict[str, _Outcome] = {}  # read in one run, its partner not yet in the other
        waiting_candidate: dict[str, _Outcome] = {}
        both = zip_longest(self.base.verdicts(self.scorers), self.candidate.verdicts(self.scorers))
        for before, after in both:
            if before is not None:
                before = _outcome(before)
                if before.id in waiting_candidate:
                    yield before, waiting_candidate.pop(before.id)
                else:
                    waiting_base[before.id] = before
            if after is not None:
                after = _outcome(after)
                if after.id in waiting_base:
                    yield waiting_base.pop(after.id), after
                else:
                    waiting_candidate[after.id] = after
        self.added, self.removed = list(waiting_candidate), list(waiting_base)


class _Tally:
    """One experiment's or scorer's pairs, counted as they come."""

    def __init__(self):
        self.pairs = self.worse = self.better = 0
        self.differences = array("d")  # candidate − base score of each item scored in both

    def add(self, before: tuple[bool | None, float | None], after: tuple[bool | None, float | None]) -> None:
        if before[0] is not None and after[0] is not None:
            self.pairs += 1
            if before[0] != after[0]:
                if before[0]:
                    self.worse += 1
                else:
                    self.better += 1
        if before[1] is not None and after[1] is not None:
            self.differences.append(after[1] - before[1])

    def change(self, alpha: float, margin: float) -> PairedChange:
        """The verdict, from the McNemar test when there are pass/fail pairs, else from whether the
        mean score's interval (at 1 − alpha) leaves out 0; an effect below ``margin`` never counts."""
        p_value = stats.mcnemar_p_value(self.worse, self.better) if self.pairs else None
        difference = stats.paired_difference(self.differences, 1 - alpha)
        if p_value is not None:
            significant, effect = p_value < alpha, (self.better - self.worse) / self.pairs
        elif difference.interval is not None:
            significant, effect = difference.interval[0] > 0 or difference.interval[1] < 0, difference.mean
        else:
            significant, effect = False, 0.0
        verdict = NO_CHANGE if not significant or not effect or abs(effect) < margin else (
            IMPROVED if effect > 0 else REGRESSED)
        return PairedChange(self.pairs, self.worse, self.better, p_value, difference, verdict)


def named_changes(e: ExperimentDiff) -> list[tuple[str, PairedChange]]:
    """The experiment's change and each scorer's, named ``experiment`` and ``experiment › scorer``."""
    found = [(e.experiment_id, e.change)] if e.change else []
    return found + [(f"{e.experiment_id} › {sid}", change) for sid, change in e.scorer_changes.items()]


def shared_scorers(base: Summary, candidate: Summary) -> list[str]:
    """The scorers that scored items on both sides. Means and paired verdicts are counted over
    these alone: a ``pairwise`` judge scores a variant against the baseline, never the baseline
    itself, and a mean over it on one side only would compare different things."""
    def scored(summary: Summary, sid: str) -> bool:
        found = summary.scorers.get(sid)
        unscored = found is not None and found.mean is None and found.passed + found.failed == 0 \
            and found.skipped + found.errored > 0  # skipped or failed wherever it ran
        return found is not None and not unscored

    return [sid for sid in base.scorers if scored(base, sid) and scored(candidate, sid)]


def mean_over(summary: Summary, scorers: Sequence[str]) -> float | None:
    """The mean of every numeric score of ``scorers`` (the summary's ``mean_score`` when they are all)."""
    if list(scorers) == list(summary.scorers):
        return summary.mean_score
    total = count = 0.0
    for sid in scorers:
        found = summary.scorers.get(sid)
        if found is not None and found.mean is not None and found.histogram:
            total, count = total + found.mean * sum(found.histogram), count + sum(found.histogram)
    return total / count if count else None


def diff_experiments(base: ExperimentResult, candidate: ExperimentResult, alpha: float = ALPHA,
                     margin: float = 0.0) -> ExperimentDiff:
    """Two results of an experiment (of two runs, or two variants of one), their items paired by id;
    their means and paired verdicts over the scorers both have (``shared_scorers``)."""
    scorers = dict.fromkeys([*base.summary.scorers, *candidate.summary.scorers])
    both = shared_scorers(base.summary, candidate.summary)
    tally, scorer_tallies, flips = _Tally(), {sid: _Tally() for sid in both}, []
    errored = []
    for before, after in (pairing := _Pairing(base.items, candidate.items, both)):
        if before.status != after.status:
            flips.append((after.index, Flip(candidate.experiment_id, after.id, before.status, after.status)))
        if "error" in (before.status, after.status):  # an item not evaluated says nothing of its quality
            errored.append((after.index, after.id))
            continue
        tally.add(before.judged, after.judged)
        for sid, scorer in scorer_tallies.items():
            scorer.add(before.scorers.get(sid, _UNJUDGED), after.scorers.get(sid, _UNJUDGED))
    score_deltas = {}
    for sid in scorers:
        b, c = base.summary.scorers.get(sid), candidate.summary.scorers.get(sid)
        score_deltas[sid] = _delta(b.mean if b else None, c.mean if c else None)
    return ExperimentDiff(
        experiment_id=candidate.experiment_id, flips=tuple(f for _, f in sorted(flips, key=lambda f: f[0])),
        added=tuple(pairing.added), removed=tuple(pairing.removed),
        score_deltas=score_deltas,
        summary_deltas={"pass_rate": _delta(base.summary.pass_rate, candidate.summary.pass_rate),
                        "mean_score": _delta(mean_over(base.summary, both), mean_over(candidate.summary, both))},
        change=tally.change(alpha, margin),
        scorer_changes={sid: t.change(alpha, margin) for sid, t in scorer_tallies.items()},
        pass_rates=(base.summary.pass_rate, candidate.summary.pass_rate),
        errored=tuple(item_id for _, item_id in sorted(errored)),
    )


def config_diff(base: Mapping[str, str], candidate: Mapping[str, str]) -> tuple[str, ...]:
    """A unified diff (one line of context) of two runs' config files as stored, file by file."""
    lines: list[str] = []
    for name in sorted({*base, *candidate}):
        lines += difflib.unified_diff(base.get(name, "").splitlines(), candidate.get(name, "").splitlines(),
                                      f"base/{name}", f"candidate/{name}", n=1, lineterm="")
    return tuple(lines)


def compare(base_run: RunInfo, base: Sequence[ExperimentResult], candidate_run: RunInfo,
            candidate: Sequence[ExperimentResult], alpha: float = ALPHA, margin: float = 0.0) -> Comparison:
    """Match experiments by id and items by id within them; a change counts when it is significant
    at ``alpha`` and at least ``margin`` (a pass rate's or mean score's change, in [0, 1])."""
    before = {r.experiment_id: r for r in base}
    after = {r.experiment_id: r for r in candidate}
    diffs = []
    for experiment_id in dict.fromkeys([*before, *after]):
        if experiment_id in before and experiment_id in after:
            diffs.append(diff_experiments(before[experiment_id], after[experiment_id], alpha, margin))
        else:
            side = "base" if experiment_id in before else "candidate"
            diffs.append(ExperimentDiff(experiment_id, (), (), (), {}, {}, only_in=side))
    return Comparison(base_run.run_id, candidate_run.run_id, base_run.status, candidate_run.status, tuple(diffs),
                      config_diff(base_run.config_text, candidate_run.config_text), alpha, margin)


def split_variant(ref: str) -> tuple[str, str | None]:
    """A run's reference and the variant it names, if any: ``RUN:VARIANT``, ``RUN:EXPERIMENT/VARIANT``,
    or an Eval Center address of the variant (``http://host/runs/RUN/items/EXPERIMENT%2FVARIANT``,
    an item's address too): ``("RUN", "VARIANT")``; a plain ``RUN``: ``("RUN", None)``."""
    if ref.startswith("runs/") or "/runs/" in ref:
        parts = [urllib.parse.unquote(part) for part in ref.split("runs/", 1)[1].split("#")[0].split("?")[0].split("/")]
        if len(parts) > 2 and parts[1] == "items" and parts[2]:
            return parts[0], parts[2]
        return parts[0], None
    run, colon, variant = ref.partition(":")
    return (run, variant) if colon and run and variant else (ref, None)


def of_variant(results: Sequence[ExperimentResult], name: str, run_id: str) -> list[ExperimentResult]:
    """The results of a run's variant ``name`` (its id, or ``experiment/variant``): one per experiment
    with such a variant. A name no variant has is a usage error that lists the variants there are."""
    found = [r for r in results if r.variant is not None and name in (r.variant.id, r.experiment_id)]
    if found:
        return found
    known = [r.experiment_id for r in results if r.variant is not None]
    there = f"its variants: {', '.join(known)}" if known else "it has no variants"
    raise UsageError(f"run {run_id} has no variant '{name}'; {there}")


def compare_variants(base_run: RunInfo, base: Sequence[ExperimentResult], candidate_run: RunInfo,
                     candidate: Sequence[ExperimentResult], alpha: float = ALPHA, margin: float = 0.0) -> Comparison:
    """Two variants (``of_variant``), of one run or of two, paired by the experiment each is a variant
    of, and compared as two runs are (``diff_experiments``)."""
    before = {r.variant.experiment_id: r for r in base}
    after = {r.variant.experiment_id: r for r in candidate}
    diffs = []
    for experiment_id in dict.fromkeys([*before, *after]):
        if experiment_id in before and experiment_id in after:
            diff = diff_experiments(before[experiment_id], after[experiment_id], alpha, margin)
            diffs.append(dataclasses.replace(diff, experiment_id=experiment_id, stored_as=(
                before[experiment_id].experiment_id, after[experiment_id].experiment_id)))
        else:
            side = "base" if experiment_id in before else "candidate"
            diffs.append(ExperimentDiff(experiment_id, (), (), (), {}, {}, only_in=side))
    def named(run: RunInfo, results: Sequence[ExperimentResult]) -> str:  # RUN:VARIANT, as it was asked for
        return f"{run.run_id}:{'/'.join(sorted({r.variant.id for r in results}))}"

    same = base_run.run_id == candidate_run.run_id
    return Comparison(named(base_run, base), named(candidate_run, candidate),
                      base_run.status, candidate_run.status, tuple(diffs),
                      () if same else config_diff(base_run.config_text, candidate_run.config_text), alpha, margin,
                      same_run=same)


def compare_named(base_run: RunInfo, base: Sequence[ExperimentResult], base_variant: str | None,
                  candidate_run: RunInfo, candidate: Sequence[ExperimentResult], candidate_variant: str | None,
                  alpha: float = ALPHA, margin: float = 0.0) -> Comparison:
    """Two runs (``compare``), or a variant of each (``compare_variants``) when both name one
    (``split_variant``); a variant on one side only is a usage error."""
    if base_variant is None and candidate_variant is None:
        return compare(base_run, base, candidate_run, candidate, alpha, margin)
    if base_variant is None or candidate_variant is None:
        raise UsageError("name a variant on both sides (RUN:VARIANT RUN:VARIANT), or on neither")
    return compare_variants(base_run, of_variant(base, base_variant, base_run.run_id), candidate_run,
                            of_variant(candidate, candidate_variant, candidate_run.run_id), alpha, margin)
