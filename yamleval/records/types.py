"""Typed records that cross module boundaries. No logic beyond derived properties."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
import itertools
from typing import Any, Iterator, Literal, Mapping, Sequence

from yamleval.records.reviews import Agreement, HumanVerdict  # noqa: F401  (named in fields below)

ItemStatus = Literal["passed", "failed", "error", "skipped"]
ScoreStatus = Literal["success", "error", "skipped"]


@dataclass(frozen=True, slots=True)
class Item:
    """One dataset item, as runners and scorers receive it."""

    id: str
    index: int
    input: Any
    expected: Any = None
    context: Any = None
    assertions: Any = None
    metadata: Mapping[str, Any] | None = None
    label: str | None = None
    source: str | None = None  # "file:line" of the row it was read from, when a file has one
    human_verdict: str | None = None  # passed or failed: a person's verdict the dataset gives (``fields:``)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a call (or a sum of calls) used, and its cost in dollars when a price is known."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class RunnerResult:
    """What a runner returns when it has more to say than the output itself.

    Any other return value is taken as the output as it is (a dict with an
    ``output`` key included): wrapping is always explicit.
    """

    output: Any
    metadata: Mapping[str, Any] | None = None
    usage: Usage | Mapping[str, int] | None = None
    trace: list[Any] | None = None


@dataclass(frozen=True)
class Score:
    """What a scorer returns when a bare float or bool is not enough.

    ``score`` is a number in [0, 1] or None; ``passed`` is the scorer's own verdict
    (None: leave it to the threshold); ``skipped`` means there was nothing to judge.
    """

    score: float | None = None
    passed: bool | None = None
    reason: str | None = None
    metadata: Mapping[str, Any] | None = None
    skipped: bool = False
    usage: Usage | None = None  # what a judge model used to give this score


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """The outcome of one scorer on one item."""

    scorer_id: str
    status: ScoreStatus
    score: float | None = None
    passed: bool | None = None
    threshold: float | None = None
    reason: str | None = None
    error: str | None = None
    metadata: Mapping[str, Any] | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item after running and scoring."""

    item: Item
    status: ItemStatus
    output: Any = None
    error: str | None = None
    latency_ms: float = 0.0
    usage: Usage | None = None
    scores: Mapping[str, ScoreResult] = field(default_factory=dict)
    metadata: Mapping[str, Any] | None = None
    trace: list[Any] | None = None
    repeats: tuple["ItemResult", ...] = ()  # each run of the item, with ``repeats: N`` over 1
    flaky: bool = False  # its repeats disagree: some passed, some failed
    cache: "CacheUse | None" = None  # when the answer cache was used for it
    human: "HumanVerdict | None" = None  # a person's verdict, which counts: ``status`` is it
    # the item's record as the store keeps it, when read from there (a report copies it);
    # not copied by dataclasses.replace, so a changed result is encoded anew
    record: str | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the runner says a person should know about the answer: its metadata's ``notes``
        (``answer cut off at max_tokens (256)``), which every report shows with the item."""
        notes = self.metadata.get("notes") if isinstance(self.metadata, Mapping) else None
        return tuple(str(note) for note in notes) if isinstance(notes, (list, tuple)) else ()


@dataclass(frozen=True)
class ScorerSummary:
    id: str
    name: str
    threshold: float | None
    mean: float | None
    min: float | None
    max: float | None
    pass_rate: float | None
    passed: int
    failed: int
    errored: int
    skipped: int
    histogram: tuple[int, ...] | None = None  # scores in ten bins over [0, 1]
    pass_rate_ci: tuple[float, float] | None = None  # [low, high] at the summary's confidence
    mean_ci: tuple[float, float] | None = None
    corpus: float | None = None  # the whole run's score, for a scorer that has one (corpus BLEU)


@dataclass(frozen=True)
class LatencySummary:
    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    max: float | None = None
    p90: float | None = None  # after max: a summary stored before they were kept has none
    p99: float | None = None


@dataclass(frozen=True)
class CriterionResult:
    type: str
    min: float | None  # None for a criterion with a ``max`` (flaky_rate)
    actual: float | None
    passed: bool
    severity: str = "error"
    scorer: str | None = None
    label: str | None = None
    source: str | None = None  # "file:line" of the criterion in the config
    max: float | None = None
    percentile: int | str | None = None  # of latency: 50, 90, 95, 99 or "max"
    per_item: bool = False  # of tokens and cost: the mean per completed item
    bound: str = "point"  # of mean_score and pass_rate: "lower" checks the interval's lower end
    confidence: float | None = None  # the level of that interval, with bound "lower"
    baseline: str | None = None  # no_regression: what it compares with, at alpha and margin
    alpha: float | None = None
    margin: float | None = None
    skipped: bool = False  # not judged (no_regression without a baseline): never fails
    detail: str | None = None  # what no_regression found, or why it was skipped
    metric: str | None = None  # judge_agreement: kappa or agreement


@dataclass(frozen=True)
class Throttling:
    """What rate limits and adaptive concurrency did to an experiment's calls to its endpoints:
    attempts made, refused (429 or 503), and seconds waited before they could start (summed)."""

    calls: int = 0
    throttled: int = 0
    waited_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What the answer cache (``yamleval.calls.answers``) did for an item or an experiment: answers read
    from it, answers it did not have (then kept), the tokens and cost the hits saved, and entries
    found damaged (ignored: the call was made)."""

    hits: int = 0
    misses: int = 0
    saved_tokens: int = 0
    saved_cost: float = 0.0
    damaged: int = 0
    not_cached: int = 0  # judge calls asked at a temperature other than 0: never kept, asked each time

    def __add__(self, other: "CacheUse") -> "CacheUse":
        return CacheUse(self.hits + other.hits, self.misses + other.misses, self.saved_tokens + other.saved_tokens,
                        self.saved_cost + other.saved_cost, self.damaged + other.damaged,
                        self.not_cached + other.not_cached)


@dataclass(frozen=True)
class Summary:
    total: int
    completed: int
    passed: int
    failed: int
    errored: int
    skipped: int
    mean_score: float | None
    pass_rate: float | None
    duration_ms: float
    latency_ms: LatencySummary
    tokens: Usage
    scorers: Mapping[str, ScorerSummary]
    criteria: tuple[CriterionResult, ...] = ()
    judge_tokens: Usage = Usage()  # kept apart from the system under test's
    throttling: Throttling = Throttling()
    noted: int = 0  # items with notes (``ItemResult.notes``)
    confidence: float = 0.95  # the level of the intervals: [low, high], None with too few items
    pass_rate_ci: tuple[float, float] | None = None
    mean_score_ci: tuple[float, float] | None = None  # of the per-item means of their scores
    flaky: int = 0  # items whose repeats disagree (``ItemResult.flaky``)
    cache: CacheUse = CacheUse()
    breakdowns: tuple["Breakdown", ...] = ()  # the same figures per value of an item field (``aggregate``)
    reviewed: int = 0  # items counted with a person's verdict (``ItemResult.human``)
    overruled: int = 0  # of those, the ones where it differs from the scorers'
    agreement: Mapping[str, "Agreement"] = field(default_factory=dict)  # by scorer, where people judged too


@dataclass(frozen=True)
class Slice:
    """The items that have one value of a breakdown's field, and their summary (no criteria)."""

    value: str
    summary: Summary


@dataclass(frozen=True)
class Breakdown:
    """A summary per value of an item field (``metadata.topic``, ``tags``), the weakest first."""

    field: str
    slices: tuple[Slice, ...]
    other: int = 0  # items in no slice: their value came past ``aggregate.MAX_SLICES`` (by default, before the field was seen)


Verdicts = tuple  # (id, position, status, {scorer id: (status, passed, score)}): ItemResults.verdicts


class ItemResults:
    """An experiment's item results in dataset order: ``ItemList`` holds them in memory, the
    store's view reads them from the database each time it is iterated."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __iter__(self) -> Iterator[ItemResult]:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return len(self) > 0

    def with_status(self, statuses: Sequence[str], limit: int) -> list[ItemResult]:
        """The first ``limit`` items with one of ``statuses``, in dataset order."""
        return list(itertools.islice((r for r in self if r.status in statuses), limit))

    def with_notes(self, limit: int) -> list[ItemResult]:
        """The first ``limit`` items with notes, in dataset order."""
        return list(itertools.islice((r for r in self if r.notes), limit))

    def flaky(self, limit: int) -> list[ItemResult]:
        """The first ``limit`` flaky items, in dataset order."""
        return list(itertools.islice((r for r in self if r.flaky), limit))

    def verdicts(self, scorers: Sequence[str]) -> Iterator[Verdicts]:
        """Of each item, in dataset order, what pairing it with another run's needs: its id,
        position and status, and the (status, passed, score) of each of ``scorers`` that scored it."""
        for r in self:
            yield r.item.id, r.item.index, r.status, {sid: (s.status, s.passed, s.score) for sid, s in r.scores.items()
                                                      if sid in scorers}


class ItemList(ItemResults):
    """Item results held in memory."""

    def __init__(self, results: Sequence[ItemResult] = ()):
        self._results = tuple(results)

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[ItemResult]:
        return iter(self._results)

    def __getitem__(self, index: int) -> ItemResult:
        return self._results[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ItemList) and self._results == other._results

    def __repr__(self) -> str:
        return f"ItemList({list(self._results)!r})"


@dataclass(frozen=True)
class Variant:
    """One variant of an experiment (its ``variants:`` or ``matrix:``): the same items, scorers and
    criteria with its own overrides of the runner's ``with:`` and of ``vars:``. It runs as an
    experiment of its own, ``experiment_id/id``."""

    id: str
    experiment_id: str  # the experiment it is a variant of
    label: str | None = None
    baseline: bool = False  # the one the others are compared with
    gate: bool = True  # False: reported, never failing the run


@dataclass(frozen=True)
class ExperimentResult:
    """A finished (or interrupted) run of one experiment."""

    experiment_id: str
    label: str | None
    passed: bool
    summary: Summary
    items: ItemResults
    started_at: str
    completed_at: str
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    aborted: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    runner: str | None = None
    dataset: str | None = None
    scorers: tuple[str, ...] = ()
    incomplete: bool = False  # read back unfinished (its run crashed): the summary counts the items stored
    could_not_evaluate: bool = False  # aborted because an endpoint cannot be used: no verdict on quality
    stopped_by_budget: bool = False  # aborted because a budget was reached (``aborted`` says which): resumable
    variant: Variant | None = None  # what it is a variant of, when it is one

    @property
    def gated(self) -> bool:
        """Whether its verdict counts in the run's (a variant with ``gate: false`` is only reported)."""
        return self.variant is None or self.variant.gate

    @property
    def outcome(self) -> str:
        """How it ended, the first that holds: stopped (by a budget), aborted, interrupted, incomplete,
        passed or failed."""
        return ("stopped" if self.stopped_by_budget else "aborted" if self.aborted else "interrupted" if self.interrupted else "incomplete" if self.incomplete
                else "passed" if self.passed else "failed")


def now() -> str:
    """The time now as every time of a run is kept: UTC, to the millisecond, ``...T12:00:00.000Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RunInfo:
    """One invocation of ``yamleval run``, as stored: what ran, where, with what."""

    run_id: str
    # stopped: by a budget; aborted: an experiment ended early (a dataset error, an endpoint that cannot be used)
    status: Literal["running", "completed", "interrupted", "stopped", "aborted", "crashed"]
    started_at: str
    completed_at: str | None = None
    passed: bool | None = None
    yamleval_version: str = ""
    python_version: str = ""
    host: str = ""
    config_files: tuple[str, ...] = ()
    config_hash: str = ""
    git_commit: str | None = None
    git_dirty: bool | None = None
    # each config file's text as written, by file name: ``${VAR}`` unexpanded, never a value
    config_text: Mapping[str, str] = field(default_factory=dict)
    rescored_from: str | None = None  # the run whose stored outputs this one scored again (``yamleval rescore``)
    retried_from: str | None = None  # the run whose errored items this one ran again (``--retry-errors``)


@dataclass(frozen=True)
class StoredExperiment:
    """An experiment of a stored run: how far it got, and the hash of the dataset it read."""

    experiment_id: str
    status: str  # running, completed, interrupted, aborted, unevaluated (an endpoint unusable), stopped (a budget)
    dataset_hash: str | None
    duration_ms: float = 0.0  # how long its items ran, as its stored summary says (none stored: 0)
