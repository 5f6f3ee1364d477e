"""Project and experiment files: defaults, includes, ${VAR}, standalone experiment files."""
from __future__ import annotations

import json

import pytest

import yamleval
from conftest import run_cli
from yamleval.config.loader import load_project
from yamleval.records.errors import ConfigError


def test_defaults_are_inherited_and_overridden(write_config):
    path = write_config("""
        defaults: {concurrency: 3, timeout: 5, confidence: 0.9}
        experiments:
          - id: inherits
            dataset: {items: [{input: 1}]}
            runner: echo
          - id: overrides
            concurrency: 7
            confidence: 0.99
            dataset: {items: [{input: 1}]}
            runner: {uses: echo, timeout: 2}
    """)
    inherits, overrides = load_project([path]).experiments
    assert (inherits.concurrency, inherits.timeout, inherits.retries, inherits.confidence) == (3, 5.0, 2, 0.9)
    assert (overrides.concurrency, overrides.timeout, overrides.confidence) == (7, 2.0, 0.99)
    assert load_project([write_config("experiments: [{id: e, dataset: {items: [{input: 1}]}, runner: echo}]",
                                      "alone.yaml")]).experiments[0].confidence == 0.95


@pytest.mark.parametrize("setting, message", [
    ("concurrency: 2.0", "concurrency: error: expected a whole number, got a number 2.0"),
    ("timeout: .inf", "timeout: error: expected a number, got a value that is not a finite number .inf"),
    ("timeout: .nan", "timeout: error: expected a number, got a value that is not a finite number .nan"),
    ("labl: x", "labl: error: unknown key 'labl' (did you mean 'label'?)"),
    ("confidence: 1", "confidence: error: must be less than 1, got 1"),
])
def test_values_the_schema_refuses_are_errors(write_config, setting, message):
    """Cases where JSON Schema's own reading is laxer than a setting can use (2.0 counts as an
    integer there, .inf as a number) are refused, like any unknown key."""
    path = write_config(f"""
        experiments:
          - id: e
            {setting}
            dataset: {{items: [{{input: a}}]}}
            runner: echo
    """)
    with pytest.raises(ConfigError) as caught:
        load_project([path])
    assert f"$.experiments[0].{message}" in caught.value.format_message()


@pytest.mark.parametrize("given, hint", [
    ("support answers", "did you mean 'support-answers'?"),
    ("my tests!", "did you mean 'my-tests'?"),
    ("ñandú", "an id's letters are ASCII, A to Z, without accents"),
    ("n\u0303", "an id's letters are ASCII, A to Z, without accents"),  # ñ typed as n and a combining tilde
    ("实验", "an id's letters are ASCII, A to Z, without accents"),
    ("实验 n", "an id's letters are ASCII, A to Z, without accents"),
])
def test_an_invalid_id_is_fixed_only_when_the_fix_keeps_the_whole_name(write_config, given, hint):
    path = write_config(f"""
        experiments:
          - id: "{given}"
            dataset: {{items: [{{input: a}}]}}
            runner: echo
    """)
    with pytest.raises(ConfigError) as caught:
        load_project([path])
    assert f"is not a valid id: use letters, digits, '_', '.' and '-', starting with a letter or digit ({hint})" \
        in caught.value.format_message()


def test_includes_globs_and_standalone_experiment_files(write_config, tmp_path):
    write_config("""
        id: from-file
        dataset: {items: [{input: 1}]}
        runner: echo
    """, name="experiments/one.yaml")
    write_config("""
        experiments:
          - id: nested
            dataset: {items: [{input: 1}]}
            runner: echo
    """, name="experiments/two.yaml")
    path = write_config("""
        defaults: {concurrency: 2}
        include: [experiments/*.yaml]
        experiments:
          - id: main
            dataset: {items: [{input: 1}]}
            runner: echo
    """)
    project = load_project([path])
    assert [e.id for e in project.experiments] == ["main", "from-file", "nested"]
    assert all(e.concurrency == 2 for e in project.experiments)
    alone = load_project([tmp_path / "experiments" / "one.yaml"])
    assert [e.id for e in alone.experiments] == ["from-file"]
    assert alone.experiments[0].concurrency == 8


def test_include_cycle_is_an_error(write_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_config("include: [b.yaml]\n", name="a.yaml")
    write_config("include: [a.yaml]\n", name="b.yaml")
    path = write_config("include: [a.yaml]\n")
    with pytest.raises(ConfigError) as caught:
        load_project([path])
    assert "include cycle: a.yaml -> b.yaml -> a.yaml" in caught.value.format_message()


def test_env_vars_and_defaults(write_config):
    path = write_config("""
        experiments:
          - id: e
            label: "${LABEL:-fallback}"
            dataset: {items: [{input: "${WHO}"}]}
            runner: {uses: echo, with: {output: "${WHO} ${MOOD:-happy} $${NOT_A_VAR}"}}
    """)
    [experiment] = load_project([path], environ={"WHO": "world"}).experiments
    assert experiment.runner.with_["output"] == "world happy ${NOT_A_VAR}"
    # what reports show stays as written, and dataset items are data: never expanded
    assert experiment.label == "${LABEL:-fallback}"
    assert experiment.dataset.items[0]["input"] == "${WHO}"
    with pytest.raises(ConfigError) as caught:
        load_project([path], environ={})
    assert "environment variable WHO is not set" in caught.value.format_message()


def test_an_empty_variable_is_an_error_only_where_a_value_is_needed(write_config):
    """A key, URL or header cannot be empty (a CI job without its secrets has them set to ""),
    other settings can; a default written beside the reference stands in for an empty value."""
    path = write_config("""
        experiments:
          - id: e
            dataset: {url: "${HOST:-http://127.0.0.1:9}/items", headers: {Token: "${EMPTY}"}}
            runner: {uses: echo, with: {output: "[${EMPTY}]"}}
    """)
    with pytest.raises(ConfigError) as caught:
        load_project([path], environ={"HOST": "", "EMPTY": ""})
    assert caught.value.exit_code == 2
    assert caught.value.format_message().splitlines()[0].endswith(
        "$.experiments[0].dataset.headers.Token: error: environment variable EMPTY is set but empty "
        "(a key, URL or header value cannot be empty; in CI, a pull request from a fork gets no secrets)")
    assert "output" not in caught.value.format_message()


def test_secrets_never_reach_the_report_or_messages(write_config, tmp_path):
    secret = "sk-very-secret-value"
    write_config("""
        experiments:
          - id: e
            metadata: {key: "${API_KEY}"}
            dataset: {items: [{input: hello, expected: hello}]}
            runner: echo
            scorers: [exact_match]
    """)
    done = run_cli("run", cwd=tmp_path, API_KEY=secret)
    assert done.returncode == 0, done.stderr
    assert secret not in (tmp_path / "reports" / "results.json").read_text()
    assert secret not in done.stdout + done.stderr
    write_config("""
        defaults: {concurrency: "${API_KEY}"}
        experiments: []
    """, name="typed.yaml")
    bad = run_cli("validate", "typed.yaml", cwd=tmp_path, API_KEY=secret)
    assert bad.returncode == 2
    assert secret not in bad.stderr and '"${API_KEY}"' in bad.stderr


def test_duplicate_keys_and_all_errors_at_once_sorted_by_line(write_config):
    path = write_config("""
        experiments:
          - id: e
            labl: x
            dataset: {items: [{input: 1}]}
            runner: echo
            scorers: [{uses: levenshtein, threshold: 2}]
    """)
    with pytest.raises(ConfigError) as caught:
        load_project([path])
    lines = [line.rpartition("/")[2] for line in caught.value.format_message().splitlines() if ": error: " in line]
    assert lines == [
        "evals.yaml:4:5: $.experiments[0].labl: error: unknown key 'labl' (did you mean 'label'?)",
        "evals.yaml:7:46: $.experiments[0].scorers[0].threshold: error: must be between 0 and 1, got 2",
    ]


def test_report_config_paths_are_relative_to_the_file(write_config, tmp_path):
    path = write_config("""
        store: data/results.db
        reports: {dir: out, formats: [json, html]}
        experiments: []
    """, name="sub/evals.yaml")
    project = load_project([path])
    assert project.reports_dir == str(tmp_path / "sub" / "out")
    assert project.report_formats == ("json", "html")
    assert json.loads(json.dumps(project.report_formats)) == ["json", "html"]


def test_breakdowns_and_the_html_size_come_from_the_reports_settings_or_the_experiment(write_config):
    path = write_config("""
        reports: {formats: [html, json], breakdowns: [metadata.topic, tags], max_html_mb: 10}
        experiments:
          - {id: a, dataset: {items: [{input: a}]}, runner: echo}
          - {id: b, dataset: {items: [{input: a}]}, runner: echo, breakdowns: [metadata.lang]}
          - {id: c, dataset: {items: [{input: a}]}, runner: echo, breakdowns: []}
    """)
    project = load_project([path])
    assert [e.breakdowns for e in project.experiments] == [("metadata.topic", "tags"), ("metadata.lang",), ()]
    assert project.report_formats == ("html:10", "json")
    default = load_project([write_config("experiments: [{id: a, dataset: {items: [{input: a}]}, runner: echo}]\n",
                                         "other.yaml")])
    assert default.experiments[0].breakdowns is None and default.report_formats[0] == "html"
    with pytest.raises(ConfigError) as caught:
        load_project([write_config("reports: {breakdowns: [topic]}\nexperiments: []\n", "bad.yaml")])
    assert "$.reports.breakdowns[0]" in caught.value.format_message()


def test_the_junit_family_goes_with_the_junit_format(write_config, tmp_path):
    path = write_config("""
        reports: {dir: out, formats: [junit, json], junit: {family: xunit1}}
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            pass_criteria:
              - {type: pass_rate, min: 0.5}
    """)
    project = load_project([path])
    assert project.report_formats == ("junit:xunit1", "json")
    assert [c.source.rpartition("/")[2] for c in project.experiments[0].pass_criteria] == ["evals.yaml:8"]
    yamleval.run(project, store=str(tmp_path / "results.db"))
    cases = [line for line in (tmp_path / "out" / "junit.xml").read_text().splitlines() if "<testcase " in line]
    assert [case.split('line="')[1].split('"')[0] for case in cases] == ["5", "8"]
    assert load_project([write_config("reports: {junit: {family: xunit2}}\nexperiments: []\n", "other.yaml")]
                        ).report_formats == ("html", "junit:xunit2", "json", "markdown")
