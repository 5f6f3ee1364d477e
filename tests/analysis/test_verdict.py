"""One module decides every verdict (``analysis.verdict``): an experiment's from its counted
summary, criteria and ending, a run's from its experiments; and a judge whose agreement with people
cannot be measured (people gave one verdict only) never passes a judge_agreement gate."""
from __future__ import annotations

import dataclasses
import pathlib

import pytest

from yamleval.analysis import criteria, verdict
from yamleval.analysis.agreement import measured
from yamleval.analysis.aggregate import Aggregator
from yamleval.config.model import CriterionSpec
from yamleval.records.reviews import UNMEASURABLE, HumanVerdict, counted
from yamleval.records.types import ExperimentResult, Item, ItemList, ItemResult, RunInfo, ScoreResult, Variant
from yamleval.reporting import people

PACKAGE = pathlib.Path(__file__).parents[2] / "yamleval"


def _item(index: int, status: str, judge: bool | None = None) -> ItemResult:
    scores = {} if judge is None else {"judge": ScoreResult("judge", "success", score=float(judge), passed=judge)}
    return ItemResult(item=Item(id=f"i{index}", input="q", index=index), status=status, scores=scores)


def _result(items, specs=(), **ended) -> ExperimentResult:
    aggregator = Aggregator({"judge": ("judge", None)})
    for item in items:
        aggregator.add(item)
    summary = criteria.with_criteria(aggregator.summary(1.0, len(items)), specs)
    return verdict.judged(ExperimentResult(experiment_id="e", label=None, passed=False, summary=summary,
                                           items=ItemList(items), started_at="t", completed_at="t", **ended))


def test_an_experiment_passes_with_no_failure_and_no_error_without_criteria():
    assert verdict.judged(_result([_item(0, "passed", True)])).passed
    assert not _result([_item(0, "passed", True), _item(1, "failed", False)]).passed
    assert not _result([_item(0, "passed", True), _item(1, "error")]).passed


def test_criteria_decide_but_an_error_fails_unless_an_error_rate_judges_it():
    items = [_item(0, "passed", True), _item(1, "failed", False), _item(2, "error")]
    rate = CriterionSpec("pass_rate", 0.3)
    assert not _result(items, [rate]).passed  # an errored item fails it
    assert _result(items, [rate, CriterionSpec("error_rate", None, max=0.5)]).passed
    warn = CriterionSpec("pass_rate", 0.9, severity="warn")
    assert _result(items[:2], [rate, warn]).passed  # a warn criterion is reported, never fatal


@pytest.mark.parametrize("ended", [{"interrupted": True}, {"aborted": "dataset: gone"}, {"incomplete": True},
                                   {"aborted": "endpoint refused", "could_not_evaluate": True},
                                   {"aborted": "budget", "stopped_by_budget": True}])
def test_an_experiment_that_did_not_end_never_passes(ended):
    assert not _result([_item(0, "passed", True)], **ended).passed


def test_a_run_passes_when_every_gated_experiment_ran_and_passed():
    good, bad = _result([_item(0, "passed", True)]), _result([_item(0, "failed", False)])
    ungated = dataclasses.replace(bad, variant=Variant(id="v", experiment_id="e", gate=False))
    assert verdict.run_passed([good, ungated]) and verdict.run_status([good, ungated]) == "completed"
    assert not verdict.run_passed([good, bad])
    assert not verdict.run_passed([good], planned=2) and verdict.run_status([good], planned=2) == "aborted"
    assert not verdict.run_passed([good], interrupted=True) and verdict.run_status([good], True) == "interrupted"
    budget = _result([_item(0, "passed", True)], aborted="budget", stopped_by_budget=True)
    assert verdict.run_status([good, budget]) == "stopped"


def test_a_completed_runs_verdict_follows_its_results_as_they_are_counted():
    info = RunInfo(run_id="r", status="completed", started_at="t", passed=False)
    person = HumanVerdict("passed", "failed", by="ana")
    reviewed = _result([_item(0, "passed", True), counted(_item(1, "failed", False), person)])
    assert verdict.run_word(verdict.run_counted(info, [reviewed])) == "passed"
    crashed = dataclasses.replace(info, status="crashed")
    assert verdict.run_counted(crashed, [reviewed]) is crashed and verdict.run_word(crashed) == "crashed"


def _one_verdict_only(n: int) -> ExperimentResult:
    """People passed every item; the judge failed each one."""
    person = HumanVerdict("passed", "failed", by="ana")
    return _result([counted(_item(i, "failed", False), person) for i in range(n)],
                   [CriterionSpec("judge_agreement", 0.0, scorer="judge", bound="lower")])


def test_agreement_cannot_be_measured_when_people_gave_one_verdict_only():
    found = measured("judge", ((0, 12), (0, 0)))
    assert found.one_verdict and found.kappa is None and found.kappa_ci is None
    result = _one_verdict_only(12)
    [gate] = result.summary.criteria
    assert not gate.passed and gate.detail == UNMEASURABLE and not result.passed
    # wherever kappa shows, it says so: the terminal, summary.md, report.html's panel, results.json
    [line] = [line for line in people.text_lines(result.summary) if "judge:" in line]
    assert line.strip() == f"judge: n 12 · {UNMEASURABLE} (every item passed)"
    assert "0.000" not in "\n".join(people.markdown_lines(result.summary, str))
    assert people.html_view(result.summary)[0]["kappa"] == UNMEASURABLE
    written = people.agreement_dict(result.summary.agreement["judge"])
    assert (written["kappa"], written["kappa_ci"], written["unmeasurable"]) == (None, None, UNMEASURABLE)
    assert people.text_lines(_one_verdict_only(3).summary)[1].strip() == f"judge: n 3 · {UNMEASURABLE} (every item passed)"


def test_agreement_metric_on_one_verdict_only_fails_too():
    result = _one_verdict_only(12)
    plain = criteria.evaluate([CriterionSpec("judge_agreement", 0.5, scorer="judge", metric="agreement")],
                              result.summary)
    assert not plain[0].passed and plain[0].detail == UNMEASURABLE


def test_the_store_imports_nothing_from_analysis():
    wrong = [f"{path.name}: {line.strip()}" for path in sorted((PACKAGE / "store").glob("*.py"))
             for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip().startswith(("from yamleval.analysis", "import yamleval.analysis"))]
    assert wrong == []
