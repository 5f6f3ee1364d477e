"""What people say of items: a review (who, when, what, the machine's verdict then), the human
verdict an item counts with, and how far a scorer agrees with people (``analysis.agreement``
counts it)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

VERDICTS = {"pass": "passed", "passed": "passed", "fail": "failed", "failed": "failed", "true": "passed",
            "false": "failed", "yes": "passed", "no": "failed", "1": "passed", "0": "failed"}
JUDGED = ("passed", "failed")  # the items a person's verdict can count for: an error or a skip has none to overrule


def verdict_of(value: Any) -> str | None:
    """``passed`` or ``failed`` for what a person wrote (pass/fail, true/false, yes/no, 1/0), None for
    anything else."""
    if isinstance(value, bool):
        return "passed" if value else "failed"
    if isinstance(value, (int, float)) and value in (0, 1):
        return "passed" if value else "failed"
    return VERDICTS.get(value.strip().lower()) if isinstance(value, str) else None


@dataclass(frozen=True)
class Review:
    """One review as the store keeps it (never changed, never removed)."""

    experiment_id: str
    item_id: str
    verdict: str  # passed or failed
    by: str
    at: str
    machine: str  # the item's verdict by its scorers when the review was given
    note: str | None = None


@dataclass(frozen=True, slots=True)
class HumanVerdict:
    """A person's verdict on an item: its latest review, or the label its dataset gives it
    (``fields: {human_verdict: …}``). Where there is one it counts instead of the machine's."""

    verdict: str  # passed or failed
    machine: str  # the verdict of the item's scorers
    source: str = "review"  # review or dataset
    by: str | None = None
    at: str | None = None
    note: str | None = None
    reviews: int = 0  # the item's reviews in all (each kept in the store)

    @property
    def overruled(self) -> bool:
        return self.verdict != self.machine


def machine_verdict(result) -> str:
    """The item's verdict by its scorers, whatever a person said."""
    return result.human.machine if result.human is not None else result.status


def counted(result, verdict: HumanVerdict | None):
    """The item ``result`` counted with a person's ``verdict`` (its status the person's), or as it is
    when there is none or it has no verdict to overrule (an error, a skip)."""
    machine = machine_verdict(result)
    if verdict is None or machine not in JUDGED:
        return result
    return dataclasses.replace(result, status=verdict.verdict, human=dataclasses.replace(verdict, machine=machine))


def labelled(result):
    """``result`` counted with the human verdict its dataset item carries, if it has one."""
    label = result.item.human_verdict
    if label is None or result.human is not None:
        return result
    return counted(result, HumanVerdict(label, result.status, source="dataset"))


UNMEASURABLE = "agreement cannot be measured: people gave one verdict only"


@dataclass(frozen=True)
class Agreement:
    """How a scorer's verdicts agree with people's on the items both judged. ``matrix``: rows the
    person's pass, fail; columns the scorer's pass, fail. ``kappa_ci``: Cohen's kappa's interval at
    the summary's confidence (None with too few items)."""

    scorer: str
    matrix: tuple[tuple[int, int], tuple[int, int]]
    rate: float | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None = None
    rate_ci: tuple[float, float] | None = None

    @property
    def n(self) -> int:
        return sum(map(sum, self.matrix))

    @property
    def one_verdict(self) -> bool:
        """Whether people gave every item both judged the same one verdict: no kappa or agreement
        then tells a scorer that discerns from one that says the same of everything."""
        return self.n > 0 and 0 in (sum(self.matrix[0]), sum(self.matrix[1]))
