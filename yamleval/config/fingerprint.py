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
                salt: bytes | None = None, repeats: int | None = None, shards: int | None = None) -> dict[str, Any]:
    """The record a run stores: ``{salt, variables: {NAME: digest}, plugins: {ref: sha256}}``,
    ``repeats`` when the run was told how many times to run each item (``--repeats``), and
    and ``shards`` when it is split into that many (``--shard I/N``)."""
    salt = os.urandom(16) if salt is None else salt
    found = {"salt": salt.hex(),
             "variables": {name: _digest(salt, name, value) for name, value in sorted(environment.items())},
             "plugins": plugin_sources(experiments)}
    told = {"repeats": repeats, "shards": shards}
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


def plugin_sources(experiments: Iterable[Experiment]) -> dict[str, str]:
    """A hash of the source file of each plugin named ``module:attr`` (the project's own and
    installed ones: built-ins and entry points are covered by the recorded versions)."""
    hashes = {}
    for ref in (r for r in plugin_refs(experiments) if ":" in r):
        module = sys.modules.get(ref.partition(":")[0])
        path = getattr(module, "__file__", None)
        if path:
            try:
                with open(path, "rb") as handle:
                    hashes[ref] = hashlib.sha256(handle.read()).hexdigest()
            except OSError:
                continue
    return hashes
