"""The manual: it builds without a warning, every YAML example in it (and in the README) is
valid against yamleval's own schema (as `yamleval validate` checks a file, and as editors
check it, with each built-in runner's and scorer's `with:` arguments), and the README stays
short.

The YAML convention: a ```yaml block with no mark must be a whole config (a project file with
`experiments:`, or an experiment file with `id`, `dataset` and `runner`). Any other block is
marked by an HTML comment on the line before it:

- `<!-- yaml: not-config -->`: not a yamleval file (a GitHub workflow, say);
- `<!-- yaml: NAME -->`: a fragment checked against the schema's `$defs/NAME` (a list block:
  each of its entries);
- `<!-- yaml: NAME part -->`: the same, for a block that leaves out required keys (`# ...`):
  an experiment's `id`, `dataset` and `runner` and a project's `experiments` are filled in
  with stand-ins before it is checked.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT
from yamleval.config import schema, yaml_source
from yamleval.config.loader import _is_project

DOCS = ROOT / "docs"
_BLOCK = re.compile(r"(?:<!-- yaml: (?P<mark>[^>]*?) -->\n)?```yaml\n(?P<body>.*?)```", re.S)
_EXPERIMENT = {"id": "stand-in", "dataset": {"items": []}, "runner": "echo"}
_STAND_INS = {"experiment": _EXPERIMENT, "experiment_keys": _EXPERIMENT, "experiment_file": _EXPERIMENT,
              "project_file": {"experiments": []}}


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]


def _blocks() -> list[tuple[str, str | None, str]]:
    found = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body")) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group("mark"), match.group("body")))
    return found


def _fill(definition: str, data):
    """``data`` with what a `part` block leaves out filled in (experiments inside a project too)."""
    if not isinstance(data, dict) or definition not in _STAND_INS:
        return data
    filled = {**_STAND_INS[definition], **data}
    if definition == "project_file":
        filled["experiments"] = [_fill("experiment", entry) for entry in filled["experiments"]]
    return filled


def _editor_errors(data, definition: str) -> list[str]:
    """What the schema file itself says, built-ins' `with:` arguments included, which the loader
    leaves to the plugin registry."""
    import jsonschema

    whole = json.loads((ROOT / "schema" / "yamleval.schema.json").read_text(encoding="utf-8"))
    whole.pop("anyOf")
    whole["$ref"] = f"#/$defs/{definition}"
    return [f"{list(e.absolute_path)}: {e.message}" for e in jsonschema.Draft202012Validator(whole).iter_errors(data)]


def _errors(data, source, definition: str) -> list[str]:
    return [str(e) for e in schema.validate(data, source, definition)] or _editor_errors(data, definition)


def check(body: str, mark: str | None, where: str = "block.yaml") -> list[str]:
    """The schema's complaints about one block, as `validate` words them (empty: valid)."""
    data, source = yaml_source.parse(textwrap.dedent(body), where)
    if mark is None:
        whole = isinstance(data, dict) and ("experiments" in data or {"id", "dataset", "runner"} <= data.keys())
        if not whole:
            return ["not a whole config: mark it <!-- yaml: NAME -->, <!-- yaml: NAME part --> or "
                    "<!-- yaml: not-config -->"]
        definition = "project_file" if _is_project(data) else "experiment_file"
        return _errors(data, source, definition)
    definition, _, part = mark.partition(" ")
    if part not in ("", "part"):
        return [f"unknown mark {mark!r}"]
    entries = data if isinstance(data, list) and definition != "breakdowns" else [data]
    errors = []
    for entry in entries:
        if part:
            entry = _fill(definition, entry)
        errors += _errors(entry, source, definition)
    return errors


def test_the_manual_builds_without_a_warning(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    reference = (tmp_path / "site" / "reference" / "index.html").read_text(encoding="utf-8")
    for written in ("pass_criteria", "max_cost_usd", "tool_timeout", "levenshtein"):
        assert written in reference, f"the reference is written from the schema: {written}"


@pytest.mark.parametrize("where, mark, body", _blocks(), ids=[b[0] for b in _blocks()])
def test_every_yaml_block_is_valid(where, mark, body):
    if mark == "not-config":
        return
    assert check(body, mark, where) == []


def test_a_renamed_key_is_caught():
    whole = "experiments:\n  - id: a\n    dataset: {items: []}\n    runner: echo\n    pass_criteria: []\n"
    assert check(whole, None) == []
    [error] = check(whole.replace("pass_criteria", "pass_critera"), None)
    assert "pass_critera" in error and "pass_criteria" in error, "names the key and the right one"
    assert check("- {uses: exact_match, threshold: 0.8}\n", "scorer") == []
    assert check("- {uses: exact_match, treshold: 0.8}\n", "scorer") != []
    assert check("{uses: exact_match, with: {normalise: [case]}}\n", "scorer") != [], "a built-in's argument"
    assert check("repeats: 5\n", None) != [], "a fragment without a mark fails"


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 150
