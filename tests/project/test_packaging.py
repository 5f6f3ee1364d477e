"""What ships: the schema copy, entry points for every built-in, a light ``import yamleval``;
plugins of another distribution found by name."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import jsonschema
import pytest

import yamleval
from conftest import ROOT, run_cli
from yamleval.plugins import registry as plugins
from yamleval.store.writer import Store


def test_shipped_schema_is_the_top_level_schema():
    from yamleval.config.schema import schema_text

    # schema_text reads the copy inside the installed package, wherever it is installed
    assert schema_text() == (ROOT / "schema" / "yamleval.schema.json").read_text(encoding="utf-8")


def test_schema_describes_the_builtins_as_their_signatures_do():
    spec = importlib.util.spec_from_file_location("generate_schema", ROOT / "schema" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    committed = (ROOT / "schema" / "yamleval.schema.json").read_text(encoding="utf-8")
    assert generate.schema_text(committed) == committed, "run: python schema/generate.py"


def test_the_schema_checks_a_builtins_arguments_and_no_one_elses():
    schema = json.loads((ROOT / "schema" / "yamleval.schema.json").read_text())
    validator = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/scorer"})

    def problems(scorer):
        """What the scorer's mapping form finds wrong with ``scorer``."""
        return [sub.message for error in validator.iter_errors(scorer) for sub in error.context
                if sub.schema_path[0] == 1]

    assert problems({"uses": "contains_any", "with": {"ignore_case": True}}) == []
    assert problems({"uses": "contains_any", "with": {"ignorecase": True}}) == [
        "Additional properties are not allowed ('ignorecase' was unexpected)"]
    assert problems({"uses": "judge"}) == ["'with' is a required property"]
    assert problems({"uses": "plugins.support:politeness", "with": {"anything": 1}}) == []


def test_schema_is_valid_and_accepts_the_demo():
    from yamleval.config import yaml_source

    schema = json.loads((ROOT / "schema" / "yamleval.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data, _ = yaml_source.load(str(ROOT / "evals.yaml"))
    jsonschema.validate(data, schema)


def test_demo_points_editors_at_the_schema():
    first = (ROOT / "evals.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=schema/yamleval.schema.json"


@pytest.mark.parametrize("kind", ["runners", "scorers", "tools"])
def test_every_builtin_loads_by_its_name(kind):
    names = plugins.builtins(kind)
    assert names
    for name in names:
        loaded = plugins.load(kind, name)
        assert callable(loaded) and loaded.__name__ == name


def test_every_builtin_report_format_loads_with_its_file_name():
    formats = plugins.builtins("reports")
    assert sorted(formats) == ["html", "json", "junit", "markdown"]
    files = {name: plugins.load("reports", name).FILE_NAME for name in formats}
    assert files == {"html": "report.html", "json": "results.json", "junit": "junit.xml", "markdown": "summary.md"}
    assert all(callable(plugins.load("reports", name).Writer) for name in formats)


@pytest.mark.parametrize("kind, name, meant", [
    ("runners", "ecko", "echo"), ("scorers", "exact_mach", "exact_match"), ("tools", "calculater", "calculator"),
    ("reports", "junitt", "junit"),
])
def test_an_unknown_name_gets_the_close_one(kind, name, meant):
    with pytest.raises(plugins.Unresolved) as raised:
        plugins.load(kind, name)
    assert raised.value.message == f"unknown {kind[:-1]} '{name}'"
    assert raised.value.hint == f"did you mean '{meant}'?"


def test_only_the_plugins_used_are_imported():
    code = ("import sys; from yamleval.plugins import registry as plugins; from yamleval.builtins.tools import build_tools; "
            "plugins.load('scorers', 'exact_match'); build_tools(['calculator'], '.'); "
            "print(','.join(m for m in ('yamleval.builtins.scorers.judges', 'yamleval.builtins.runners.http', "
            "'yamleval.builtins.tools.web', 'yamleval.reporting.html') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


THIRD_PARTY = """\
    from yamleval import Score

    FILE_NAME = "plain.txt"


    def shout(input):
        return input.upper() + "!"


    def not_echo(input):
        return "not the built-in echo"


    def loud(output):
        return Score(score=1.0 if output.endswith("!") else 0.0)


    def dice(sides: int) -> str:
        \"\"\"A roll of a die.\"\"\"
        return str(sides)


    class Writer:
        def __init__(self, out, run, results):
            self.out, self.lines = out, []

        def begin(self, result):
            self.lines.append(result.experiment_id)

        def item(self, result):
            self.lines.append(f"  {result.item.id}: {result.status}")

        def end(self, result):
            pass

        def close(self):
            self.out.write("\\n".join(self.lines) + "\\n")
    """


@pytest.fixture
def third_party(tmp_path):
    """A distribution installed in ``site/`` registering one plugin of each kind, and an ``echo``
    runner of its own; returns the folder to put on PYTHONPATH."""
    site = tmp_path / "site"
    info = site / "thirdparty_plugins-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "thirdparty_plugins.py").write_text(textwrap.dedent(THIRD_PARTY), encoding="utf-8")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [yamleval.runners]
        shout = thirdparty_plugins:shout
        echo = thirdparty_plugins:not_echo
        [yamleval.scorers]
        loud = thirdparty_plugins:loud
        [yamleval.tools]
        dice = thirdparty_plugins:dice
        [yamleval.reports]
        plain = thirdparty_plugins
        """))
    return str(site)


def test_a_third_party_distribution_adds_plugins_by_name(write_config, tmp_path, third_party):
    write_config("""\
        version: 1
        experiments:
          - id: loud
            dataset: {items: [{id: a, input: hi, expected: "HI!"}]}
            runner: shout
            scorers: [loud, exact_match]
          - id: echoed
            dataset: {items: [{id: b, input: same, expected: same}]}
            runner: echo
            scorers: [exact_match]
        """)
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path, PYTHONPATH=third_party)
    assert done.returncode == 0, done.stdout + done.stderr  # echo is still the built-in
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [i["output"] for e in results["experiments"] for i in e["items"]] == ["HI!", "same"]
    store = Store(str(tmp_path / ".yamleval" / "results.db"))
    [info] = store.runs()
    assert store.run_detail(info.run_id, "plugin_versions") == {
        "echo": f"yamleval {yamleval.__version__}", "exact_match": f"yamleval {yamleval.__version__}",
        "loud": "entry point", "shout": "entry point"}
    done = run_cli("report", "--format", "plain,json", "--report-dir", "again", cwd=tmp_path,
                   PYTHONPATH=third_party)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "again" / "plain.txt").read_text() == "loud\n  a: passed\nechoed\n  b: passed\n"


def test_a_third_party_tool_and_a_misspelt_name(write_config, tmp_path, third_party):
    write_config("""\
        version: 1
        models:
          m: {base_url: "http://127.0.0.1:9/v1", model: tiny}
        experiments:
          - id: agent
            dataset: {items: [{id: a, input: roll}]}
            runner: {uses: agent, with: {model: m, tools: [dice]}}
            scorers: [is_json]
          - id: typo
            dataset: {items: [{id: a, input: hi}]}
            runner: shuot
            scorers: [is_json]
        """)
    done = run_cli("validate", cwd=tmp_path, PYTHONPATH=third_party)
    assert done.returncode == 2
    assert "unknown runner 'shuot' (did you mean 'shout'?)" in done.stderr
    assert done.stderr.count("error:") == 1, done.stderr  # the tool is found


def test_public_api():
    assert yamleval.__all__ == sorted(yamleval.__all__[:-1]) + ["__version__"]
    for name in yamleval.__all__:
        assert getattr(yamleval, name) is not None


def test_import_yamleval_is_light():
    code = ("import sys, yamleval; from yamleval import Score, RunnerResult; "
            "heavy = [m for m in ('jinja2', 'jsonschema', 'click', 'yaml', 'Levenshtein', 'requests') "
            "if m in sys.modules]; print(','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
