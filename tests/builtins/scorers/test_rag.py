"""Judge-model scorers (spec §10.3, §11.6, §11.9–§11.13, fixes of §12 item 11)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import yamleval
from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import text_reply, tool_reply
from yamleval.builtins.scorers.rag import (answer_correctness, answer_relevancy, context_precision, context_recall,
                                  context_relevancy, f1_score, moderation)
from yamleval.records.types import Usage


class FakeClient:
    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def structured(self, messages, schema, name):
        self.calls.append({"messages": messages, "schema": schema, "name": name})
        assert self.answers, f"no scripted answer left for {name!r}"
        return self.answers.pop(0), SimpleNamespace(usage=Usage(10, 5), cost=0.001)


class FakeModels:
    def __init__(self, *answers):
        self.judge = FakeClient(answers)

    def client(self, name):
        assert name == "judge"
        return self.judge


def judged(scorer, answers, **kwargs):
    models = FakeModels(*answers)
    return scorer(models=models, model="judge", **kwargs), models.judge.calls


# -- answer_correctness (§11.9) -----------------------------------------------------------------

def classification(tp, fp, fn):
    return {"TP": [f"tp{i}" for i in range(tp)], "FP": [f"fp{i}" for i in range(fp)],
            "FN": [f"fn{i}" for i in range(fn)]}


@pytest.mark.parametrize("counts, weight, expected", [
    ((0, 2, 1), 1.0, 0.0),
    ((2, 0, 0), 1.0, 1.0),
    ((2, 1, 1), 1.0, 0.6667),
    ((0, 0, 0), 1.0, 0.0),
    ((2, 1, 0), 0.5, 0.4),
    ((1, 1, 0), 1.5, 1.0),   # F1 0.667 × 1.5 = 1.0
    ((2, 0, 0), 1.5, 1.0),   # clamped: VoltAgent gives 1.5
])
def test_answer_correctness(counts, weight, expected):
    score, calls = judged(answer_correctness, [classification(*counts)], output="Paris is the capital.",
                          input="Capital of France?", expected="Paris", factuality_weight=weight)
    assert score.score == pytest.approx(expected, abs=1e-4)
    assert len(calls) == 1 and calls[0]["name"] == "classify_statements"
    assert score.usage == Usage(10, 5, 0.001)
    assert score.reason.startswith(f"True Positives: {counts[0]}, False Positives: {counts[1]}, "
                                   f"False Negatives: {counts[2]}, F1 Score: ")
    assert score.metadata["classification"]["TP"] == classification(*counts)["TP"]


def test_answer_correctness_one_tp_one_fp_is_between_0_and_1():
    score, _ = judged(answer_correctness, [classification(1, 1, 0)], output="a", input="q", expected="e")
    assert 0 < score.score <= 1 and score.score == pytest.approx(2 / 3)


def test_f1_edges():
    assert f1_score(0, 0, 3) == 0 and f1_score(3, 0, 0) == 1 and f1_score(0, 2, 2) == 0


def test_answer_correctness_refuses_a_negative_weight():
    with pytest.raises(ValueError, match="factuality_weight"):
        judged(answer_correctness, [], output="a", input="q", expected="e", factuality_weight=-1)


# -- answer_relevancy (§11.10) ------------------------------------------------------------------

def q(question, noncommittal=0):
    return {"question": question, "noncommittal": noncommittal}


def test_answer_relevancy_committal_answer_in_range_with_three_calls():
    score, calls = judged(answer_relevancy, [q("what is the capital of france?")] * 3,
                          output="Paris.", input="What is the capital of France?")
    assert score.score == 1.0 and len(calls) == 3
    assert score.reason == "Generated 3 questions with relevancy score 1.00"
    assert score.usage == Usage(30, 15, pytest.approx(0.003))


def test_answer_relevancy_all_noncommittal_is_zero_after_strictness_calls():
    score, calls = judged(answer_relevancy, [q("what?", 1)] * 2, output="I don't know", input="Why?", strictness=2)
    assert score.score == 0 and score.reason == "Answer is noncommittal" and len(calls) == 2


def test_answer_relevancy_strictness_five_makes_five_calls():
    _, calls = judged(answer_relevancy, [q("x")] * 5, output="a", input="x", strictness=5)
    assert len(calls) == 5


def test_answer_relevancy_half_noncommittal_is_not_above_the_threshold():
    # 0.5 is not > 0.5: the 0 comes from no word overlap, as §11.10 #5 explains
    score, _ = judged(answer_relevancy, [q("good question"), q("i don't know", 1)], output="hmm",
                      input="What causes rain?", strictness=2)
    assert score.score == 0 and score.reason != "Answer is noncommittal"
    score, _ = judged(answer_relevancy, [q("what causes rain?"), q("x", 1)], output="hmm",
                      input="What causes rain?", strictness=2)
    assert score.score == 0.5


def test_answer_relevancy_uncertainty_weight_and_punctuation():
    # "a b c d" vs "a b c e": jaccard 3/5 = 0.6 → 1; "a b x y" vs "a b c d": 2/6 → uncertainty weight
    score, _ = judged(answer_relevancy, [q("a b c e"), q("a b x y")], output="o", input="a b c d", strictness=2,
                      uncertainty_weight=0.4)
    assert score.score == pytest.approx((1 + 0.4) / 2)
    score, _ = judged(answer_relevancy, [q("penicillin")], output="o", input="penicillin?", strictness=1)
    assert score.score == 0


# -- context_precision (§11.11) -----------------------------------------------------------------

@pytest.mark.parametrize("verdict, options, context", [
    (1, {}, "Paris is in France."),
    (0, {}, "Bananas are yellow."),
    (1, {"binary_threshold": 0.7}, "Paris is in France."),
    (1, {}, ["Paris is in France.", "It is the capital."]),
    (1, {"weighted": True}, "Paris is in France."),
    (1, {"weighted": False, "binary_threshold": 0.5}, "Paris is in France."),
])
def test_context_precision_score_is_the_verdict(verdict, options, context):
    score, calls = judged(context_precision, [{"reason": "because", "verdict": verdict}], output="Paris",
                          input="Capital of France?", context=context, **options)
    assert score.score == verdict and score.reason == "because" and score.metadata["verdict"] == verdict
    assert len(calls) == 1
    if isinstance(context, list):
        assert "Paris is in France.\nIt is the capital." in calls[0]["messages"][0]["content"]


def test_context_scorers_skip_items_without_context():
    for scorer, kwargs in [(context_precision, {"output": "o", "input": "i"}), (context_recall, {"expected": "e"}),
                           (context_relevancy, {"input": "i"})]:
        score, calls = judged(scorer, [], context=None, **kwargs)
        assert score.skipped and not calls


# -- context_recall (§11.12) --------------------------------------------------------------------

def statements(*texts):
    return {"statements": list(texts)}


def verdict(value, reasoning="ok"):
    return {"verdict": value, "reasoning": reasoning}


def test_context_recall_all_supported_takes_three_calls():
    score, calls = judged(context_recall, [statements("a", "b"), verdict("supported"), verdict("supported")],
                          expected="a. b.", context="a b")
    assert score.score == 1 and len(calls) == 3
    assert [c["name"] for c in calls] == ["extract_statements", "statement_support", "statement_support"]
    assert score.usage == Usage(30, 15, pytest.approx(0.003))
    assert score.reason == "Context recall: 2/2 statements from expected output are supported by context."


@pytest.mark.parametrize("strictness, expected", [(0, 0.6667), (0.7, 0.6349), (0.5, 0.6667)])
def test_context_recall_two_of_three(strictness, expected):
    answers = [statements("a", "b", "c"), verdict("supported"), verdict("supported"), verdict("unsupported")]
    score, _ = judged(context_recall, answers, expected="abc", context="ab", strictness=strictness)
    assert score.score == pytest.approx(expected, abs=1e-4)
    assert score.reason.endswith("Missing support for: c")


def test_context_recall_no_statements_and_none_supported():
    score, calls = judged(context_recall, [statements()], expected="", context="x")
    assert score.score == 0 and score.reason == "No statements found in expected output to evaluate"
    assert len(calls) == 1
    score, _ = judged(context_recall, [statements("a"), verdict("unsupported")], expected="a", context="x")
    assert score.score == 0


def test_context_recall_array_context_and_strictness_exactly_half():
    answers = [statements("a", "b"), verdict("supported"), verdict("supported")]
    score, calls = judged(context_recall, answers, expected="a b", context=["a", "b"], strictness=0.5)
    assert score.score == 1 and "CONTEXT:\na\nb" in calls[1]["messages"][0]["content"]


def test_context_recall_partial_credit_uses_the_structured_verdict_not_the_words():
    answers = [statements("a", "b"), verdict("supported"), verdict("partial", "Some support")]
    score, _ = judged(context_recall, answers, expected="a b", context="a", strictness=0, partial_credit=True)
    assert score.score == 0.75
    # the word "partial" in the reasoning changes nothing
    answers = [statements("a", "b"), verdict("supported"), verdict("unsupported", "Partial support at best")]
    score, _ = judged(context_recall, answers, expected="a b", context="a", strictness=0, partial_credit=True)
    assert score.score == 0.5
    # without partial_credit a partial verdict counts 0
    answers = [statements("a", "b"), verdict("supported"), verdict("partial")]
    score, _ = judged(context_recall, answers, expected="a b", context="a", strictness=0)
    assert score.score == 0.5


def test_context_recall_an_unknown_verdict_is_an_error():
    with pytest.raises(ValueError, match="supported, partial or unsupported"):
        judged(context_recall, [statements("a"), {"verdict": 1, "reasoning": "partial"}], expected="a", context="a")


# -- context_relevancy (§11.13) -----------------------------------------------------------------

def rated(*levels):
    return {"evaluations": [{"contextPart": f"p{i}", "relevanceLevel": level, "reasoning": "r"}
                            for i, level in enumerate(levels)]}


@pytest.mark.parametrize("levels, options, expected", [
    (("high", "medium", "low"), {}, 0.7667),
    (("high", "high"), {}, 1.0),
    (("none", "none"), {}, 0.0),
    ((), {}, 0.0),
    (("medium",), {"weights": {"medium": 0.5}}, 0.65),
    (("high", "medium", "low", "none"), {"minimum_relevance": "medium"}, 0.5),
    (("high", "medium"), {"minimum_relevance": "high"}, 0.7 * 0.85 + 0.3 * 0.5),
    (("low", "none"), {}, 0.7 * 0.15 + 0.3 * 0.5),
])
def test_context_relevancy(levels, options, expected):
    score, calls = judged(context_relevancy, [rated(*levels)], input="q", context="some context", **options)
    assert score.score == pytest.approx(expected, abs=1e-4) and len(calls) == 1


def test_context_relevancy_numbers_array_passages_and_writes_the_reason():
    score, calls = judged(context_relevancy, [rated("high", "none")], input="q", context=["first", "second"])
    assert "[1] first\n[2] second" in calls[0]["messages"][0]["content"]
    assert score.score > 0
    assert score.reason == "Context relevancy: 50.0% relevant. 1/2 high relevance, 1/2 irrelevant."


def test_context_relevancy_checks_its_options():
    with pytest.raises(ValueError, match="minimum_relevance"):
        judged(context_relevancy, [], input="q", context="c", minimum_relevance="some")
    with pytest.raises(ValueError, match="unknown weights"):
        judged(context_relevancy, [], input="q", context="c", weights={"hi": 1})


# -- moderation (§11.6, fail closed) ------------------------------------------------------------

def test_moderation_flagged_violence():
    answer = {"flagged": True, "scores": {"violence": 0.92, "hate": None, "sexual": 1.7}, "reason": "Threatens harm."}
    score, _ = judged(moderation, [answer], output="I will hurt you", category_threshold=0.5)
    assert score.score == 0 and score.passed is False
    details = score.metadata["moderation"]
    assert details["scores"] == {"violence": 0.92, "sexual": 1.0}     # clamped, nulls dropped
    assert details["flagged"] is True and details["threshold"] == 0.5 and details["threshold_passed"] is False
    assert score.reason == "Flagged by categories: violence, sexual. Threatens harm."


def test_moderation_threshold_and_clean_content():
    score, _ = judged(moderation, [{"flagged": True, "scores": {"harassment": 0.61}, "reason": None}], output="x",
                      category_threshold=0.6)
    assert score.score == 0 and score.metadata["moderation"]["threshold"] == 0.6
    score, _ = judged(moderation, [{"flagged": False, "scores": {"violence": 0.01}, "reason": None}], output="hi",
                      category_threshold=0.4)
    assert score.score == 1 and score.passed is True and score.metadata["moderation"]["threshold_passed"] is True
    assert score.reason == "Content cleared moderation checks."


def test_moderation_reason_is_propagated():
    score, _ = judged(moderation, [{"flagged": True, "scores": {}, "reason": "Contains hate speech."}], output="x")
    assert score.metadata["moderation"]["reason"] == "Contains hate speech."
    assert score.reason == "Contains hate speech."


def test_moderation_a_high_category_score_flags_even_when_the_judge_says_clean():
    score, _ = judged(moderation, [{"flagged": False, "scores": {"violence": 0.8}}], output="x")
    assert score.score == 0 and score.metadata["moderation"]["judge_flagged"] is False


@pytest.mark.parametrize("answer", [{"flagged": "no", "scores": {}}, {"scores": {}}, {"flagged": False}])
def test_moderation_fails_closed_on_an_unusable_reply(answer):
    with pytest.raises(ValueError, match="not a pass"):
        judged(moderation, [answer], output="x")


# -- end to end against the scripted server ------------------------------------------------------

def test_end_to_end_from_yaml(openai_server, write_config):  # noqa: F811
    openai_server.push(
        # item 1: moderation clean, then correctness 2/1/1
        tool_reply("moderate", {"flagged": False, "scores": {"violence": 0.0}, "reason": None}),
        tool_reply("classify_statements", {"TP": ["a", "b"], "FP": ["c"], "FN": ["d"]},
                   prompt_tokens=100, completion_tokens=20),
        # item 2: a moderation reply that is not JSON, to the forced call and to JSON mode, twice (the
        # client asks once more): an error, not a pass
        *[text_reply("Looks fine to me.") for _ in range(4)],
        tool_reply("classify_statements", {"TP": ["a"], "FP": [], "FN": []}),
    )
    path = write_config(f"""
        models:
          judge: {{model: test-model, base_url: "{openai_server.base_url}", api_key: sk-test}}
        experiments:
          - id: rag
            concurrency: 1
            dataset:
              items:
                - {{id: one, input: "Capital of France?", expected: "Paris, in France."}}
                - {{id: two, input: "Capital of Italy?", expected: "Rome."}}
            runner: echo
            scorers:
              - {{uses: "yamleval.builtins.scorers.rag:moderation", id: safe, with: {{model: judge}}}}
              - uses: "yamleval.builtins.scorers.rag:answer_correctness"
                id: correct
                threshold: 0.6
                with: {{model: judge}}
    """)
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    one, two = result.items
    assert one.status == "passed"
    assert one.scores["safe"].score == 1 and one.scores["safe"].passed is True
    assert one.scores["correct"].score == pytest.approx(2 / 3) and one.scores["correct"].passed is True
    assert one.scores["correct"].usage.total_tokens == 120
    assert two.status == "error" and two.scores["safe"].status == "error"
    assert two.scores["correct"].score == 1
    assert [b["tools"][0]["function"]["name"] for b in openai_server.bodies[:2]] == ["moderate",
                                                                                        "classify_statements"]
