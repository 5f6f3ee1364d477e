"""The quick conformance check agrees with jsonschema: it never calls an invalid document valid.

Loading a config skips jsonschema when the quick check says the document conforms, so a
wrong "yes" would let an invalid config through. Each document drawn here (mutations of
valid configs, and arbitrary values) is put to both.
"""
from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from yamleval.config.conforms import conforms
from yamleval.config.schema import _schema, _validator
from yamleval.config.yaml_source import parse

pytestmark = pytest.mark.badinput

SCHEMA = _schema()
DEMO = parse((ROOT / "evals.yaml").read_text(encoding="utf-8"), "evals.yaml")[0]
EXPERIMENT = {"id": "e", "dataset": {"items": [{"input": "a", "expected": "a"}]}, "runner": "echo",
              "scorers": ["exact_match", {"uses": "levenshtein", "threshold": 0.8}],
              "pass_criteria": [{"type": "pass_rate", "min": 0.5}], "concurrency": 4, "timeout": 2.5}
SETTINGS = settings(max_examples=400, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=8), st.sampled_from(["echo", "exact_match", "json", "error", "warn", "", "2.0"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, path + (index,))


@st.composite
def mutated(draw):
    document = copy.deepcopy(draw(st.sampled_from([DEMO, {"experiments": [EXPERIMENT]}])))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(document) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "label", "limit", "tags", "vars", "threshold", "uses"]))] = \
                draw(values)
        else:
            parent[path[-1]] = draw(values)
    return document


def _valid(document, definition: str) -> bool:
    return not any(True for _ in _validator(definition).iter_errors(document))


@SETTINGS
@given(mutated())
def test_a_document_the_quick_check_accepts_is_valid(document):
    if conforms(SCHEMA, "project_file", document):
        assert _valid(document, "project_file")


@SETTINGS
@given(values)
def test_arbitrary_values_the_quick_check_accepts_are_valid(document):
    for definition in ("project_file", "experiment_file"):
        if conforms(SCHEMA, definition, document):
            assert _valid(document, definition)


def test_the_demo_and_plain_configs_conform_without_jsonschema():
    assert conforms(SCHEMA, "project_file", DEMO)
    assert conforms(SCHEMA, "project_file", {"experiments": [EXPERIMENT]})
    assert not conforms(SCHEMA, "project_file", {"experiments": [dict(EXPERIMENT, concurrency=2.0)]})
    assert not conforms(SCHEMA, "project_file", {"experiments": [dict(EXPERIMENT, typo=1)]})
