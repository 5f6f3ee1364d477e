"""What decides a run's answers beyond its config text, as a resume checks it: the values the
config read from the environment, and the source of the project's own plugins.

The values are never stored: only a salted, slow digest of each (PBKDF2, a salt per run), so
that neither a value nor a weak key can be read back from the database cheaply, while the
same value still gives the same digest when the run is resumed.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import sys
from typing import Any, Iterable, Mapping

from yamleval.config.model import Experiment
from yamleval.config.provenance import plugin_refs

ROUNDS = 20_000  # about 10 ms a value here: nothing for a run, costly for guessing many keys


def fingerprint(environment: Mapping[str, str], experiments: Iterable[Experiment],
                salt: bytes | None = None, repeats: int | None = None, shards: int | None = None,
                datasets: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The record a run stores: ``{salt, variables: {NAME: digest}, plugins: {ref: sha256}}``,
    ``repeats`` when the run was told how many times to run each item (``--repeats``), ``shards``
    when it is split into that many (``--shard I/N``), and then the hash of each experiment's
    ``datasets``, which every shard that joins must have."""
    salt = os.urandom(16) if salt is None else salt
    found = {"salt": salt.hex(),
             "variables": {name: _digest(salt, name, value) for name, value in sorted(environment.items())},
             "plugins": plugin_sources(experiments)}
    told = {"repeats": repeats, "shards": shards, "datasets": dict(datasets) if shards and datasets else None}
    return {**found, **{key: value for key, value in told.items() if value is not None}}


def repeats(stored: Mapping[str, Any] | None) -> int | None:
    """The ``--repeats`` a run was started with, if any."""
    return (stored or {}).get("repeats")


def shards(stored: Mapping[str, Any] | None) -> int | None:
    """How many shards a run is split into, if it is."""
    return (stored or {}).get("shards")


def changes(stored: Mapping[str, Any] | None, environment: Mapping[str, str],
            experiments: Iterable[Experiment], repeats: int | None = None) -> list[str]:
    """What differs now from the ``stored`` fingerprint, in words (empty when nothing does,
    or when the run was stored before fingerprints were kept)."""
    if not stored:
        return []
    now = fingerprint(environment, experiments, bytes.fromhex(stored["salt"]))
    problems = []
    if stored.get("repeats") != repeats:
        problems.append(f"it ran with {_repeats(stored.get('repeats'))}, now with {_repeats(repeats)}")
    before, after = stored.get("variables", {}), now["variables"]
    for name in sorted(before.keys() | after.keys()):
        if name not in after:
            problems.append(f"${{{name}}} is no longer set")
        elif name not in before:
            problems.append(f"${{{name}}} is now read")
        elif not hmac.compare_digest(before[name], after[name]):
            problems.append(f"the value of ${{{name}}} changed")
    before, after = stored.get("plugins", {}), now["plugins"]
    problems += [f"the source of {ref} changed" for ref in sorted(before.keys() & after.keys())
                 if before[ref] != after[ref]]
    return problems


def _repeats(count: int | None) -> str:
    return "the repeats of its config" if count is None else f"--repeats {count}"


def _digest(salt: bytes, name: str, value: str) -> str:
    return hashlib.pbkdf2_hmac("sha256", value.encode("utf-8", "surrogatepass"), salt + name.encode(),
                               ROUNDS).hex()


MAX_HASHED_BYTES = 32 * 1024 * 1024  # a file larger than this counts by its size and time, not its bytes
MAX_VISITED = 5000  # files looked at in a plugin's package
MAX_SOURCES = 500  # files of one plugin's package or folder that are hashed; more are left out


def plugin_sources(experiments: Iterable[Experiment]) -> dict[str, str]:
    """A hash of the source of each plugin named ``module:attr`` (the project's own and installed
    ones: built-ins and entry points are covered by the recorded versions): every ``.py`` file of
    its top package, or of the folder of a module that is no package, so that a change to a module
    it imports from there counts too. Files are named relative to that folder, so the same code
    checked out elsewhere (another CI job's folder) hashes the same."""
    hashes = {}
    for ref in (r for r in plugin_refs(experiments) if ":" in r):
        name = ref.partition(":")[0]
        top, own = sys.modules.get(name.split(".")[0]), sys.modules.get(name)
        path = getattr(top, "__file__", None) or getattr(own, "__file__", None)  # a namespace package has none
        if path:
            package = top is not None and getattr(top, "__file__", None) == path and path.endswith("__init__.py")
            folder, files = _sources(path, package)
            hashes[ref] = files_digest(files, folder)
    return hashes


def _sources(path: str, package: bool) -> tuple[str, list[str]]:
    """The folder whose ``.py`` files are a plugin's source, and those files (``MAX_SOURCES`` at
    most, and no more than ``MAX_VISITED`` files looked at: a data tree beside the code is not read)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not package and os.path.basename(folder) in ("site-packages", "dist-packages"):
        return folder, [os.path.abspath(path)]  # an installed module on its own: not its neighbours
    try:
        if not package:
            return folder, sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".py"))[:MAX_SOURCES]
        found, visited = [], 0
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            visited += len(files)
            found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
            if len(found) >= MAX_SOURCES or visited >= MAX_VISITED:
                break
        return folder, found[:MAX_SOURCES]
    except OSError:  # a module from a zip file, a folder that cannot be listed: its own file stands for it
        return folder, [os.path.abspath(path)]


SCRIPTS = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".r", ".jl")


def named_files(settings: Any, base_dir: str) -> list[str]:
    """The programs the words of ``settings`` (a runner's ``with:``) name: a path (relative to
    ``base_dir``) to a script (``SCRIPTS``) or an executable file, or a program found on PATH, as
    in ``argv: [python, score.py]`` or ``shell: "./run.sh --fast"``; each once, in order. A file
    that is neither (a log the runner writes, a data file) is not one."""
    import shlex
    import shutil

    found: dict[str, None] = {}

    def words(value: Any) -> Iterable[str]:
        if isinstance(value, str) and len(value) < 4096:
            try:
                yield from shlex.split(value)
            except ValueError:
                yield from value.split()
        elif isinstance(value, Mapping):
            for inner in value.values():
                yield from words(inner)
        elif isinstance(value, (list, tuple)):
            for inner in value:
                yield from words(inner)

    for word in words(settings):
        if not word or len(word) > 1024 or "\0" in word:
            continue
        path = os.path.join(base_dir, word) if not os.path.isabs(word) else word
        if os.path.isfile(path) and (path.lower().endswith(SCRIPTS) or os.access(path, os.X_OK)):
            found[os.path.abspath(path)] = None
        elif os.sep not in word and (program := shutil.which(word)):
            found[os.path.abspath(program)] = None
    return list(found)


def files_digest(paths: Iterable[str], root: str | None = None) -> str:
    """One hash of the files at ``paths``, their names (relative to ``root``; without one, the file's
    own name: a program found on PATH in another virtual environment is the same program) and
    contents (a file that cannot be read counts by its name alone)."""
    digest = hashlib.sha256()
    for path in paths:
        name = os.path.relpath(path, root) if root else os.path.basename(path)
        digest.update(name.encode("utf-8", "surrogatepass") + b"\0")
        try:
            if os.path.getsize(path) > MAX_HASHED_BYTES:  # a large program: its size and time stand for it
                stat = os.stat(path)
                digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
                continue
            with open(path, "rb") as handle:
                digest.update(hashlib.sha256(handle.read()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()
