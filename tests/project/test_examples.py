"""Every project under examples/ runs as its README says (`cd examples/NAME && yamleval run`),
offline, in a copy of its folder, and gives the verdict its README describes."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

EXAMPLES = ROOT / "examples"

# Each example's experiments (variants as experiment/variant) and the items it means to fail.
FAILED_ITEMS = {
    "qa-with-judge": {"geography-qa": {"australia"}},
    "agent-tools": {"order-status": set(), "arithmetic": set()},
    "prompts-by-models": {"capitals/small-name-only": {"japan"}, "capitals/small-one-sentence": {"japan"},
                          "capitals/large-name-only": set(), "capitals/large-one-sentence": {"japan"}},
    "rag": {"handbook-rag": {"parking"}},
    "github": {"unit-conversions": {"kg-g"}},
}


def _project(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(EXAMPLES / name, folder, ignore=shutil.ignore_patterns("reports", ".yamleval", "__pycache__"))
    return folder


def _experiments(results: dict) -> dict[str, dict]:
    """Every experiment of a results.json by id, a variant's as experiment/variant."""
    found: dict[str, dict] = {}
    for experiment in results["experiments"]:
        variants = experiment.get("variants")
        for entry in variants or [experiment]:
            found[f"{experiment['id']}/{entry['id']}" if variants else experiment["id"]] = entry
    return found


def _failed(experiment: dict) -> set[str]:
    return {item["id"] for item in experiment["items"] if item["status"] != "passed"}


def test_every_example_is_listed_here():
    assert {p.name for p in EXAMPLES.iterdir() if (p / "evals.yaml").is_file()} == set(FAILED_ITEMS)


@pytest.mark.parametrize("name", sorted(FAILED_ITEMS))
def test_the_example_validates_runs_offline_and_passes(name, tmp_path):
    folder = _project(name, tmp_path)
    checked = run_cli("validate", cwd=folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done = run_cli("run", "-q", "--store", str(tmp_path / "results.db"), "--report-dir", str(tmp_path / "out"),
                   cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["status"] == "completed" and results["passed"] is True
    experiments = _experiments(results)
    assert set(experiments) == set(FAILED_ITEMS[name])
    for experiment_id, failed in FAILED_ITEMS[name].items():
        assert experiments[experiment_id]["passed"] is True, experiment_id
        assert _failed(experiments[experiment_id]) == failed, experiment_id


def test_the_agent_example_checks_the_tools_it_called(tmp_path):
    folder = _project("agent-tools", tmp_path)
    assert run_cli("run", "-q", "-e", "order-status", "--report-dir", "out", cwd=folder).returncode == 0
    [experiment] = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))["experiments"]
    unknown = next(item for item in experiment["items"] if item["id"] == "unknown")
    assert unknown["output"] == "I could not find order A-9999."
    assert "no order A-9999" in json.dumps(unknown["trace"]), "the tool's error went back to the model"


def test_the_github_examples_shards_merge_into_the_whole_runs_verdict(tmp_path):
    folder = _project("github", tmp_path)
    for shard in range(1, 5):
        done = run_cli("run", "-q", "--shard", f"{shard}/4", "--run-id", "ci-1", "--store", f"shard-{shard}.db",
                       "--report-dir", "shard-reports", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
    assert run_cli("merge", "results.db", *(f"shard-{n}.db" for n in range(1, 5)), cwd=folder).returncode == 0
    gate = run_cli("report", "ci-1", "--store", "results.db", "--report-dir", "reports", "--gate", cwd=folder)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    merged = json.loads((folder / "reports" / "results.json").read_text(encoding="utf-8"))
    assert merged["run_id"] == "ci-1" and merged["passed"] is True
    assert _failed(_experiments(merged)["unit-conversions"]) == FAILED_ITEMS["github"]["unit-conversions"]
