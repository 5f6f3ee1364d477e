"""LLM-judged scorers end to end: YAML -> engine -> scripted OpenAI-compatible server."""
from __future__ import annotations

import json

import pytest

import yamleval
from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import error_reply, text_reply, tool_reply
from yamleval.builtins.scorers import judges

JUDGE = "yamleval.builtins.scorers.judges:judge"


def run(write_config, server, items: str, scorers: str, price: str = ""):
    path = write_config(f"""
        models:
          grader: {{base_url: "{server.base_url}", model: tiny, retries: 0{price}}}
        experiments:
          - id: e
            concurrency: 1
            dataset:
              items: {items}
            runner: echo
            scorers: {scorers}
    """)
    [experiment] = yamleval.load_experiments(path)
    return yamleval.run_experiment(experiment)


def grade(verdict: str, reasoning: str, **kw):
    return tool_reply("grade", {"verdict": verdict, "reasoning": reasoning}, **kw)


def choose(choice: str, reasoning: str = "because", **kw):
    return tool_reply("select_choice", {"reasoning": reasoning, "choice": choice}, **kw)


def user_text(body) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


# -- the grader ----------------------------------------------------------------------------

def test_verdicts_decide_item_status_and_reasoning_is_the_reason(write_config, openai_server):  # noqa: F811
    openai_server.push(grade("pass", "Names the capital."), grade("fail", "Wrong city."))
    result = run(write_config, openai_server, """
                - {id: good, input: "Capital of France?", expected: "Says Paris", assertions: ["must mention Paris"]}
                - {id: bad, input: "Capital of Spain?"}""",
                 f"[{{uses: {JUDGE}, id: grader, with: {{model: grader}}}}]")
    good, bad = result.items
    assert good.status == "passed" and bad.status == "failed"
    assert good.scores["grader"].score == 1.0 and good.scores["grader"].passed is True
    assert good.scores["grader"].reason == "Names the capital."
    assert good.scores["grader"].metadata == {"verdict": "pass", "model": "grader"}
    assert bad.scores["grader"].score == 0.0 and bad.scores["grader"].passed is False
    assert bad.scores["grader"].reason == "Wrong city."

    first, second = openai_server.bodies
    assert first["model"] == "tiny"
    assert first["tool_choice"] == {"type": "function", "function": {"name": "grade"}}
    [tool] = first["tools"]
    assert tool["function"]["parameters"]["properties"]["verdict"] == {"enum": ["pass", "fail"]}
    system, user = first["messages"]
    assert system["role"] == "system" and "impartial evaluator" in system["content"]
    assert "strict and fair" in system["content"] and "every assertion" in system["content"]
    assert "must mention Paris" in user["content"] and "Says Paris" in user["content"]
    assert "Capital of France?" in user["content"]
    # The second item has no expected behaviour and no assertions.
    assert user_text(second).count("none specified") == 2


def test_usage_and_cost_of_the_judge_are_recorded(write_config, openai_server):  # noqa: F811
    openai_server.push(grade("pass", "ok", prompt_tokens=1000, completion_tokens=500))
    result = run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, with: {{model: grader}}}}]",
                 price=", price: {prompt: 2, completion: 10}")
    [item] = result.items
    score = next(iter(item.scores.values()))
    assert score.usage is not None
    assert (score.usage.prompt_tokens, score.usage.completion_tokens) == (1000, 500)
    assert score.usage.cost == pytest.approx(0.007)


def test_rubric_and_system_replace_the_instructions(write_config, openai_server):  # noqa: F811
    openai_server.push(grade("pass", "polite"), grade("pass", "fine"))
    run(write_config, openai_server, "[{input: hi}]", f"""
              - {{uses: {JUDGE}, id: r, with: {{model: grader, rubric: "Pass when the answer is polite."}}}}
              - {{uses: {JUDGE}, id: s, with: {{model: grader, system: "Grade it."}}}}""")
    rubric, system = (b["messages"][0]["content"] for b in openai_server.bodies)
    assert "Pass when the answer is polite." in rubric and "impartial evaluator" in rubric
    assert "misses a key requirement" not in rubric
    assert system == "Grade it."


def test_an_answer_that_does_not_fit_twice_is_an_error_not_a_failure(write_config, openai_server):  # noqa: F811
    openai_server.push(grade("pass", "fine"),
                       tool_reply("grade", "{not json"), tool_reply("grade", "{still not json"),
                       grade("pass", "fine"))
    result = run(write_config, openai_server, "[{id: a, input: one}, {id: b, input: two}, {id: c, input: three}]",
                 f"[{{uses: {JUDGE}, id: grader, with: {{model: grader}}}}]")
    a, b, c = result.items
    assert a.status == "passed" and c.status == "passed"
    assert b.status == "error"
    assert b.scores["grader"].status == "error"
    assert "judge answer did not fit: {still not json" in b.scores["grader"].error
    assert "judge answer did not fit" in b.error
    assert result.summary.scorers["grader"].errored == 1


def test_an_http_failure_is_an_error(write_config, openai_server):  # noqa: F811
    openai_server.push(error_reply(401, "bad key"))
    result = run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]")
    [item] = result.items
    assert item.status == "error" and item.scores["g"].status == "error"
    assert "HTTP 401: bad key" in item.scores["g"].error


@pytest.mark.parametrize("votes, verdict, agreement", [
    (["pass", "fail", "pass"], "pass", 2 / 3),
    (["fail", "fail", "pass"], "fail", 2 / 3),
    (["pass", "pass", "pass"], "pass", 1.0),
    (["pass", "fail"], "fail", 0.5),  # a tie fails
])
def test_repeats_take_the_majority(write_config, openai_server, votes, verdict, agreement):  # noqa: F811
    openai_server.push(*(grade(v, f"vote {i} {v}", prompt_tokens=10, completion_tokens=2)
                         for i, v in enumerate(votes)))
    result = run(write_config, openai_server, "[{input: hi}]",
                 f"[{{uses: {JUDGE}, id: g, with: {{model: grader, repeats: {len(votes)}}}}}]")
    [item] = result.items
    score = item.scores["g"]
    assert len(openai_server.bodies) == len(votes)
    assert score.passed is (verdict == "pass") and score.score == (1.0 if verdict == "pass" else 0.0)
    assert score.metadata["votes"] == votes and score.metadata["verdict"] == verdict
    assert score.metadata["agreement"] == pytest.approx(agreement)
    assert score.reason.endswith(verdict)
    assert (score.usage.prompt_tokens, score.usage.completion_tokens) == (10 * len(votes), 2 * len(votes))


def test_repeats_must_be_a_positive_whole_number(write_config, openai_server):  # noqa: F811
    result = run(write_config, openai_server, "[{input: hi}]",
                 f"[{{uses: {JUDGE}, id: g, with: {{model: grader, repeats: 0}}}}]")
    assert "repeats must be a whole number" in result.items[0].scores["g"].error
    assert openai_server.bodies == []


# -- classifiers ---------------------------------------------------------------------------

CLASSIFIER = "yamleval.builtins.scorers.judges:classifier"


def test_classifier_choice_gives_its_score(write_config, openai_server):  # noqa: F811
    openai_server.push(choose("mostly", "Close enough."), choose("no", "Not at all."))
    result = run(write_config, openai_server, "[{id: a, input: q1}, {id: b, input: q2}]", f"""
              - uses: {CLASSIFIER}
                id: tone
                threshold: 0.5
                with:
                  model: grader
                  prompt: "Is the answer {{{{ output }}}} friendly for {{{{ input }}}}?"
                  choices: {{"yes": 1, mostly: 0.7, "no": 0}}""")
    a, b = result.items
    assert a.scores["tone"].score == pytest.approx(0.7) and a.status == "passed"
    assert a.scores["tone"].reason == "Close enough."
    assert a.scores["tone"].metadata["choice"] == "mostly"
    assert b.scores["tone"].score == 0.0 and b.status == "failed"
    body = openai_server.bodies[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    params = body["tools"][0]["function"]["parameters"]
    assert list(params["properties"]) == ["reasoning", "choice"]  # reasoning comes first
    assert params["properties"]["choice"]["enum"] == ["yes", "mostly", "no"]
    assert "Is the answer q1 friendly for q1?" in user_text(body)


def test_classifier_without_cot_asks_for_the_choice_only(write_config, openai_server):  # noqa: F811
    openai_server.push(tool_reply("select_choice", {"choice": "Y"}))
    result = run(write_config, openai_server, "[{input: q}]", f"""
              - uses: {CLASSIFIER}
                id: c
                with: {{model: grader, prompt: "Judge {{{{ output }}}}", choices: {{"Y": 1, "N": 0}}, use_cot: false}}""")
    [item] = result.items
    assert item.scores["c"].score == 1.0 and item.scores["c"].reason is None
    params = openai_server.bodies[0]["tools"][0]["function"]["parameters"]
    assert list(params["properties"]) == ["choice"] and params["required"] == ["choice"]


@pytest.mark.parametrize("choices", ["{YES: 1, NO: 0}", "{true: 1, false: 0}"])
def test_classifier_refuses_a_boolean_choice(write_config, openai_server, choices):  # noqa: F811
    result = run(write_config, openai_server, "[{input: q}]", f"""
              - uses: {CLASSIFIER}
                id: c
                with: {{model: grader, prompt: "Judge it", choices: {choices}}}""")
    assert "quote the choice ('YES': 1)" in result.items[0].scores["c"].error
    assert openai_server.bodies == []


def test_classifier_quoted_yes_and_no_are_names(write_config, openai_server):  # noqa: F811
    openai_server.push(choose("YES"))
    result = run(write_config, openai_server, "[{input: q}]", f"""
              - uses: {CLASSIFIER}
                id: c
                with: {{model: grader, prompt: "Judge it", choices: {{"YES": 1, "NO": 0}}}}""")
    assert result.items[0].scores["c"].score == 1.0


@pytest.mark.parametrize("name, with_, table", [
    ("factuality", "", {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}),
    ("summary", "", {"A": 0.0, "B": 1.0}),
    ("translation", ", language: Spanish", {"Y": 1.0, "N": 0.0}),
    ("humor", "", {"YES": 1.0, "NO": 0.0, "UNSURE": 0.5}),
    ("possible", "", {"A": 0.0, "B": 1.0}),
])
def test_builtin_classifier_choice_tables(write_config, openai_server, name, with_, table):  # noqa: F811
    openai_server.push(*(choose(choice, f"said {choice}") for choice in table))
    items = ", ".join(f"{{id: i{n}, input: 'Hola {{amigo}}', expected: 'Hello friend'}}" for n in range(len(table)))
    result = run(write_config, openai_server, f"[{items}]",
                 f"[{{uses: yamleval.builtins.scorers.judges:{name}, id: s, with: {{model: grader{with_}}}}}]")
    for item, (choice, value) in zip(result.items, table.items()):
        score = item.scores["s"]
        assert score.status == "success", score.error
        assert score.score == pytest.approx(value)
        assert score.metadata["choice"] == choice
        assert score.reason.endswith(f"said {choice}")
    body = openai_server.bodies[0]
    params = body["tools"][0]["function"]["parameters"]
    assert params["properties"]["choice"]["enum"] == list(table)
    text = user_text(body)
    assert "Hola" in text  # the output (echo) is always in the prompt
    if name in ("factuality", "summary", "translation"):
        assert "Hello friend" in text
    if name == "translation":
        assert "from Spanish to English" in text


def test_builtin_classifiers_that_need_expected_skip_without_it(write_config, openai_server):  # noqa: F811
    result = run(write_config, openai_server, "[{input: q}]",
                 "[{uses: yamleval.builtins.scorers.judges:factuality, id: f, with: {model: grader}}]")
    assert result.items[0].scores["f"].status == "skipped"
    assert openai_server.bodies == []


# §11.7 of the reference: the judge's choice and the expected score.
@pytest.mark.parametrize("name, kwargs, choice, reasoning, score", [
    ("factuality", {"input": "q", "expected": "e"}, "C", "Same facts.", 1.0),
    ("summary", {"input": "text", "expected": "a"}, "B", "Better.", 1.0),
    ("translation", {"input": "Hola", "expected": "Hello", "language": "Spanish"}, "Y", "Same.", 1.0),
    ("humor", {}, "YES", "Playful pun.", 1.0),
    ("possible", {"input": "task"}, "A", "Says impossible.", 0.0),
])
def test_reference_vectors(openai_server, name, kwargs, choice, reasoning, score):  # noqa: F811
    from yamleval.builtins.models.registry import Models

    openai_server.push(choose(choice, reasoning))
    models = Models({"grader": {"base_url": openai_server.base_url, "model": "tiny", "retries": 0}})
    try:
        result = getattr(judges, name)(output="answer", models=models, model="grader", **kwargs)
    finally:
        models.close()
    assert result.score == score
    assert result.metadata["choice"] == choice
    assert "moderation" not in result.metadata
    assert reasoning in result.reason


def test_messages_keep_item_text_as_data():
    messages = judges.grader_messages({"a": 1}, "Use {braces}?", None, "must be short")
    user = messages[1]["content"]
    assert '{"a": 1}' in user and "Use {braces}?" in user and "must be short" in user
    assert json.dumps(judges.GRADE_SCHEMA)  # the schema is plain JSON


@pytest.mark.parametrize("votes, choice, agreement", [
    (["yes", "no", "yes"], "yes", 2 / 3),
    (["yes", "no"], "no", 0.5),          # a tie goes to the lower score
])
def test_classifier_repeats_take_the_most_frequent_choice(write_config, openai_server, votes, choice,  # noqa: F811
                                                          agreement):
    openai_server.push(*(choose(v, f"vote {v}") for v in votes))
    result = run(write_config, openai_server, "[{input: q}]", f"""
              - uses: {CLASSIFIER}
                id: tone
                with:
                  model: grader
                  prompt: "Is {{{{ output }}}} friendly?"
                  choices: {{"yes": 1, "no": 0}}
                  repeats: {len(votes)}""")
    score = result.items[0].scores["tone"]
    assert len(openai_server.bodies) == len(votes)
    assert score.metadata["choice"] == choice and score.metadata["votes"] == votes
    assert score.metadata["agreement"] == pytest.approx(agreement)
    assert score.score == (1.0 if choice == "yes" else 0.0)


def test_judges_ask_for_room_for_their_reasoning_unless_the_model_sets_max_tokens(write_config,  # noqa: F811
                                                                                  openai_server):
    openai_server.push(grade("pass", "fine"))
    run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]")
    assert openai_server.bodies[-1]["max_tokens"] == 1024
    openai_server.push(grade("pass", "fine"))
    run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]",
        price=", max_tokens: 300")
    assert openai_server.bodies[-1]["max_tokens"] == 300


def test_a_judge_answer_cut_off_says_to_raise_max_tokens(write_config, openai_server):  # noqa: F811
    openai_server.push(tool_reply("grade", '{"verdict": "pass", "reasoning": "The answer names', finish_reason="length"))
    result = run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]")
    [item] = result.items
    assert item.status == "error"
    assert item.scores["g"].error == ("ValueError: model 'grader': the answer was cut off at max_tokens (1024) before"
                                      " it was whole: raise `max_tokens` of models.grader")
    assert len(openai_server.bodies) == 1, "a cut-off answer is not asked for again: it would be cut off again"


def test_a_server_that_refuses_max_tokens_is_asked_without_it(write_config, openai_server):  # noqa: F811
    openai_server.push(error_reply(400, "Unsupported parameter: 'max_tokens' is not supported with this model."
                                        " Use 'max_completion_tokens' instead."),
                       grade("pass", "fine"), grade("fail", "wrong"))
    result = run(write_config, openai_server, "[{input: one}, {input: two}]",
                 f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]")
    assert [item.status for item in result.items] == ["passed", "failed"]
    assert ["max_tokens" in body for body in openai_server.bodies] == [True, False, False]


def test_a_judge_answer_that_used_every_token_it_was_given_is_cut_off_whatever_its_finish_reason(
        write_config, openai_server):  # noqa: F811
    # as a llama.cpp server answers: finish_reason "tool_calls", completion_tokens equal to max_tokens
    openai_server.push(tool_reply("grade", '{"verdict": "pass", "reasoning": "The answer names', completion_tokens=300))
    result = run(write_config, openai_server, "[{input: hi}]", f"[{{uses: {JUDGE}, id: g, with: {{model: grader}}}}]",
                 price=", max_tokens: 300")
    [item] = result.items
    assert item.status == "error"
    assert item.scores["g"].error == ("ValueError: model 'grader': the answer was cut off at max_tokens (300) before"
                                      " it was whole: raise `max_tokens` of models.grader")
    assert len(openai_server.bodies) == 1
