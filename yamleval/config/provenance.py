"""What a run records about where it came from: config text and hashes, versions, git, host."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any, Iterable, Mapping

from yamleval.config.model import Experiment


SETS = "--set"  # the stored "file" holding a run's --set values, one a line


def config_texts(files: Iterable[str], sets: Iterable[str] = ()) -> dict[str, str]:
    """Each config file's text exactly as written (``${VAR}`` unexpanded: no secret values), and
    the ``--set`` values the run was given, so that a resume or a comparison sees them."""
    texts = {}
    for name in files:
        with open(name, encoding="utf-8-sig") as handle:
            texts[name] = handle.read()
    sets = list(sets)
    if sets:
        texts[SETS] = "".join(f"{given}\n" for given in sets)
    return texts


def config_hash(texts: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for name in sorted(texts):
        digest.update(name.encode() + b"\0" + texts[name].encode() + b"\0")
    return digest.hexdigest()


UNDECIDING = ("budget", "cache")  # keys that decide no answer: what a run may spend, what it keeps


def same_but_budgets(before: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether two sets of config texts say the same but for their ``budget:`` and ``cache:``
    keys (of the project, its ``defaults`` and its experiments): neither decides an answer, so a
    run resumed with a larger budget, or another cache, goes on."""
    if before.keys() != after.keys():
        return False
    return all(_without_budgets(before[name]) == _without_budgets(after[name]) for name in before)


def _without_budgets(text: str) -> Any:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if not isinstance(data, dict):
        return data
    for part in [data, data.get("defaults"), *(data.get("experiments") or [])]:
        if isinstance(part, dict):
            for key in UNDECIDING:
                part.pop(key, None)
    return data


def dataset_hash(experiment: Experiment) -> str:
    """A hash of the dataset's content: the file's bytes, the inline items, or the plugin call."""
    spec = experiment.dataset
    digest = hashlib.sha256()
    if spec.file is not None:
        path = os.path.join(spec.base_dir, spec.file)
        try:
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            digest.update(b"missing:" + spec.file.encode())
    else:
        source = {"items": spec.items, "name": spec.name, "url": spec.url, "items_path": spec.items_path,
                  "uses": spec.plugin.uses if spec.plugin else None,
                  "with": dict(spec.plugin.with_) if spec.plugin else None}
        digest.update(json.dumps(source, sort_keys=True, default=str).encode())
    digest.update(json.dumps({"fields": dict(spec.fields), "limit": spec.limit}, sort_keys=True).encode())
    return digest.hexdigest()


class GitState:
    """The commit and whether the work tree has changes, when a folder is in a git work tree.
    git is asked at once, in the background; ``result`` waits for its answers (a large work
    tree takes git a while to check, and the run has other things to prepare meanwhile)."""

    def __init__(self, folder: str):
        def ask(*args: str) -> subprocess.Popen | None:
            try:
                return subprocess.Popen(["git", *args], cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
            except OSError:  # no git
                return None

        self._head = ask("rev-parse", "HEAD")
        self._status = ask("status", "--porcelain", "--untracked-files=no") if self._head is not None else None

    def result(self) -> tuple[str | None, bool | None]:
        head, status = _answer(self._head, 5), _answer(self._status, 10)
        if head is None:
            return None, None
        return head.strip() or None, None if status is None else bool(status.strip())


def _answer(process: subprocess.Popen | None, timeout: float) -> str | None:
    """What git printed, or None when it failed or took too long."""
    if process is None:
        return None
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None
    return out if process.returncode == 0 else None


def plugin_refs(experiments: Iterable[Experiment]) -> list[str]:
    """The ``uses:`` of every runner, scorer and dataset plugin, sorted."""
    refs = set()
    for experiment in experiments:
        refs.add(experiment.runner.uses)
        refs.update(s.plugin.uses for s in experiment.scorers)
        if experiment.dataset.plugin is not None:
            refs.add(experiment.dataset.plugin.uses)
    return sorted(refs)


def host() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it (without importing socket)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def python_version() -> str:
    version = ".".join(map(str, sys.version_info[:3]))
    return f"{'CPython' if sys.implementation.name == 'cpython' else sys.implementation.name} {version}"
