"""Plugins as users write them: what their signature asks for, the hooks they implement, and
where their own modules are imported from."""
from __future__ import annotations

import sys
import textwrap

from conftest import run_cli

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
