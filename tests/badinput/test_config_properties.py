"""Whatever a config file holds, loading it ends in experiments or in located config errors.

The property is the one ``yamleval validate`` promises: any YAML text, and any mutation of a
valid config (keys deleted, values of the wrong type, hostile text, huge and non-finite
numbers, deep nesting, alias bombs), gives either a valid project or ConfigErrors that
each name a file (and, for the config file itself, a line) — never another exception,
never a hang. The last tests check a few of the cases found here through the command line.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import yamleval
from conftest import ROOT, run_cli
from yamleval.engine import plan
from yamleval.config.loader import load_project
from yamleval.records.errors import ConfigError
from yamleval.records.codec import encode_record

pytestmark = pytest.mark.badinput

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- the property --------------------------------------------------------------------------------

_WORKDIR = Path(tempfile.mkdtemp(prefix="yamleval-props-"))
for _folder in ("datasets", "plugins"):  # the demo config's datasets and plugins, so it loads as valid
    shutil.copytree(ROOT / _folder, _WORKDIR / _folder, dirs_exist_ok=True)
CONFIG = _WORKDIR / "evals.yaml"


@pytest.fixture(scope="module", autouse=True)
def _remove_workdir():
    yield
    shutil.rmtree(_WORKDIR, ignore_errors=True)


def _assert_located(error: ConfigError) -> None:
    for one in getattr(error, "errors", None) or [error]:
        assert type(one) is ConfigError, type(one)
        assert one.location is not None and one.location.file, one.format_message()
        if one.location.file == CONFIG.name:
            assert one.location.line is not None, one.format_message()
        assert "error: " in one.format_message()


def outcome(data: bytes) -> str:
    """Load ``data`` as ``evals.yaml`` the way ``validate`` does: 'valid' or 'error'; anything
    else raised fails the test."""
    CONFIG.write_bytes(data)
    try:
        project = load_project([CONFIG.name], environ={"HOME": "/nowhere"})
        errors = [found for experiment in project.experiments for found in plan.check(experiment)]
    except ConfigError as exc:
        _assert_located(exc)
        return "error"
    for found in errors:
        _assert_located(found)
    return "error" if errors else "valid"


@pytest.fixture(autouse=True)
def _in_workdir(monkeypatch):
    monkeypatch.chdir(_WORKDIR)  # messages name files relative to here, as the CLI would


# --- valid configs to start from -----------------------------------------------------------------

MINIMAL = """\
experiments:
  - id: one
    dataset: {items: [{input: a, expected: a}]}
    runner: echo
"""

FULL = """\
version: 1
defaults: {concurrency: 2, timeout: 5, retries: 1}
vars: {greeting: hi}
reports: {dir: out, formats: [json, junit]}
store: results.db
models:
  judge: {base_url: "http://127.0.0.1:9/v1", model: m, temperature: 0, price: {prompt: 1, completion: 2}}
experiments:
  - id: full
    label: Everything
    description: every key once
    tags: [a, b]
    metadata: {owner: me}
    concurrency: 3
    timeout: 2.5
    dataset:
      items:
        - {id: x, input: "hello", expected: "hello", context: [c], metadata: {k: 1}}
        - {id: y, input: {q: 1}, expected: {q: 1}, assertions: [must]}
      fields: {input: input}
      limit: 10
    runner:
      uses: echo
      with: {output: "{{ vars.greeting }} {{ input }}"}
    scorers:
      - exact_match
      - {uses: levenshtein, id: lev, threshold: 0.8}
      - {uses: contains_any, id: blame, value: [sorry], negate: true, with: {ignore_case: true}}
      - {uses: json_schema, with: {schema: {type: string}}}
    pass_criteria:
      - {type: mean_score, min: 0.5, label: quality}
      - {type: pass_rate, scorer: lev, min: 0.8, severity: warn}
"""

STANDALONE = """\
id: alone
dataset: {file: datasets/support.jsonl, fields: {input: question, expected: answer}, limit: 2}
runner: {uses: plugins.support:answer, with: {tone: plain}}
scorers: [exact_match]
"""

VALID = [(ROOT / "evals.yaml").read_text(encoding="utf-8"), MINIMAL, FULL, STANDALONE]
BASES = [yaml.load(text, Loader=yaml.CSafeLoader) for text in VALID]  # as the loader reads them


def test_the_starting_configs_are_valid():
    for text in VALID:
        assert outcome(text.encode()) == "valid", text[:80]


# --- strategies ----------------------------------------------------------------------------------

DEEP = "@@deep@@"      # placeholders put into the dumped text afterwards: safe_dump cannot write
BOMB = "@@bomb@@"      # 1000 levels of nesting, an alias bomb or an integer of 5000 digits
HUGE = "@@huge@@"
_BOMB_ANCHORS = "".join(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 9))
_BOMB_ANCHORS = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + _BOMB_ANCHORS

hostile_text = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["\x00", "a\x00b", "\ud800", "\udfff", "\u202eevil\u202c", "\ufeff", "\u200b", "\x1b[31m",
                     "${UNSET}", "${", "$${x}", "{{ input", "{% for %}", "*alias", "&anchor", "!!python/name:os",
                     "../../../etc/passwd", "/", "", " ", "\t", "\r\n", "é" * 50, "𝒳" * 10]),
    st.just("x" * 100_000),
)
hostile_number = st.one_of(
    st.integers(), st.floats(), st.sampled_from([10 ** 400, -(10 ** 400), float("inf"), float("-inf"),
                                                 float("nan"), 0, -1, 2 ** 63, 1e-320, True, False]),
)
scalar = st.one_of(st.none(), st.booleans(), hostile_number, hostile_text)
nested = st.recursive(scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)
hostile_value = st.one_of(scalar, nested, st.sampled_from([[], {}, DEEP, BOMB, HUGE, [DEEP], {"a": DEEP}]))


def _paths(value, at=()):
    """Every path into ``value``, so a mutation can pick one."""
    yield at
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, at + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, at + (index,))


def _parent(data, path):
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def mutated_config(draw, bases=tuple(BASES)) -> bytes:
    """A valid config with one to four changes at random places."""
    data = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, last = _parent(data, path), path[-1]
        action = draw(st.sampled_from(["delete", "replace", "replace", "rename", "wrap", "duplicate"]))
        if action == "delete":
            del parent[last]
        elif action == "replace":  # a copy: sampled_from hands out the same list or dict every time
            parent[last] = copy.deepcopy(draw(hostile_value))
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(hostile_text.filter(lambda k: k not in parent))] = parent.pop(last)
        elif action == "wrap":
            how = draw(st.sampled_from(["list", "x", "uses"]))
            parent[last] = [parent[last]] if how == "list" else {how: parent[last]}
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
    return _dump(data, draw(st.booleans()))


def _dump(data, unicode: bool) -> bytes:
    text = yaml.safe_dump(data, allow_unicode=unicode, sort_keys=False, width=2 ** 20)
    if DEEP in text:
        text = text.replace(DEEP, "[" * 1200 + "]" * 1200)
    text = text.replace(HUGE, "9" * 5000)
    if BOMB in text:
        text = _BOMB_ANCHORS + text.replace(BOMB, "*l8")
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate becomes bytes that are not UTF-8


YAML_PIECES = ["experiments:", "- ", "id: a", "dataset:", "items:", "{input: 1}", "runner: echo", "scorers:",
               "include:", "defaults:", "[", "]", "{", "}", ": ", ",", "\n", "  ", "    ", "\t", "'", '"', "#",
               "---\n", "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "? ", "|\n", ">-\n", "&a ", "*a", "*b",
               "<<: *a", "!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary aGk=",
               "!!set {a}", "!!omap [a: 1]", "!!timestamp 2020-02-30", "!local x", "~", ".nan", "-.inf",
               "9" * 5000, "0x_", "0o9", "2020-13-45", "\x00", "\ufeff", "\u2028", "\x85", "\ud800", "é"]
yaml_like = st.lists(st.sampled_from(YAML_PIECES), max_size=40).map(lambda parts: "".join(parts))


# --- properties ----------------------------------------------------------------------------------

@SETTINGS
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_any_bytes_load_or_fail_with_a_located_error(data):
    outcome(data)


@SETTINGS
@given(yaml_like)
def test_yaml_like_text_loads_or_fails_with_a_located_error(text):
    outcome(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(nested, st.booleans())
def test_any_yaml_structure_loads_or_fails_with_a_located_error(data, unicode):
    outcome(_dump(data, unicode))


@SETTINGS
@given(st.fixed_dictionaries({}, optional={key: hostile_value for key in (
    "version", "defaults", "vars", "store", "reports", "include", "models", "experiments")}), st.booleans())
def test_any_project_shape_loads_or_fails_with_a_located_error(data, unicode):
    outcome(_dump(data, unicode))


@settings(SETTINGS, max_examples=300)
@given(mutated_config())
def test_mutated_valid_configs_load_or_fail_with_a_located_error(data):
    outcome(data)


@settings(SETTINGS, max_examples=100)
@given(mutated_config(bases=(BASES[1], BASES[2])))
def test_mutated_configs_that_load_also_run(data):
    """What loads runs: every item is recorded, whatever odd values the config carries."""
    loaded = outcome(data)
    event(loaded)
    if loaded != "valid":
        return
    for experiment in load_project([CONFIG.name], environ={}).experiments:
        result = yamleval.run_experiment(experiment)
        assert result.aborted is None and len(result.items) == result.summary.total
        for item in result.items:
            _strict_json(encode_record(item))


def _strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


# --- the cases found, one by one -----------------------------------------------------------------

FOUND = {
    "alias-bomb": _BOMB_ANCHORS + "experiments: *l8\n",
    "self-alias": "experiments: &x [*x]\n",
    "merge-bomb": _BOMB_ANCHORS + "experiments:\n  - {<<: {id: *l8}}\n",
    "deep-nesting": "experiments: " + "[" * 990 + "]" * 990 + "\n",
    "deep-by-alias": "vars: &v " + "[" * 90 + "]" * 90 + "\nexperiments: [[[[[[[[[[[[[[[[[[[[*v]]]]]]]]]]]]]]]]]]]]\n",
    "huge-integer": "defaults: {concurrency: " + "9" * 5000 + "}\nexperiments: []\n",
    "impossible-date": "experiments:\n  - {id: a, label: 2020-02-30, dataset: {items: [{input: 1}]}, runner: echo}\n",
    "nan-timeout": "experiments:\n  - {id: a, timeout: .nan, dataset: {items: [{input: 1}]}, runner: echo}\n",
    "inf-threshold": "experiments:\n  - {id: a, dataset: {items: [{input: 1}]}, runner: echo,"
                     " scorers: [{uses: exact_match, threshold: .inf}]}\n",
    "nul-in-include": 'include: ["a\\0b.yaml"]\nexperiments: []\n',
    "include-device": "include: [/dev/zero]\nexperiments: []\n",
    "include-folder": "include: [/tmp]\nexperiments: []\n",
    "nul-in-store": 'store: "a\\0b"\nexperiments: []\n',
    "null-dataset": "experiments:\n  - {id: a, dataset: null, runner: echo}\n",
    "float-limit": "experiments:\n  - {id: a, dataset: {items: [{input: 1}], limit: 0.0}, runner: echo}\n",
    "limit-past-maxsize": "experiments:\n  - {id: a, dataset: {items: [{input: 1}], limit: 9223372036854775808},"
                          " runner: echo}\n",
    "bad-timestamp-tag": "experiments: !!timestamp 2020-02-30x\n",
    "python-tag": "experiments: !!python/object/apply:os.system ['echo pwned']\n",
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_found_cases_are_located_errors_in_process(case):
    assert outcome(FOUND[case].encode()) == "error"


@pytest.mark.parametrize("case", sorted(FOUND))
def test_found_cases_exit_2_from_the_command_line(case, tmp_path):
    (tmp_path / "evals.yaml").write_text(FOUND[case], encoding="utf-8")
    done = run_cli("validate", "evals.yaml", cwd=tmp_path, timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert re.match(r"evals\.yaml:\d+:\d+: ", done.stderr), done.stderr[:300]
    assert "pwned" not in done.stdout


def test_an_alias_of_a_mapping_with_a_merge_key_keeps_its_overrides():
    text = MINIMAL.replace("    runner: echo\n", "    runner: echo\n    vars:\n      base: &b {x: 1, y: 2}\n"
                                                "      a: &a {<<: *b, x: 3}\n      c: *a\n")
    assert outcome(text.encode()) == "valid"
    [experiment] = load_project([CONFIG.name], environ={}).experiments
    assert experiment.vars["c"] == {"x": 3, "y": 2}
