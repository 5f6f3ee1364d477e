"""The pairwise judge: each variant's answer against the baseline's, judged in both orders by a
scripted judge model, counted into wins, ties and losses."""
from __future__ import annotations

import json

from conftest import run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from yamleval.config.loader import load_project
from yamleval.lifecycle.run import run_project

CONFIG = """\
version: 1
models:
  judge: {model: judge, script: judge.yaml}
experiments:
  - id: answers
    dataset:
      items:
        - {id: one, input: hello, expected: a greeting}
        - {id: two, input: bye, expected: a farewell}
        - {id: three, input: thanks, expected: a reply to thanks}
    runner:
      uses: echo
      with: {output: "{{ input }}"}
    variants:
      - {id: short}
      - {id: long, with: {output: "{{ input }}, said at length in many more words than the other"}}
    scorers:
      - {uses: pairwise, with: {model: judge}}
"""
FIRST_SHOWN = """\
- reply: {tool_calls: [{name: prefer, arguments: {winner: A, reasoning: the first is better}}]}
"""
LONGER = """\
- when: {content: "<answer_a>\\n[^\\n]{30,}\\n</answer_a>"}
  reply: {tool_calls: [{name: prefer, arguments: {winner: A, reasoning: A says more}}]}
- reply: {tool_calls: [{name: prefer, arguments: {winner: B, reasoning: B says more}}]}
"""


def _run(write_config, tmp_path, script: str, config: str = CONFIG):
    write_config(script, "judge.yaml")
    project = load_project([str(write_config(config))])
    outcome = run_project(project, store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "out"),
                          formats=["json", "markdown"])
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    short, long = report["experiments"][0]["variants"]
    return outcome, short, long


def _preferred(variant: dict) -> list:
    return [item["scores"]["pairwise"].get("metadata", {}).get("preferred") for item in variant["items"]]


def test_a_judge_that_always_prefers_the_first_answer_gives_only_ties(write_config, tmp_path):
    outcome, short, long = _run(write_config, tmp_path, FIRST_SHOWN)
    assert outcome.exit_code == 0
    assert _preferred(long) == ["tie", "tie", "tie"]
    assert long["pairwise"] == [{"scorer": "pairwise", "wins": 0, "ties": 3, "losses": 0, "win_rate": 0.0,
                                 "win_rate_ci": long["pairwise"][0]["win_rate_ci"]}]
    reason = long["items"][0]["scores"]["pairwise"]["reason"]
    assert reason == "neither answer is better (the judge preferred whichever answer it was shown first)"
    assert {item["scores"]["pairwise"]["status"] for item in short["items"]} == {"skipped"}  # the baseline itself
    assert long["summary"]["scorers"]["pairwise"]["mean"] == 0.5  # ties count half
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "pairwise: 0 wins, 3 ties, 0 losses, every one a tie: neither answer preferred" in summary
    assert "win rate 0.0%" not in summary


def test_a_judge_that_prefers_the_longer_answer_makes_the_longer_variant_win_every_item(write_config, tmp_path):
    outcome, short, long = _run(write_config, tmp_path, LONGER)
    assert _preferred(long) == ["variant", "variant", "variant"]
    [found] = long["pairwise"]
    assert (found["wins"], found["ties"], found["losses"], found["win_rate"]) == (3, 0, 0, 1.0)
    low, high = found["win_rate_ci"]
    assert 0 < low < 1 and high == 1.0
    assert long["items"][0]["scores"]["pairwise"]["metadata"]["orders"] == ["variant", "variant"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "pairwise: 3 wins, 0 ties, 0 losses, win rate 100.0%" in summary


def test_a_failing_judge_is_an_error_on_the_items_pairwise_score_not_a_crash(write_config, tmp_path):
    outcome, short, long = _run(write_config, tmp_path, "- when: {content: never}\n  reply: {content: x}\n")
    assert outcome.exit_code == 1  # the items errored: the variant fails; nothing crashed
    scores = [item["scores"]["pairwise"] for item in long["items"]]
    assert {s["status"] for s in scores} == {"error"}
    assert "no rule of its script matches" in scores[0]["error"]
    assert long["pairwise"][0]["wins"] == 0 and [i["status"] for i in short["items"]] == ["skipped"] * 3


def test_a_rescored_run_judges_each_variant_against_the_baseline_it_stored(write_config, tmp_path):
    from yamleval.lifecycle.rescore import rescore_run

    _run(write_config, tmp_path, LONGER)
    project = load_project([str(tmp_path / "evals.yaml")])
    rescore_run(project, "latest", store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "again"), formats=["json"])
    report = json.loads((tmp_path / "again" / "results.json").read_text())
    assert _preferred(report["experiments"][0]["variants"][1]) == ["variant", "variant", "variant"]


def test_a_variants_mean_and_its_comparison_use_only_the_scorers_the_baseline_has_too(write_config, tmp_path,
                                                                                        openai_server):  # noqa: F811
    """The pairwise judge (a local model server that always prefers the answer shown first) scores
    the variant (0.5 a tie) and never the baseline: counting it on one side would skew the
    variant's mean and the paired difference."""
    from servers.openai_server import tool_reply

    config = CONFIG.replace("      - {uses: pairwise, with: {model: judge}}",
                            "      - {uses: levenshtein, id: close}\n      - {uses: pairwise, with: {model: judge}}")
    config = config.replace("- {id: one, input: hello, expected: a greeting}", "- {id: one, input: hello, expected: hello}")
    config = config.replace("judge: {model: judge, script: judge.yaml}", f'judge: {{base_url: "{openai_server.base_url}", model: judge}}')
    openai_server.push(*[tool_reply("prefer", {"winner": "A", "reasoning": "the first"}) for _ in range(6)])
    outcome, short, long = _run(write_config, tmp_path, FIRST_SHOWN, config)
    assert len(openai_server.requests) == 6
    close = {v: [item["scores"]["close"]["score"] for item in variant["items"]]
             for v, variant in (("short", short), ("long", long))}
    shared = [b - a for a, b in zip(close["short"], close["long"])]
    change = long["comparison"]["change"]
    assert abs(change["mean_difference"] - sum(shared) / 3) < 1e-9
    from yamleval.analysis.compare import diff_experiments

    base, variant = outcome.results
    diff = diff_experiments(base, variant)
    assert abs(diff.summary_deltas["mean_score"] - (sum(close["long"]) - sum(close["short"])) / 3) < 1e-9
    assert "pairwise" not in diff.scorer_changes
    assert variant.summary.scorers["pairwise"].mean == 0.5  # reported on its own: ties count half


def test_preview_counts_both_orders_of_every_pairwise_judgement_as_the_run_makes_them(write_config, tmp_path,
                                                                                       openai_server):  # noqa: F811
    """3 items x 2 variants, the judge a local model server: the baseline's items make no judge call,
    the other variant's two each (both orders): 6 calls previewed, 6 made."""
    from yamleval import api
    from servers.openai_server import tool_reply

    config = write_config(CONFIG.replace("judge: {model: judge, script: judge.yaml}",
                                         f"judge: {{base_url: \"{openai_server.base_url}\", model: judge}}"))
    previewed = {shown.experiment_id: shown.estimate for shown in api.preview(str(config)).experiments}
    assert {eid: (e.judge_calls, e.calls) for eid, e in previewed.items()} == \
        {"answers/short": (0, 0), "answers/long": (2, 6)}  # per item; in all
    assert "<the baseline variant's answer>" in api.preview(str(config)).text
    openai_server.push(*[tool_reply("prefer", {"winner": "A", "reasoning": "first"}) for _ in range(6)])
    outcome = run_project(load_project([str(config)]), store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "out"),
                          formats=["json"])
    assert outcome.exit_code == 0 and len(openai_server.requests) == 6


def test_the_terminal_table_gives_each_variants_wins_ties_and_losses(write_config, tmp_path):
    write_config(LONGER, "judge.yaml")
    write_config(CONFIG)
    done = run_cli("run", "-q", "--report-dir", "out", "--store", "r.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [long] = [line for line in done.stderr.splitlines() if line.startswith("  long ")]
    assert long.endswith("pairwise: 3 wins, 0 ties, 0 losses, win rate 100.0% (43.9–100.0%)")
    assert long.split()[1:5] == ["100.0%", "(43.9–100.0%)", "—", "(—)"], "a pairwise judge's mean is no mean score"
