"""The GitHub Actions recipe: the manual's workflow (docs/ci.md) and the composite action, run as Actions
runs their scripts (bash, inputs in the environment, outputs in $GITHUB_OUTPUT)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml

from conftest import ROOT, bash_step, run_cli


def _workflow() -> dict:
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = page[page.index("## GitHub Actions"):]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def _steps() -> list[dict]:
    return _workflow()["jobs"]["evals"]["steps"]


def _demo(folder: Path) -> None:
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / name)


def test_the_workflow_sets_every_variable_the_config_reads_and_keeps_every_result():
    steps = _steps()
    [action] = [s for s in steps if "yamleval@" in s.get("uses", "")]
    wanted = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", (ROOT / "evals.yaml").read_text(encoding="utf-8")))
    assert wanted and wanted <= set(action["env"]), "every ${VAR} of the config, the commented real model's too"
    assert not action["uses"].endswith(("@main", "@master")) and "==" in action["with"]["version"], "pinned"
    [upload] = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert set(upload["with"]["path"].split()) == {"reports/report.html", "reports/junit.xml",
                                                   "reports/results.json", ".yamleval/results.db"}
    caches = {s["uses"].split("@")[0]: s for s in steps if s.get("uses", "").startswith("actions/cache")}
    assert caches["actions/cache/restore"]["with"]["path"] == caches["actions/cache/save"]["with"]["path"] \
        == ".yamleval/results.db"
    assert "--fail-on-regression" in next(s["run"] for s in steps if s.get("name", "").startswith("Compare"))
    action_steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    assert any(s.get("uses", "").startswith("actions/cache") and "pip" in s["with"]["path"] for s in action_steps)


def test_a_pull_request_is_compared_with_mains_last_run(tmp_path):
    _demo(tmp_path)
    script = next(s["run"] for s in _steps() if s.get("name", "").startswith("Compare"))
    summary = tmp_path / "summary.md"
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0  # a pull request before main has a run
    first = bash_step(script, tmp_path, GITHUB_STEP_SUMMARY=str(summary))
    assert first.returncode == 0 and not summary.exists(), "nothing to compare with"
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0  # main's run, then this pull request's
    done = bash_step(script, tmp_path, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0, done.stdout + done.stderr
    main, pull_request = run_cli("runs", "--ids", cwd=tmp_path).stdout.split()[1::-1]
    assert main in summary.read_text(encoding="utf-8") and pull_request in summary.read_text(encoding="utf-8")


def test_the_actions_report_folder_is_the_configs_unless_given(tmp_path):
    _demo(tmp_path)
    config = tmp_path / "evals.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("reports: {dir: reports}", "reports: {dir: out}"))
    script = next(s["run"] for s in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
                  if s.get("id") == "run")
    for given, folder in (("", "out"), ("elsewhere", "elsewhere")):
        output = tmp_path / f"output-{folder}"
        done = bash_step(script, tmp_path, YAMLEVAL_CONFIG="evals.yaml", YAMLEVAL_ARGS="", YAMLEVAL_REPORT_DIR=given,
                     GITHUB_OUTPUT=str(output))
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"report-dir={folder}\n" in output.read_text() and (tmp_path / folder / "junit.xml").is_file()
    assert not (tmp_path / "reports").exists()


def test_runs_lists_only_ids_for_scripts(tmp_path):
    _demo(tmp_path)
    assert run_cli("runs", "--ids", cwd=tmp_path).stdout == ""
    for _ in range(2):
        run_cli("run", "-q", cwd=tmp_path)
    table = run_cli("runs", cwd=tmp_path).stdout.splitlines()[1:]
    assert run_cli("runs", "--ids", cwd=tmp_path).stdout.split() == [line.split()[0] for line in table]
