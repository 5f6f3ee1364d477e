"""A run split over N jobs (``yamleval run --shard I/N``): which items are shard I's.

An item belongs to one shard, decided by a stable hash of its experiment id and item id, so N
jobs given the same dataset split it between them with no item twice and none left out,
whatever the order of the rows, on any machine and Python. ``yamleval merge`` puts the
shards' stored runs back together (``yamleval.lifecycle.merge``).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from yamleval.records.errors import UsageError
from yamleval.records.types import Item

MAX_SHARDS = 10_000


@dataclass(frozen=True)
class Shard:
    number: int  # from 1
    count: int

    def __str__(self) -> str:
        return f"{self.number}/{self.count}"

    def holds(self, experiment_id: str, item_id: str) -> bool:
        digest = hashlib.sha256(f"{experiment_id}\x00{item_id}".encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.number - 1

    def items(self, items: Iterable[Item], experiment_id: str) -> Iterator[Item]:
        return (item for item in items if self.holds(experiment_id, item.id))


def key(experiment) -> str:
    """What an item's shard is hashed with, beside its id: its experiment's id, the same for
    every variant of it (so a variant and its baseline answer an item in the same shard)."""
    return experiment.variant.experiment_id if experiment.variant is not None else experiment.id


def parse(text: str) -> Shard:
    """``I/N`` (1 <= I <= N) as a Shard; UsageError saying what is wrong."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if found is None:
        raise UsageError(f"--shard {text!r} is not I/N: give this job's shard and the number of shards,"
                         " e.g. --shard 1/4 ... --shard 4/4")
    number, count = int(found[1]), int(found[2])
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shard {text}: the number of shards must be between 1 and {MAX_SHARDS:,}")
    if not 1 <= number <= count:
        raise UsageError(f"--shard {text}: the shard must be between 1 and {count} (shards are counted from 1)")
    return Shard(number, count)


def check_run_id(run_id: str, resume: str | None) -> None:
    """A new run's id given by its caller (``--run-id``), so that the shards of one CI run share it."""
    if resume:
        raise UsageError("--run-id names a new run: to continue a run, give its id to --resume alone")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", run_id):
        raise UsageError(f"--run-id {run_id!r}: a run id is 1 to 100 letters, digits, '.', '_' or '-', starting with"
                         " a letter or digit")

