"""GitHub Actions: only inside Actions, the step summary file, annotations and their escaping and caps."""
from __future__ import annotations

import re

import yamleval
from conftest import run_cli
from yamleval.reporting import github


def run_all(write_config, text: str) -> list:
    return [yamleval.run_experiment(e) for e in yamleval.load_experiments(write_config(text))]


def items(count: int, input: str = "x", expected: str = "y", indent: int = 16) -> str:
    return "\n".join(f"{' ' * indent}- {{id: i{n:02}, input: {input}, expected: {expected}}}" for n in range(count))


def unplaced(line: str) -> str:
    """A workflow command without its ``file=…,line=N,`` properties: what it says, not where."""
    kind, message = line[2:].split("::", 1)  # a property's ":" is escaped: the first "::" ends them
    return f"::{re.sub(r'file=[^,]*,line=[0-9]+,?', '', kind).rstrip()}::{message}"


def test_run_speaks_to_github_only_inside_actions(write_config, tmp_path):
    write_config("""
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: b}]}
            runner: echo
            scorers: [exact_match]
    """)
    summary = tmp_path / "step_summary.md"
    for value, inside in (("true", True), ("false", False), ("", False)):
        done = run_cli("run", "-q", cwd=tmp_path, GITHUB_ACTIONS=value, GITHUB_STEP_SUMMARY=str(summary))
        assert done.returncode == 1 and ("::error file=evals.yaml,line=4,title=yamleval%3A e" in done.stdout) is inside, done.stdout
    assert summary.read_text(encoding="utf-8").count("## ❌ yamleval: 1 of 1 experiment failed") == 1


def test_the_step_summary_is_appended_to_the_named_file(tmp_path):
    path = tmp_path / "step_summary.md"
    path.write_text("# earlier step\n", encoding="utf-8")
    environ = {"GITHUB_STEP_SUMMARY": str(path)}
    assert github.append_step_summary("## ✅ first", environ) == str(path)
    assert github.append_step_summary("second\n", environ) == str(path)
    assert path.read_text(encoding="utf-8") == "# earlier step\n## ✅ first\nsecond\n"
    assert github.append_step_summary("ignored", {}) is None
    assert github.append_step_summary("ignored", {"GITHUB_STEP_SUMMARY": ""}) is None


def test_escaping_of_messages_and_properties():
    assert github.escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert github.escape_property("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext%3A a%2Cb"
    assert github.escape_data("%0A") == "%250A", "a literal %0A is not read as a newline"
    assert github.command("error", "line 1\nline 2", "t: a, b") == "::error title=t%3A a%2C b::line 1%0Aline 2"
    assert github.command("warning", "m") == "::warning::m"


def test_item_output_cannot_inject_a_workflow_command(write_config):
    results = run_all(write_config, """
        experiments:
          - id: inject
            dataset: {items: [{id: "a,b:c", input: q, expected: z}]}
            runner: {uses: echo, with: {output: "ok\\n::add-mask::secret\\r\\n::error::fake 100%"}}
            scorers: [exact_match]
    """)
    [line] = map(unplaced, github.annotations(results))
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::error title=yamleval%3A inject › a%2Cb%3Ac failed::exact_match failed (0.000)%0A")
    assert line.endswith("output: ok ::add-mask::secret ::error::fake 100%25")


def test_levels_follow_what_fails_the_experiment(write_config):
    results = run_all(write_config, f"""
        experiments:
          - id: gated
            dataset:
              items:
{items(2)}
                - {{id: boom, input: raise}}
            runner: fixture_plugins.behaviours:per_item
            scorers: [{{uses: fixture_plugins.behaviours:fixed, threshold: 0.9}}]
            pass_criteria:
              - {{type: mean_score, min: 0.9}}
              - {{type: pass_rate, min: 0.9, severity: warn}}
              - {{type: pass_rate, min: 0.0}}
          - id: strict
            dataset: {{items: [{{id: only, input: a, expected: b}}]}}
            runner: echo
            scorers: [exact_match]
    """)
    lines = [unplaced(line) for line in github.annotations(results)]
    assert [line.split("::")[1] for line in lines] == [
        "error title=yamleval%3A gated",
        "error title=yamleval%3A gated › mean_score >= 0.9",
        "warning title=yamleval%3A gated › pass_rate >= 0.9",
        "warning title=yamleval%3A gated › i00 failed",
        "warning title=yamleval%3A gated › i01 failed",
        "error title=yamleval%3A gated › boom error",
        "error title=yamleval%3A strict › only failed",
    ]
    assert lines[0].endswith("::1 of 3 items errored; an errored item fails the experiment")
    assert lines[1].endswith("::mean_score 0.500 < min 0.9")
    assert lines[2].endswith("::pass_rate 0.000 < min 0.9 (severity warn, not fatal)")
    assert "::fixed 0.500 < 0.9%0Aoutput: y" in lines[3]
    assert lines[5].endswith("::runner raised RuntimeError: boom on purpose")


def test_an_error_rate_criterion_speaks_for_the_errored_items(write_config):
    results = run_all(write_config, f"""
        experiments:
          - id: tolerant
            dataset:
              items:
{items(3)}
                - {{id: boom, input: raise}}
            runner: fixture_plugins.behaviours:per_item
            pass_criteria: [{{type: error_rate, max: 0.2}}]
    """)
    lines = [unplaced(line) for line in github.annotations(results)]
    assert [line.split("::")[1] for line in lines] == [
        "error title=yamleval%3A tolerant › error_rate <= 0.2",
        "warning title=yamleval%3A tolerant › boom error",
    ]
    assert lines[0].endswith("::error_rate 0.250 > max 0.2")


def test_at_most_ten_of_each_kind_then_a_notice(write_config):
    results = run_all(write_config, f"""
        experiments:
          - id: errors
            dataset:
              items:
{items(14, input="raise")}
            runner: fixture_plugins.behaviours:per_item
          - id: warnings
            dataset:
              items:
{items(12)}
            runner: echo
            scorers: [exact_match]
            pass_criteria: [{{type: pass_rate, min: 0.5, severity: warn}}]
    """)
    lines = github.annotations(results)
    kinds = [line.split("::")[1].split(" ")[0] for line in lines]
    assert kinds.count("error") == 10 and kinds.count("warning") == 10 and kinds[-1] == "notice"
    assert lines[0].endswith("::14 of 14 items errored; an errored item fails the experiment")
    assert "warnings › pass_rate >= 0.5" in lines[1], "experiment-level problems come before items"
    assert lines[-1] == ("::notice title=yamleval::5 more errors and 3 more warnings not shown "
                         "(GitHub shows 10 of each per step); see the job summary and the reports")
    assert github.annotations([]) == []


def test_items_and_criteria_are_annotated_at_their_file_and_line_as_junit_places_them(write_config, tmp_path):
    (tmp_path / "data.jsonl").write_text('{"id": "ok", "input": "a", "expected": "a"}\n'
                                         '{"id": "bad", "input": "a", "expected": "b"}\n', encoding="utf-8")
    write_config("""
        experiments:
          - id: e
            dataset: {file: data.jsonl}
            runner: echo
            scorers: [exact_match]
            pass_criteria:
              - {type: pass_rate, min: 0.9}
    """)
    done = run_cli("run", "-q", "--junit-family", "xunit1", cwd=tmp_path, GITHUB_ACTIONS="true")
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("::")]
    assert lines[0].startswith("::error file=evals.yaml,line=8,title=yamleval%3A e › pass_rate >= 0.9::")
    assert lines[1].startswith("::warning file=data.jsonl,line=2,title=yamleval%3A e › bad failed::")
    junit = (tmp_path / "reports" / "junit.xml").read_text(encoding="utf-8")
    assert 'name="bad" classname="yamleval.e" file="data.jsonl" line="2"' in junit
