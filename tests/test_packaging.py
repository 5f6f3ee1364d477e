"""What ships: the schema copy, entry points for every built-in, a light ``import yamleval``."""
from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

import yamleval
from conftest import ROOT
from yamleval import plugins


def test_shipped_schema_is_the_top_level_schema():
    from yamleval.config.schema import schema_text

    # schema_text reads the copy inside the installed package, wherever it is installed
    assert schema_text() == (ROOT / "schema" / "yamleval.schema.json").read_text(encoding="utf-8")


def test_schema_is_valid_and_accepts_the_demo():
    from yamleval.config import yaml_source

    schema = json.loads((ROOT / "schema" / "yamleval.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    data, _ = yaml_source.load(str(ROOT / "evals.yaml"))
    jsonschema.validate(data, schema)


def test_demo_points_editors_at_the_schema():
    first = (ROOT / "evals.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=schema/yamleval.schema.json"


@pytest.mark.parametrize("kind, module", [("scorers", "yamleval.scorers"), ("runners", "yamleval.runners")])
def test_every_builtin_is_an_entry_point(kind, module):
    import importlib

    exported = set(importlib.import_module(module).__all__)
    registered = plugins.entry_points(kind)
    assert exported <= set(registered)
    for name in exported:
        loaded = registered[name].load()
        assert registered[name].value.startswith(module + ".") and callable(loaded) and loaded.__name__ == name


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
