"""The no_regression criterion: when an experiment of a stored run finishes, its items are paired
with the same experiment of a baseline run (yamleval.analysis.compare) and the criterion fails when the
paired verdict is ``regressed``. The baseline is a tag (the newest completed run with it that
has the experiment) or a run id; without one yet, the criterion is skipped and says why."""
from __future__ import annotations

import dataclasses

from yamleval.analysis import compare, verdict
from yamleval.reporting import comparison as comparison_text
from yamleval.store import tags as run_tags
from yamleval.records.errors import UsageError
from yamleval.records.types import CriterionResult, ExperimentResult, RunInfo


def judge(store, run_id: str, result: ExperimentResult) -> ExperimentResult:
    """``result`` (its items stored) with each no_regression criterion judged against its baseline."""
    if result.interrupted or result.aborted or result.could_not_evaluate:
        return result  # what did not finish is not compared: the criteria stay skipped
    if not any(c.type == "no_regression" for c in result.summary.criteria):
        return result
    result = dataclasses.replace(result, items=store.item_view(run_id, result.experiment_id, result.summary.completed))
    judged = tuple(_judged(store, run_id, c, result) if c.type == "no_regression" else c
                   for c in result.summary.criteria)
    return verdict.judged(dataclasses.replace(result, summary=dataclasses.replace(result.summary, criteria=judged)))


def _baseline(store, name: str, experiment_id: str, run_id: str) -> RunInfo | str:
    """The baseline run ``name`` stands for (a tag, else a whole run id: never a prefix of one), or
    why there is none yet."""
    tagged = run_tags.latest_with(store, name, experiment_id, run_id)
    if tagged:
        return store.find_run(tagged)
    none = f"no baseline yet: no completed run tagged '{name}' has experiment '{experiment_id}'"
    if run_tags.named(store, name):
        return none
    if not store.has_run(name):
        try:
            near = store.find_run(name).run_id  # a prefix of a run id is not a baseline: say so
        except UsageError:
            return none
        return f"{none}, and '{name}' is not a run id (run {near} starts with it: a baseline is a tag or a whole run id)"
    run = store.find_run(name)
    if run.run_id == run_id:
        return f"no baseline yet: '{name}' is this run"
    if not any(e.experiment_id == experiment_id and e.status == "completed" for e in store.experiments(run.run_id)):
        return f"no baseline yet: run {run.run_id} has no completed experiment '{experiment_id}'"
    return run


def _judged(store, run_id: str, criterion: CriterionResult, result: ExperimentResult) -> CriterionResult:
    base = _baseline(store, criterion.baseline, result.experiment_id, run_id)
    if isinstance(base, str):
        return dataclasses.replace(criterion, detail=f"skipped: {base}")
    # like with like: the baseline as it stored its end, without the reviews given since (this run has none yet)
    comparison = compare.compare(base, store.results(base.run_id, {result.experiment_id}), store.find_run(run_id),
                                 [result], alpha=criterion.alpha, margin=criterion.margin)
    diff = comparison.experiments[0]
    change = diff.scorer_changes.get(criterion.scorer) if criterion.scorer else diff.change
    if change is None:
        return dataclasses.replace(criterion, detail=f"skipped: scorer '{criterion.scorer}' is not in the"
                                                     f" baseline run {base.run_id}")
    said = comparison_text.change_text(change, criterion.alpha, False)
    return dataclasses.replace(criterion, skipped=False, passed=change.verdict != compare.REGRESSED,
                               actual=change.p_value, detail=f"baseline {base.run_id}: {said}")
