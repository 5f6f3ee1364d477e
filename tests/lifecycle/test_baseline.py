"""The no_regression criterion: a stored run's experiment against the same experiment of its
baseline (a tag or a run id), paired item by item; skipped, with the reason, without one."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

import pytest

from conftest import run_cli

CONFIG = """
    store: r.db
    reports: {dir: out, formats: [json, junit, markdown, html]}
    experiments:
      - id: e
        dataset: {items: ITEMS}
        runner: echo
        scorers: [exact_match]
        pass_criteria: [CRITERION]
"""
GATE = "{type: no_regression, baseline: main}"


def _config(write_config, wrong: int = 0, criterion: str = GATE, experiment: str = "e"):
    """Ten items that echo their input; the first ``wrong`` of them expect something else."""
    items = ", ".join(f"{{id: i{n}, input: x{n}, expected: {'nope' if n < wrong else f'x{n}'}}}" for n in range(10))
    write_config(CONFIG.replace("ITEMS", f"[{items}]").replace("CRITERION", criterion)
                 .replace("id: e", f"id: {experiment}"))


def _criterion(tmp_path) -> dict:
    return json.loads((tmp_path / "out" / "results.json").read_text())["experiments"][0]["summary"]["criteria"][0]


def _junit_case(tmp_path) -> ElementTree.Element:
    root = ElementTree.parse(tmp_path / "out" / "junit.xml").getroot()
    return next(case for case in root.iter("testcase") if case.get("name").startswith("criterion: no_regression"))


def test_without_a_tagged_run_the_criterion_is_skipped_and_says_why(write_config, tmp_path):
    _config(write_config)
    done = run_cli("run", "--tag", "main", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "– no_regression vs main: skipped: no baseline yet: no completed run tagged 'main' has experiment 'e'" \
        in done.stdout
    criterion = _criterion(tmp_path)
    assert criterion["skipped"] and criterion["passed"] and criterion["baseline"] == "main"
    assert criterion["detail"].startswith("skipped: no baseline yet")
    assert _junit_case(tmp_path).find("skipped").get("message").startswith("no_regression vs main: skipped")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "⏭️ skipped | no\\_regression vs main | skipped: no baseline yet" in summary
    assert ">skipped</span>" in (tmp_path / "out" / "report.html").read_text()


def test_a_significant_regression_from_the_newest_tagged_run_fails_the_experiment(write_config, tmp_path):
    _config(write_config, wrong=6)
    # an older main, worse still (its criterion skipped, met: the only criterion decides)
    assert run_cli("run", "--tag", "main", cwd=tmp_path).returncode == 0
    _config(write_config)
    assert run_cli("run", "--tag", "main", cwd=tmp_path).returncode == 0
    base = json.loads((tmp_path / "out" / "results.json").read_text())["run_id"]
    _config(write_config, wrong=6)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 1
    criterion = _criterion(tmp_path)
    assert not criterion["passed"] and not criterion["skipped"]
    assert criterion["detail"].startswith(f"baseline {base}: regressed: 10 pairs, 6 pass → fail, 0 fail → pass")
    assert criterion["actual"] == pytest.approx(2 * 0.5 ** 6)  # the exact McNemar p
    assert _junit_case(tmp_path).find("failure") is not None
    assert "| ❌ | no\\_regression vs main | baseline" in (tmp_path / "out" / "summary.md").read_text()
    assert "regressed: 10 pairs" in (tmp_path / "out" / "report.html").read_text()


def test_a_change_within_chance_or_the_margin_passes(write_config, tmp_path):
    _config(write_config)
    assert run_cli("run", "--tag", "main", cwd=tmp_path).returncode == 0
    _config(write_config, wrong=2)  # two flips: McNemar p 0.5
    done = run_cli("run", cwd=tmp_path)
    assert "✓ no_regression vs main: baseline" in done.stdout and "no significant change" in done.stdout
    _config(write_config, wrong=6, criterion="{type: no_regression, baseline: main, margin: 0.7}")
    assert run_cli("run", cwd=tmp_path).returncode == 0  # 6 of 10 worse: below a margin of 0.7
    _config(write_config, wrong=6, criterion="{type: no_regression, baseline: main, alpha: 0.01}")
    assert run_cli("run", cwd=tmp_path).returncode == 0  # p 0.03 is not below 0.01


def test_a_baseline_by_run_id_and_one_that_lacks_the_experiment(write_config, tmp_path):
    _config(write_config, experiment="other")
    assert run_cli("run", cwd=tmp_path).returncode == 0
    other = json.loads((tmp_path / "out" / "results.json").read_text())["run_id"]
    _config(write_config, criterion=f"{{type: no_regression, baseline: '{other}'}}")
    assert run_cli("run", cwd=tmp_path).returncode == 0
    assert _criterion(tmp_path)["detail"] == f"skipped: no baseline yet: run {other} has no completed experiment 'e'"
    base = json.loads((tmp_path / "out" / "results.json").read_text())["run_id"]
    _config(write_config, wrong=6, criterion=f"{{type: no_regression, baseline: '{base}'}}")
    assert run_cli("run", cwd=tmp_path).returncode == 1
    assert _criterion(tmp_path)["detail"].startswith(f"baseline {base}: regressed")


def test_a_tag_no_run_has_never_becomes_a_prefix_of_a_run_id(write_config, tmp_path):
    """A run named ``main-1`` is not the baseline ``main``: the criterion is skipped, and says why."""
    _config(write_config)
    assert run_cli("run", "--run-id", "main-1", cwd=tmp_path).returncode == 0
    _config(write_config, wrong=10)
    assert run_cli("run", cwd=tmp_path).returncode == 0  # every item wrong, but no baseline to regress from
    assert _criterion(tmp_path)["detail"] == (
        "skipped: no baseline yet: no completed run tagged 'main' has experiment 'e', and 'main' is not a run id"
        " (run main-1 starts with it: a baseline is a tag or a whole run id)")
    assert _criterion(tmp_path)["passed"] is True  # skipped, not judged against main-1


def test_a_scorer_missing_from_the_baseline_skips_its_criterion(write_config, tmp_path):
    _config(write_config)
    assert run_cli("run", "--tag", "main", cwd=tmp_path).returncode == 0
    write_config((tmp_path / "evals.yaml").read_text().replace("[exact_match]", "[exact_match, levenshtein]")
                 .replace(GATE, "{type: no_regression, baseline: main, scorer: levenshtein}"))
    assert run_cli("run", cwd=tmp_path).returncode == 0
    assert _criterion(tmp_path)["detail"].startswith("skipped: scorer 'levenshtein' is not in the baseline run")


def test_in_memory_the_criterion_is_skipped(write_config, tmp_path):
    from yamleval import api

    _config(write_config, wrong=6)
    result = api.run_experiment(api.load_experiments(tmp_path / "evals.yaml")[0])
    (criterion,) = result.summary.criteria
    assert criterion.skipped and criterion.passed and "stored run" in criterion.detail
