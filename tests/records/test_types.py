"""The item record: the fast encoder writes exactly what the plain one does, and it reads back."""
from __future__ import annotations

import dataclasses
import json

import pytest

from yamleval.records.codec import encode_record, item_from_record, summary_from_json, summary_to_json
from yamleval.records.types import (Breakdown, CriterionResult, Item, ItemResult, LatencySummary, ScoreResult, ScorerSummary,
                            Slice, Summary, Usage)

CASES = [
    ItemResult(item=Item(id="a", index=0, input="q", expected="x"), status="passed", output="x", latency_ms=0.5,
               scores={"exact_match": ScoreResult("exact_match", "success", 1.0, True)}),
    ItemResult(item=Item(id="ü \"quoted\"\n", index=7, input={"k": [1, 2.5, None, True]}, expected=None,
                         context=["c"], assertions="must say hi", metadata={"topic": "x"}, label="L </script>"),
               status="error", output=None, error="runner raised ValueError: bad\u2028", latency_ms=12.0,
               usage=Usage(3, 4), metadata={"model": "m"}, trace=[{"tool": "t", "args": {}}],
               scores={"s1": ScoreResult("s1", "error", None, None, 0.5, None, "boom", {"why": (1, 2)}),
                       "s2": ScoreResult("s2", "skipped", None, None, None, "no expected")}),
    ItemResult(item=Item(id="n", index=1, input=3, expected=3.0), status="failed", output=float("nan"),
               latency_ms=1e-7, scores={"v": ScoreResult("v", "success", 0.25, False, 0.3, "low", None, {"n": 1})}),
    ItemResult(item=Item(id="j", index=2, input="q"), status="passed", output="a", latency_ms=3.0,
               usage=Usage(10, 2, 0.0125),
               scores={"judge": ScoreResult("judge", "success", 1.0, True, None, "ok", None, None, Usage(5, 1, 0.5))}),
    ItemResult(item=Item(id="r", index=4, input="q", source="data/my:file.jsonl:12"), status="passed"),
]


@pytest.mark.parametrize("result", CASES[:2] + CASES[3:])
def test_records_read_back(result):
    back = item_from_record(json.loads(encode_record(result)))
    assert encode_record(back) == encode_record(result)
    assert back.item.id == result.item.id and back.status == result.status and back.usage == result.usage


def test_where_an_item_and_a_criterion_were_read_is_kept_and_old_records_still_read():
    [located] = [json.loads(encode_record(r)) for r in CASES if r.item.source]
    assert located["source"] == "data/my:file.jsonl:12"
    assert item_from_record(located).item.source == "data/my:file.jsonl:12"
    assert "source" not in json.loads(encode_record(CASES[0])), "written only when known"
    assert item_from_record(json.loads(encode_record(CASES[0]))).item.source is None

    criteria = (CriterionResult("pass_rate", 0.9, 1.0, True, source="evals.yaml:14"),
                CriterionResult("mean_score", 0.5, None, False, "warn", "s", "label"))
    summary = Summary(3, 3, 3, 0, 0, 0, 1.0, 1.0, 5.0, LatencySummary(), Usage(), {}, criteria)
    assert summary_from_json(summary_to_json(summary)).criteria == criteria
    old = json.loads(summary_to_json(summary))
    old["criteria"] = [c[:7] for c in old["criteria"]]  # as written before criteria kept their line
    assert [c.source for c in summary_from_json(json.dumps(old)).criteria] == [None, None]


def test_a_record_read_back_is_written_as_read_and_a_changed_result_anew():
    text = encode_record(CASES[0]).replace('"output": "x"', '"output":  "x"')  # as some earlier writer spaced it
    back = item_from_record(json.loads(text), text)
    assert encode_record(back) == text, "a report copies the stored text"
    changed = dataclasses.replace(back, status="failed")
    assert json.loads(encode_record(changed))["status"] == "failed"
    assert back == item_from_record(json.loads(text)), "the text is no part of the result's value"


def test_summaries_keep_their_intervals_and_old_summaries_without_them_still_read():
    scorer = ScorerSummary("s", "s", 0.5, 0.75, 0.0, 1.0, 0.5, 2, 2, 0, 0, (1,) * 10, (0.15, 0.85), (0.2, 1.0))
    summary = Summary(4, 4, 2, 2, 0, 0, 0.75, 0.5, 5.0, LatencySummary(), Usage(), {"s": scorer},
                      confidence=0.9, pass_rate_ci=(0.1500641, 0.8499359), mean_score_ci=(0.2, 1.0))
    assert summary_from_json(summary_to_json(summary)) == summary
    old = json.loads(summary_to_json(summary))
    for key in ("confidence", "pass_rate_ci", "mean_score_ci"):
        del old[key]
    old["scorers"] = [x[:12] for x in old["scorers"]]  # as written before intervals were kept
    read = summary_from_json(json.dumps(old))
    assert (read.confidence, read.pass_rate_ci, read.mean_score_ci) == (0.95, None, None)
    assert (read.scorers["s"].pass_rate_ci, read.scorers["s"].mean_ci) == (None, None)
    assert read.scorers["s"].histogram == scorer.histogram and read.mean_score == 0.75


def test_latency_p90_p99_and_the_details_of_criteria_are_kept_and_old_summaries_still_read():
    criteria = (CriterionResult("latency", None, 120.0, True, max=200.0, percentile=99),
                CriterionResult("cost", None, 0.02, True, max=0.05, per_item=True),
                CriterionResult("pass_rate", 0.8, 0.7, False, bound="lower", confidence=0.9))
    summary = Summary(3, 3, 3, 0, 0, 0, 1.0, 1.0, 5.0, LatencySummary(10.0, 9.0, 19.0, 20.0, 18.0, 19.8), Usage(), {},
                      criteria)
    assert summary_from_json(summary_to_json(summary)) == summary
    old = json.loads(summary_to_json(summary))
    old["latency_ms"] = old["latency_ms"][:4]  # as written before p90 and p99 were kept
    old["criteria"] = [c[:9] for c in old["criteria"]]  # and before criteria kept their details
    read = summary_from_json(json.dumps(old))
    assert read.latency_ms == LatencySummary(10.0, 9.0, 19.0, 20.0)
    assert [(c.percentile, c.per_item, c.bound) for c in read.criteria] == [(None, False, "point")] * 3


def test_breakdowns_are_kept_with_the_summary():
    part = Summary(2, 2, 1, 1, 0, 0, 0.5, 0.5, 0.0, LatencySummary(1.0, 1.0, 2.0, 2.0), Usage(3, 1), {},
                   pass_rate_ci=(0.09, 0.91))
    summary = Summary(2, 2, 1, 1, 0, 0, 0.5, 0.5, 5.0, LatencySummary(), Usage(), {},
                      breakdowns=(Breakdown("metadata.topic", (Slice("billing", part),), other=3),))
    assert summary_from_json(summary_to_json(summary)) == summary
    assert "breakdowns" not in json.loads(summary_to_json(part))  # none: nothing written
