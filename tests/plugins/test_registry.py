"""Plugins as users write them: what their signature asks for, the hooks they implement, and
where their own modules are imported from."""
from __future__ import annotations

import sys
import textwrap

import pytest

import yamleval
from conftest import run_cli
from yamleval.engine import plan

OWN_MODEL = '''
def run(input, model, **kwargs):
    return f"{model}: {input}"


def said(output, model, **kwargs):
    return output == f"{model}: hello"
'''


def test_a_plugin_with_kwargs_gets_its_own_model_argument_as_given(tmp_path):
    """``**kwargs`` accepts anything; it does not ask for ``models``, so ``with: {model: big}``
    is the plugin's own value, not the name of a ``models:`` entry."""
    (tmp_path / "own_model.py").write_text(OWN_MODEL, encoding="utf-8")
    (tmp_path / "evals.yaml").write_text(textwrap.dedent("""
        experiments:
          - id: e
            dataset: {items: [{input: hello}]}
            runner: {uses: "own_model:run", with: {model: big}}
            scorers:
              - {uses: "own_model:said", with: {model: big}}
    """), encoding="utf-8")
    checked = run_cli("validate", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "big: hello" in (tmp_path / "out" / "results.json").read_text(encoding="utf-8")


HOOKS = '''
from yamleval.plugins.registry import OptionError


class Marked:
    """A class scorer that checks its own options when the config is loaded."""

    def __init__(self, word="ok"):
        self.word = word

    @staticmethod
    def validate_with(options):
        if not str(options.get("word", "ok")).isalpha():
            raise OptionError("`word` must be letters only", key="word", hint="write a word")

    def __call__(self, output):
        return self.word in str(output)


def counted(output, expected, scale=1.0):
    return Score(score=float(output == expected), metadata={"corpus_stats": [int(output == expected), 1]})


def _share(stats, scale=1.0):
    return scale * stats[0] / stats[1]


counted.corpus_score = _share


def broken(output):
    return 1.0


broken.validate_with = "not a function"
'''


def _project(tmp_path, experiments: str):
    (tmp_path / "own_hooks.py").write_text("from yamleval import Score\n" + HOOKS, encoding="utf-8")
    config = tmp_path / "evals.yaml"
    config.write_text(textwrap.dedent(experiments), encoding="utf-8")
    [experiment] = yamleval.load_experiments(config)
    return experiment


def test_a_plugins_own_check_of_its_with_fails_the_load_at_the_key(tmp_path):
    experiment = _project(tmp_path, """
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            scorers: [{uses: "own_hooks:Marked", with: {word: "no way"}}]
    """)
    [error] = plan.check(experiment)
    assert "with.word" in str(error) and "`word` must be letters only" in str(error)
    assert "write a word" in error.format_message()


def test_a_hook_that_is_not_a_function_is_a_config_error_at_the_plugin(tmp_path):
    experiment = _project(tmp_path, """
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            scorers: [{uses: "own_hooks:broken"}]
    """)
    [error] = plan.check(experiment)
    assert "'own_hooks:broken' cannot be used: its `validate_with` is a str, not a function" in str(error)


def test_a_users_corpus_scorer_gives_the_whole_runs_score_with_its_with_bound(tmp_path):
    experiment = _project(tmp_path, """
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}, {input: b, expected: c}, {input: d, expected: d}]}
            runner: echo
            scorers: [{uses: "own_hooks:counted", id: share, with: {scale: 0.5}}]
    """)
    result = yamleval.run_experiment(experiment)
    assert result.summary.scorers["share"].corpus == pytest.approx(0.5 * 2 / 3)


LAZY = '''
import sys


def run(input):
    import {helper}  # imported only when an item runs
    return {{"from": {helper}.NAME, "others_on_path": [p for p in sys.path if p.endswith("{other}")]}}


def reach(input):
    import {other_helper}  # the other project's module: not this project's to import
    return "reached"
'''


def _lazy_project(root, name: str, other: str):
    folder = root / name
    folder.mkdir()
    (folder / f"{name}_runner.py").write_text(
        LAZY.format(helper=f"{name}_helper", other=other, other_helper=f"{other}_helper"), encoding="utf-8")
    (folder / f"{name}_helper.py").write_text(f"NAME = {name!r}\n", encoding="utf-8")
    (folder / "evals.yaml").write_text(textwrap.dedent(f"""
        experiments:
          - id: {name}
            dataset: {{items: [{{id: one, input: a}}]}}
            runner: "{name}_runner:run"
          - id: {name}-reach
            dataset: {{items: [{{id: one, input: a}}]}}
            runner: "{name}_runner:reach"
    """), encoding="utf-8")
    return yamleval.load_experiments(folder / "evals.yaml")


def test_two_projects_prepared_in_one_process_import_only_their_own_modules(tmp_path):
    """Each project's folder is on sys.path only while its plugins are imported; when they run,
    a plugin imports the modules next to it, and never the other project's."""
    before = list(sys.path)
    names = ["north_runner", "north_helper", "south_runner", "south_helper"]
    try:
        north, north_reach = _lazy_project(tmp_path, "north", "south")
        south, _ = _lazy_project(tmp_path, "south", "north")
        ready = [plan.prepare(e) for e in (north, north_reach, south)]
        assert sys.path == before
        with plan.importable(south):  # the south project's run is under way meanwhile
            [ran] = yamleval.run_experiment(ready[0]).items
            [reached] = yamleval.run_experiment(ready[1]).items
        assert (ran.status, ran.output) == ("passed", {"from": "north", "others_on_path": []})
        assert reached.status == "error" and "No module named 'south_helper'" in reached.error
        [other] = yamleval.run_experiment(ready[2]).items
        assert (other.status, other.output) == ("passed", {"from": "south", "others_on_path": []})
        assert sys.path == before
    finally:
        for name in names:
            sys.modules.pop(name, None)
