"""Variants of an experiment: ``variants:`` and ``matrix:`` in the YAML, ``--variant`` and ``--set``,
and a run of them (each variant's verdict, the gated verdict, the reports grouping them back)."""
from __future__ import annotations

import json
from pathlib import Path
import xml.etree.ElementTree as ET

import pytest

from conftest import assert_golden, run_cli
from yamleval.config.loader import load_project
from yamleval.records.errors import UsageError
from yamleval.lifecycle.run import run_project, select_experiments
from yamleval.store.writer import Store

# echo answers its `output:`; `vars.suffix` makes the answer right or wrong
MATRIX = """\
version: 1
experiments:
  - id: greet
    dataset:
      items:
        - {id: one, input: hello, expected: hello}
        - {id: two, input: bye, expected: bye}
    vars: {suffix: ""}
    runner:
      uses: echo
      with: {output: "{{ input }}{{ vars.suffix }}"}
    matrix:
      output: ["{{ input }}", "{{ input | upper }}"]
      suffix: ["", "!"]
    scorers: [exact_match]
"""

VARIANTS = """\
version: 1
experiments:
  - id: greet
    dataset:
      items:
        - {id: one, input: hello, expected: hello}
        - {id: two, input: bye, expected: bye}
        - {id: three, input: ok, expected: ok}
    runner:
      uses: echo
      with: {output: "{{ input }}"}
    variants:
      - {id: right, label: Echoes}
      - {id: shouting, label: Shouts, with: {output: "{{ input | upper }}"}, gate: false}
      - {id: first, baseline: true, vars: {unused: 1}}
    scorers: [exact_match]
  - id: plain
    dataset: {items: [{input: a, expected: a}]}
    runner: echo
    scorers: [exact_match]
"""


def test_a_two_by_two_matrix_is_four_variants_with_stable_readable_ids(write_config):
    project = load_project([str(write_config(MATRIX))])
    ids = [e.id for e in project.experiments]
    assert ids == ["greet/input-suffix-1", "greet/input-suffix-2", "greet/input-upper-suffix-1",
                   "greet/input-upper-suffix-2"]
    assert load_project([str(write_config(MATRIX))]).experiments == project.experiments  # the same each load
    first = project.experiments[0]
    assert first.variant.baseline and not any(e.variant.baseline for e in project.experiments[1:])
    assert [(e.runner.with_["output"], e.vars["suffix"]) for e in project.experiments] == [
        ("{{ input }}", ""), ("{{ input }}", "!"),
        ("{{ input | upper }}", ""), ("{{ input | upper }}", "!")]
    assert first.variant.label == "output={{ input }}, suffix="


def test_matrix_ids_join_the_values(write_config):
    config = MATRIX.replace('output: ["{{ input }}", "{{ input | upper }}"]', "").replace(
        'suffix: ["", "!"]', "suffix: [Be terse., Be kind!]")
    project = load_project([str(write_config(config))])
    assert [e.id for e in project.experiments] == ["greet/be-terse", "greet/be-kind"]


def test_the_baseline_runs_first_and_variants_override_with_and_vars(write_config):
    project = load_project([str(write_config(VARIANTS))])
    assert [e.id for e in project.experiments] == ["greet/first", "greet/right", "greet/shouting", "plain"]
    first, _, shouting, _ = project.experiments
    assert first.variant.baseline and first.vars == {"unused": 1}
    assert shouting.runner.with_ == {"output": "{{ input | upper }}"} and shouting.variant.gate is False


def test_an_experiment_id_selects_its_variants_and_variant_ids_some_of_them(write_config):
    project = load_project([str(write_config(VARIANTS))])
    assert [e.id for e in select_experiments(project, ["greet"])] == ["greet/first", "greet/right", "greet/shouting"]
    assert [e.id for e in select_experiments(project, [], ["right"])] == ["greet/right", "plain"]
    with pytest.raises(UsageError, match=r"no variant with id 'rigth' \(did you mean 'right'\?\)"):
        select_experiments(project, [], ["rigth"])


def test_set_overrides_a_scalar_of_every_experiment_or_of_one(write_config):
    path = str(write_config(VARIANTS))
    project = load_project([path], sets=["timeout=5", "plain:runner=exact_match", "greet:runner.with.output=x"])
    assert {e.timeout for e in project.experiments} == {5.0}
    assert project.experiments[-1].runner.uses == "exact_match"
    assert project.experiments[0].runner.with_["output"] == "x"
    assert project.experiments[2].runner.with_["output"] == "{{ input | upper }}"  # the variant's own still wins


@pytest.mark.parametrize("given, message", [
    ("timeout", "give PATH=VALUE"),
    ("runner.with=[1]", "must be a single value"),
    ("plain:runner.with.output=x", "runner of experiment 'plain' is str, not a mapping"),
    ("nobody:timeout=3", "no experiment with the id 'nobody'"),
    ("dataset=3", "is a mapping or a list"),
])
def test_a_bad_set_is_a_usage_error(write_config, given, message):
    with pytest.raises(UsageError, match=message):
        load_project([str(write_config(VARIANTS))], sets=[given])


def test_a_set_value_is_checked_like_the_yaml(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("validate", "--set", "timeout=soon", cwd=tmp_path)
    assert done.returncode == 2 and "$.experiments[0].timeout: error" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_validate_lists_the_variants(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["ok: 2 experiments in evals.yaml", "greet: 3 variants",
                                        "  first  (baseline)", "  right  Echoes", "  shouting  Shouts  (not gated)"]


def test_run_with_an_unknown_variant_is_exit_2(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("run", "--variant", "rigth", cwd=tmp_path)
    assert done.returncode == 2 and "did you mean 'right'" in done.stderr


def test_each_variant_has_its_verdict_and_an_ungated_one_fails_nothing(write_config, tmp_path):
    project = load_project([str(write_config(VARIANTS))])
    outcome = run_project(project, store=str(tmp_path / "r.db"), report_dir=str(tmp_path / "out"),
                          formats=["json", "junit", "markdown"])
    verdicts = {r.experiment_id: r.passed for r in outcome.results}
    assert verdicts == {"greet/first": True, "greet/right": True, "greet/shouting": False, "plain": True}
    assert outcome.passed and outcome.exit_code == 0
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    greet, plain = report["experiments"]
    assert plain["id"] == "plain" and "variants" not in plain
    assert greet["id"] == "greet" and greet["passed"] is True
    assert [(v["id"], v["experiment_id"], v["baseline"], v["gate"], v["passed"], len(v["items"]))
            for v in greet["variants"]] == [("first", "greet/first", True, True, True, 3),
                                            ("right", "greet/right", False, True, True, 3),
                                            ("shouting", "greet/shouting", False, False, False, 3)]
    assert greet["variants"][2]["summary"]["passed"] == 0  # the summary of an experiment, as ever
    assert greet["variants"][2]["comparison"]["change"]["pass_to_fail"] == 3
    suites = [s.get("name") for s in ET.parse(tmp_path / "out" / "junit.xml").getroot()]
    assert suites == ["greet/first", "greet/right", "greet/shouting", "plain"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Variants of greet" in summary and "| shouting (Shouts) · not gated |" in summary


def test_a_gated_variant_that_fails_fails_the_run(write_config, tmp_path):
    project = load_project([str(write_config(VARIANTS.replace(", gate: false", "")))])
    outcome = run_project(project, store=str(tmp_path / "r.db"), formats=[])
    assert not outcome.passed and outcome.exit_code == 1


def test_the_store_keeps_each_variant_apart_for_report_and_compare(write_config, tmp_path):
    write_config(VARIANTS)
    assert run_cli("run", "--store", "r.db", "-q", cwd=tmp_path).returncode == 0
    assert run_cli("run", "--store", "r.db", "-q", "--variant", "first", "--variant", "right", cwd=tmp_path).returncode == 0
    base = Store(str(tmp_path / "r.db")).runs(2)[1].run_id
    done = run_cli("compare", "--store", "r.db", "--format", "json", base, "latest", cwd=tmp_path)
    runs = json.loads(done.stdout)
    assert {e["id"]: e["only_in"] for e in runs["experiments"]} == {
        "greet/first": None, "greet/right": None, "greet/shouting": "base", "plain": None}
    again = run_cli("report", "--store", "r.db", "--report-dir", "again", "--format", "json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    report = json.loads((tmp_path / "again" / "results.json").read_text())
    assert [v["id"] for v in report["experiments"][0]["variants"]] == ["first", "right"]


def test_a_run_keeps_its_set_values_and_resumes_only_with_the_same(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("run", "--store", "r.db", "-q", "--set", "greet:runner.with.output=hello", cwd=tmp_path)
    assert done.returncode == 1  # 'bye' and 'ok' now get "hello"
    shown = run_cli("show", "latest", "--config", "--store", "r.db", cwd=tmp_path)
    assert "greet:runner.with.output=hello" in shown.stdout
    # mark it unfinished, as a crash leaves it, and resume it without the --set
    import sqlite3
    with sqlite3.connect(tmp_path / "r.db") as con:
        con.execute("UPDATE runs SET status = 'interrupted'")
    refused = run_cli("run", "--store", "r.db", "-q", "--resume", cwd=tmp_path)
    assert refused.returncode == 2 and "its --set values changed" in refused.stderr, refused.stderr
    again = run_cli("run", "--store", "r.db", "-q", "--resume", "--set", "greet:runner.with.output=hello", cwd=tmp_path)
    assert again.returncode == 1, again.stderr


def test_an_ungated_variant_is_said_to_be_so_and_annotated_as_a_warning(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("run", "--store", "r.db", "--variant", "shouting", cwd=tmp_path, GITHUB_ACTIONS="true",
                   GITHUB_STEP_SUMMARY=str(tmp_path / "step.md"))
    assert done.returncode == 0, done.stderr
    assert "FAILED (not gated: the run's verdict leaves it out)" in done.stdout
    annotations = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if line.startswith("::")]
    assert annotations and not any(line.startswith("::error") for line in annotations), annotations


def test_matrix_values_that_read_alike_get_ids_no_other_variant_has(write_config):
    config = MATRIX.replace('output: ["{{ input }}", "{{ input | upper }}"]\n', "").replace(
        'suffix: ["", "!"]', 'suffix: ["Gpt", "gpt-3", "gpt"]')
    project = load_project([str(write_config(config))])
    assert [e.id for e in project.experiments] == ["greet/gpt", "greet/gpt-3", "greet/gpt-2"]
    assert [e.vars["suffix"] for e in project.experiments] == ["Gpt", "gpt-3", "gpt"]


def test_a_matrix_of_too_many_variants_is_a_config_error_at_the_matrix(write_config, tmp_path):
    keys = "\n".join(f"      k{n}: [{', '.join(str(v) for v in range(10))}]" for n in range(7))
    config = MATRIX.replace('      output: ["{{ input }}", "{{ input | upper }}"]\n      suffix: ["", "!"]', keys)
    config = config.replace('vars: {suffix: ""}', "vars: {suffix: '', " + ", ".join(f"k{n}: 0" for n in range(7)) + "}")
    path = write_config(config)
    done = run_cli("validate", str(path), cwd=tmp_path, timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(n for n, text in enumerate(config.splitlines(), 1) if text.strip() == "matrix:")
    assert f"{path.name}:{line}:" in done.stderr
    assert "the matrix stands for 10,000,000 variants (10 × 10 × 10 × 10 × 10 × 10 × 10), more than the 1,000" in done.stderr
    assert "YAMLEVAL_MAX_VARIANTS" in done.stderr and "Traceback" not in done.stderr
    allowed = run_cli("validate", str(write_config(config.replace("k6: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "k6: [0]")
                                                   .replace("k5: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "k5: [0]")
                                                   .replace("k4: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "k4: [0]")
                                                   .replace("k3: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "k3: [0]"))),
                      cwd=tmp_path, timeout=60, YAMLEVAL_MAX_VARIANTS="1000")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr


def test_a_variants_run_ends_with_one_table_against_the_baseline(write_config, tmp_path):
    write_config(VARIANTS)
    done = run_cli("run", "--report-dir", "out", "--store", "r.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("greet: 3 variants"):done.stdout.index("report: ")]
    assert_golden(Path(__file__).parent.parent / "data" / "variants" / "terminal_table.expected.txt", table)


def _prompts() -> str:
    """Two prompts over 13 items: the new one passes 4 more, none fewer (McNemar p = 0.125 over 12
    pairs), and errors on ``boom``, which the baseline passes."""
    items = ([f"{{id: same-{n}, input: a, expected: a}}" for n in range(6)]
             + [f"{{id: fixed-{n}, input: c, expected: a}}" for n in range(4)]
             + [f"{{id: wrong-{n}, input: b, expected: a}}" for n in range(2)] + ["{id: boom, input: boom, expected: boom}"])
    return f"""\
version: 1
experiments:
  - id: support-prompt
    dataset:
      items: [{", ".join(items)}]
    runner:
      uses: echo
      with: {{output: "{{{{ input }}}}"}}
    variants:
      - {{id: baseline}}
      - {{id: new-prompt, with: {{output: "{{{{ (1 / 0) if input == 'boom' else 'a' if input == 'c' else input }}}}"}}}}
    scorers: [exact_match]
"""


NOT_PROVEN = ("better, not proven with 12 items (about 65 items in each variant would show a difference of this size,"
              " 80% of the time)")
ERRORED = "1 item errored on either side, left out of the pairs: boom"


def test_the_variants_table_gives_the_words_compare_gives_for_the_same_two_variants(write_config, tmp_path):
    write_config(_prompts())
    done = run_cli("run", "--report-dir", "out", "--store", "r.db", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the new prompt's errored item fails it
    compared = run_cli("compare", "latest:baseline", "latest:new-prompt", "--store", "r.db", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    run_id = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["run_id"]
    assert f"{run_id}:baseline (completed) → {run_id}:new-prompt (completed)" in compared.stdout
    assert f"pass rate 53.8% → 76.9% (+23.1 pp): {NOT_PROVEN}\n{ERRORED}\n" in compared.stdout
    assert "variants of one run: its configuration, each with its own overrides" in compared.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("  new-prompt"))
    assert row.endswith(f"{NOT_PROVEN}: 0 pass → fail, 4 fail → pass, McNemar p = 0.12; mean score +0.333 (95% CI +0.083 to +0.583); {ERRORED}")
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert f"{NOT_PROVEN}: 0 pass → fail" in summary and ERRORED in summary
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert NOT_PROVEN in report and ERRORED in report and "no significant change" not in report
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    new = next(v for e in results["experiments"] for v in e.get("variants", ()) if v["id"] == "new-prompt")
    assert row.endswith("  " + new["against_baseline"]) and new["comparison"]["errored"] == ["boom"]
    from serve.test_app import serving
    import requests

    with serving("r.db", tmp_path) as base:
        page = requests.get(f"{base}/runs/{run_id}", timeout=10).text
        address = f"{base}/runs/{run_id}/items/support-prompt%2Fnew-prompt"
        served = requests.get(f"{base}/compare/{run_id}:baseline/{run_id}:new-prompt", timeout=10)
    assert NOT_PROVEN in page and ERRORED in page
    assert served.status_code == 200 and NOT_PROVEN in served.text and ERRORED in served.text
    # the variant's address in the Eval Center names it as well as RUN:VARIANT does
    pasted = run_cli("compare", f"{run_id}:support-prompt/baseline", address, "--store", "r.db", cwd=tmp_path)
    assert pasted.returncode == 0, pasted.stderr
    assert pasted.stdout.replace("support-prompt/baseline", "baseline") == compared.stdout


def test_compare_with_a_variant_the_run_lacks_is_exit_2_with_the_variants_it_has(write_config, tmp_path):
    write_config(_prompts())
    run_cli("run", "--store", "r.db", "--report-dir", "out", cwd=tmp_path)
    unknown = run_cli("compare", "latest:baseline", "latest:new-promt", "--store", "r.db", cwd=tmp_path)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "has no variant 'new-promt'; its variants: support-prompt/baseline, support-prompt/new-prompt" in unknown.stderr
    one_side = run_cli("compare", "latest", "latest:new-prompt", "--store", "r.db", cwd=tmp_path)
    assert one_side.returncode == 2 and "name a variant on both sides" in one_side.stderr


def test_a_typo_every_variant_shares_is_told_once_of_the_experiment(write_config, tmp_path):
    write_config(VARIANTS.replace('with: {output: "{{ input }}"}', 'with: {outptu: "{{ input }}"}'))
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    said = done.stdout + done.stderr
    assert said.count("unexpected argument 'outptu' for runner 'echo'") == 1, said
    # the variant that sets its own `output:` lacks no argument, but keeps the typo of its experiment
    assert "in experiment 'greet' (variants first, right, shouting)" in said


def test_one_variant_is_counted_in_the_singular(write_config, tmp_path):
    write_config(VARIANTS.replace("""      - {id: right, label: Echoes}
      - {id: shouting, label: Shouts, with: {output: "{{ input | upper }}"}, gate: false}
      - {id: first, baseline: true, vars: {unused: 1}}""", "      - {id: only}"))
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "greet: 1 variant\n" in done.stdout
    assert run_cli("run", "-q", "--store", "r.db", "-e", "plain", cwd=tmp_path).returncode == 0
    exported = run_cli("export", "--store", "r.db", "--output", "plain.csv", cwd=tmp_path)
    assert exported.returncode == 0 and "(1 item)" in exported.stderr, exported.stderr
