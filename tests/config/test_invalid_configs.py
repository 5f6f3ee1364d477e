"""Every invalid config under ``tests/data/invalid`` fails cleanly, with the message it should.

Each ``tests/data/invalid/<case>.yaml`` is one case; ``<case>.expected.txt`` next to it is
the exact stderr of ``yamleval validate <case>.yaml``, run from that folder (so paths in
messages are relative to it). The files a case needs (datasets under ``data/``, plugin
modules under ``plugins/``, included files under ``included/``) are named after the case
that uses them; only top-level ``*.yaml`` files are cases, so an included file never
lives at the top.

For every case, ``validate`` and ``run`` must exit 2 without a traceback; ``validate``
must print the golden text exactly, and ``run`` at least its first line (a bad dataset
row is met lazily by ``run``: it stops, reports what finished and exits 2).

After a deliberate change of wording, regenerate the goldens and review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/config/test_invalid_configs.py
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CASES_DIR = Path(__file__).parent.parent / "data" / "invalid"
CASES = sorted(p.name for p in CASES_DIR.glob("*.yaml"))
UPDATE = os.environ.get("YAMLEVAL_UPDATE_GOLDEN") == "1"
# Variables the cases refer to; they must be unset for the cases to fail as expected.
CASE_VARIABLES = ("YAMLEVAL_CASE_", "GREETING")
# These are set but empty, as in a CI job that did not get its secrets.
EMPTY_VARIABLES = ("YAMLEVAL_CASE_EMPTY_URL", "YAMLEVAL_CASE_EMPTY_KEY")
FIRST_LINE = re.compile(r"^(?P<file>[^:\n]+):\d+(:\d+)?: (\$\S*: )?error: ")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CASE_VARIABLES)}
    env["PYTHONPATH"] = str(CASES_DIR.parent.parent.parent)  # this checkout's yamleval; plugins from the case folder only
    env.update(dict.fromkeys(EMPTY_VARIABLES, ""))
    env["NO_COLOR"] = "1"
    return env


def _yamleval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "yamleval", *args], cwd=CASES_DIR, env=_env(),
                          capture_output=True, text=True, timeout=60)


def _golden(case: str) -> Path:
    return CASES_DIR / (case.removesuffix(".yaml") + ".expected.txt")


def test_there_are_enough_cases():
    assert len(CASES) >= 30, CASES


@pytest.mark.parametrize("case", CASES)
def test_validate_prints_the_golden_message(case):
    done = _yamleval("validate", case)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    golden = _golden(case)
    if UPDATE:
        golden.write_text(done.stderr, encoding="utf-8")
    assert golden.exists(), f"no golden for {case}; run with YAMLEVAL_UPDATE_GOLDEN=1 to write it"
    assert done.stderr == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES)
def test_golden_starts_with_file_line_and_path(case):
    golden = _golden(case)
    if not golden.exists():
        pytest.skip("no golden yet")
    first = golden.read_text(encoding="utf-8").splitlines()[0]
    found = FIRST_LINE.match(first)
    assert found, f"not 'file:line:col: $.path: error: ...': {first}"
    named = found.group("file")
    assert named == case or (named not in CASES and (CASES_DIR / named).is_file()), \
        f"{first!r} names neither {case} nor a helper file of it"


@pytest.mark.parametrize("case", CASES)
def test_run_stops_with_exit_2(case, tmp_path):
    done = _yamleval("run", "--report-dir", str(tmp_path / "reports"), "--store", str(tmp_path / "r.db"), case)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    golden = _golden(case)
    if golden.exists():
        assert golden.read_text(encoding="utf-8").splitlines()[0] in done.stderr.splitlines()
