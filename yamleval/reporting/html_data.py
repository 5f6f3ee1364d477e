"""The item data of ``report.html``: one array per item (its keys once, in ``ROW_FIELDS``), as
many items as fit in a chunk JSON-encoded, gzipped and put in base64, so that the page inflates
them with the browser's own DecompressionStream. Texts are cut at ``FIELD_CAP`` characters, and
shorter where the page's size budget needs it; the cuts are counted for the page to say so.
"""
from __future__ import annotations

import base64
import gzip
import json
import math
from typing import IO, Any, Callable, Sequence

from yamleval.analysis.aggregate import field_values
from yamleval.reporting.text import as_text, side_digits
from yamleval.reporting.trajectory import read_trajectory
from yamleval.records.types import ItemResult, ScoreResult

FIELD_CAP = 20_000  # characters of one text field embedded in the page
MAX_MB = 25.0  # the page's size by default, in MB: an e-mail attachment
MIN_CAP = 200  # characters of a text the size budget always leaves
CHUNK_ROWS = 2000  # rows per compressed chunk of the data: the page decodes a chunk at a time
COMPRESSION = 6  # gzip level: 9 is a few percent smaller for twice the time
INFLATED = 4  # the data inflates to at most this many times the page's size: what a browser parses in a second
TRUNCATED = "… (truncated; full text in results.json / the database)"

# Item rows are arrays (keys once, in the page's script) with these positions.
# An output equal to the expected text is sent as 0, not a second copy (text fields are strings).
SAME_AS_EXPECTED = 0
ROW_FIELDS = ("id", "status", "input", "output", "expected", "error", "latency_ms", "tokens",
              "scores", "label", "metadata", "trajectory", "assertions", "notes", "flaky", "repeats", "slices", "human")

# One compact encoder for the blob; ``default=str`` as in results.json.
dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def field_text(value: Any, cap: int = FIELD_CAP) -> str | None:
    """A field as the page shows it: text as is, anything else as JSON, capped in size."""
    if value is None:
        return None
    text = as_text(value)
    return text if len(text) <= cap else text[:cap] + TRUNCATED


class Texts:
    """``field_text`` at the cap the page's size budget allows, counting the texts it cuts."""

    def __init__(self, cap: int = FIELD_CAP):
        self.cap, self.cut = cap, 0

    def __call__(self, value: Any) -> str | None:
        if value is None:
            return None
        text = as_text(value)
        if len(text) <= self.cap:
            return text
        self.cut += 1
        return text[:self.cap] + TRUNCATED


def _verdict(score: ScoreResult) -> str:
    """``pass``/``fail`` (the scorer's verdict), ``""`` (a score without one), ``error``, ``skipped``."""
    if score.status != "success":
        return score.status
    passed = score.passed
    return "" if passed is None else "pass" if passed else "fail"


def score_value(score: ScoreResult) -> float | None:
    """A score as the page and exports show it: to 4 decimals, or as many more as it takes to
    stay on its side of the threshold (0.99996 under 0.9999 is not 0.9999)."""
    if score.score is None:
        return None
    return round(score.score, 4 if score.threshold is None else side_digits(score.score, score.threshold, 4, 17))


def _score_cell(score: ScoreResult | None, text: Texts) -> list[Any] | None:
    if score is None:
        return None
    return [score_value(score), _verdict(score), text(score.error if score.status == "error" else score.reason)]


def _assertions(value: Any, text: Texts) -> list[str | None] | None:
    """An item's assertions as a list of texts (one assertion given alone is a list of one)."""
    if value is None or value == "" or value == [] or value == {}:
        return None
    return [text(a) for a in (value if isinstance(value, (list, tuple)) else [value])]


def ms(value: float | None) -> float | None:
    """A step's duration for the page: rounded, and none that JSON cannot carry (NaN, infinity)."""
    return None if value is None or not math.isfinite(value) else round(value, 2 if value < 1 else 1)


def _trajectory(trace: Any, text: Texts) -> list[Any] | None:
    """[steps counted, tool calls, [[number, label, latency, tokens, text, error, calls], ...]],
    each call [name, arguments, result, error, latency]; every text capped as any field."""
    shown = read_trajectory(trace)
    if shown is None:
        return None
    steps = [[s.number, text(s.label), ms(s.latency_ms), None if s.tokens is None else s.tokens.total_tokens,
              text(s.text), text(s.error),
              [[text(c.name), text(c.arguments), text(c.result), text(c.error), ms(c.latency_ms)] for c in s.calls]]
             for s in shown.steps]
    return [shown.step_count, shown.call_count, steps]


def row(result: ItemResult, scorer_ids: Sequence[str], text: Texts, values: Sequence[dict[str, int]]) -> list[Any]:
    """One item as the page's script reads it (its fields in ``ROW_FIELDS`` order). ``values``: per breakdown, the index of each of its values (the item's are listed under ``slices``)."""
    item, scores = result.item, result.scores
    output, expected = text(result.output), text(item.expected)
    if output is not None and output == expected:
        output = SAME_AS_EXPECTED
    slices = [[at[v] for v in field_values(result, field) if v in at] for field, at in values]
    return [text(item.id), result.status, text(item.input), output, expected,
            text(result.error), ms(result.latency_ms),
            None if result.usage is None else result.usage.total_tokens,
            [_score_cell(scores.get(sid), text) for sid in scorer_ids], text(item.label),
            text(item.metadata) if item.metadata else None, _trajectory(result.trace, text),
            _assertions(item.assertions, text),
            [text(note) for note in result.notes] or None, result.flaky or None,
            [[r.status, text(r.output), text(r.error), ms(r.latency_ms),
              [_score_cell(r.scores.get(sid), text) for sid in scorer_ids]] for r in result.repeats] or None,
            slices or None, human_row(result.human, text)]


def human_row(human, text: Callable[[Any], Any] = lambda value: value) -> list[Any] | None:
    """A person's verdict as the page's script reads it: [the person's verdict, the scorers', review
    or dataset, by, at, note, reviews], or None."""
    if human is None:
        return None
    return [human.verdict, human.machine, human.source, text(human.by), human.at, text(human.note), human.reviews]


class Rows:
    """One experiment's rows as items stream by, written to ``out`` as compressed chunks: each
    the gzip of a JSON array of rows, in base64 (which needs no escaping inside ``<script>``).
    A chunk whose share of the size budget is exceeded is encoded again with shorter texts."""

    def __init__(self, out: IO[str], scorer_ids: Sequence[str], values: Sequence, texts: Texts, budget: "Budget"):
        self.out, self.scorer_ids, self.values, self.texts, self.budget = out, list(scorer_ids), values, texts, budget
        self.pending: list[ItemResult] = []
        self.first = True

    def item(self, result: ItemResult) -> None:
        self.pending.append(result)
        if len(self.pending) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        allowed = self.budget.allowed(len(self.pending))
        while True:
            cut = self.texts.cut
            rows = [row(r, self.scorer_ids, self.texts, self.values) for r in self.pending]
            raw = dumps(rows).encode("utf-8")
            chunk = base64.b64encode(gzip.compress(raw, COMPRESSION, mtime=0)).decode("ascii")
            over = max(len(chunk) / max(allowed[0], 1.0), len(raw) / max(allowed[1], 1.0))
            if over <= 1 or self.texts.cap <= MIN_CAP:
                break
            self.texts.cut = cut  # encoded again, shorter: the texts cut are counted then
            self.texts.cap = max(MIN_CAP, int(min(self.texts.cap, _longest(rows)) / over * 0.9))
        self.budget.spend(len(chunk) + 3, len(raw), len(self.pending))
        self.out.write(("" if self.first else ",") + '"' + chunk + '"')
        self.pending, self.first = [], False


def _longest(rows: list) -> int:
    """The longest text in ``rows``: where a lower cap starts to cut."""
    longest, stack = 0, list(rows)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            longest = max(longest, len(value))
        elif isinstance(value, list):
            stack.extend(value)
    return longest


class Budget:
    """What the item data may take so that the page stays within its size (compressed, as
    written) and the browser parses it in about a second (inflated, ``INFLATED`` times that),
    shared out over the items still to come."""

    def __init__(self, max_bytes: float, items: int):
        self.left, self.inflated, self.items = max_bytes, INFLATED * max_bytes, max(items, 1)

    def allowed(self, items: int) -> tuple[float, float]:
        share = items / max(self.items, items)
        return max(0.0, self.left) * share, max(0.0, self.inflated) * share

    def spend(self, size: int, inflated: int, items: int) -> None:
        self.left -= size
        self.inflated -= inflated
        self.items -= items
