"""Shared fixtures: a config writer and the path to the fixture plugins."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from servers.postgres import postgres_server, store_at  # noqa: F401  (fixtures: one server for the whole session)
from servers.ray_cluster import ray_cluster  # noqa: F401  (a fixture: one local Ray cluster for the whole session)

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent

if str(DATA) not in sys.path:
    sys.path.insert(0, str(DATA))


@pytest.fixture
def write_config(tmp_path):
    """Write a YAML config (dedented) into tmp_path and return its path."""
    def write(text: str, name: str = "evals.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path
    return write


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("YAMLEVAL_TEST")}
    env["PYTHONPATH"] = os.pathsep.join([str(DATA), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


def run_cli(*args: str, cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """``python -m yamleval ARGS`` as a user would run it."""
    return subprocess.run([sys.executable, "-m", "yamleval", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=cli_env(**env))


def bash_step(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """A workflow's ``run:`` script as GitHub Actions runs it, with yamleval's interpreter first on PATH."""
    environment = cli_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env)
    environment.pop("GITHUB_ACTIONS", None)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=180)


def assert_golden(path: Path, text: str) -> None:
    """``text`` is what the golden file ``path`` holds (``YAMLEVAL_UPDATE_GOLDEN=1`` writes it instead)."""
    if os.environ.get("YAMLEVAL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
