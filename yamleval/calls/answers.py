"""Answers kept so that no model call is paid for twice: a SQLite file apart from the results
database, keyed by everything that decides an answer and nothing else.

A key is the SHA-256 of a canonical JSON record (``key``): for a model call the exact request
(the endpoint's URL without credentials, the body: model, messages, parameters, tools); for
any other runner its reference, the hash of its source and its version, its bound ``with:``
and the item; always the repeat's number, so that repeats stay independent. Secrets are
replaced by their ``${VAR}`` names before a record is hashed and before a value is kept.

Any number of processes share one file (WAL; a writer waits for another's lock). An entry older
than ``ttl`` is never read, and ``prune`` deletes it; past ``max_size`` the least recently used
entries go first.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

import tenacity

from yamleval.config.model import CacheSettings
from yamleval.records.errors import UsageError
from yamleval.store.errors import cannot, cause

DEFAULT_PATH, DEFAULT_TTL, DEFAULT_MAX_SIZE = CacheSettings.path, CacheSettings.ttl, CacheSettings.max_size
BUSY_SECONDS = 30.0
FLUSH_SECONDS = 1.0
_TOUCH_AFTER = 3600.0  # seconds: how stale an entry's last use may get before a hit writes it again
_SCHEMA = ("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL,"
           " used REAL NOT NULL, size INTEGER NOT NULL, tokens INTEGER NOT NULL, cost REAL)",
           "CREATE INDEX IF NOT EXISTS entries_used ON entries (used)",
           "CREATE INDEX IF NOT EXISTS entries_created ON entries (created)")  # what expires, found without a scan


# a setting or header that holds a credential: never part of a key, so rotating a key keeps the
# answers (``max_tokens`` is no credential: the whole name must be one, or end in one)
_CREDENTIAL = re.compile(r"(.*[_-])?(api[_-]?key|key|token|access[_-]token|secret|password|passwd|authorization"
                         r"|proxy[_-]authorization|cookie|credentials?)", re.I)
_HIDDEN = "<a credential>"
_AS_SENT = ("body", "item")  # a request body and a dataset item: what they hold shapes the answer, all of it


def without_credentials(value: Any) -> Any:
    """A key's record with every credential (a setting or header named ``api_key``, ``token``,
    ``Authorization``, ``X-Api-Key``…) replaced by one placeholder; the request body and the item
    as they are."""
    if isinstance(value, Mapping):
        return {k: v if k in _AS_SENT else _HIDDEN if isinstance(k, str) and _CREDENTIAL.fullmatch(k)
                else without_credentials(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_credentials(v) for v in value]
    return value


def key(record: Mapping[str, Any]) -> str:
    """The key of an answer: a hash of ``record`` (JSON, keys sorted): every value that shapes the
    answer, ``${VAR}`` values too (a URL, a model, a prompt), none of its credentials. The hash keeps
    them out of the cache file."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Stats:
    path: str
    entries: int
    bytes: int
    tokens: int  # that the kept answers took: what each hit on one saves again
    oldest: float | None  # when the oldest entry was made (seconds since the epoch)
    newest: float | None


class DamagedEntry(ValueError):
    """An entry that is not the JSON object yamleval wrote (a file changed by hand, a disk error)."""


class Cache:
    """One cache file. Thread-safe: the connection is used by one thread at a time."""

    def __init__(self, path: str = DEFAULT_PATH, ttl: float = DEFAULT_TTL, max_size: int = DEFAULT_MAX_SIZE):
        self.path, self.ttl, self.max_size = path, ttl, max_size
        self._lock = threading.Lock()
        self._pending: list[tuple] = []
        self._flushed = time.time()
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._db = sqlite3.connect(path, timeout=BUSY_SECONDS, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._write(lambda: [self._db.execute(statement) for statement in _SCHEMA])
            # empty when opened: nothing to read this run (the first run of a CI job, say), so no
            # lookup is made; answers another process keeps meanwhile are missed, never wrong
            self._empty = self._db.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is None
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(cannot("open", path, exc, "or run with --no-cache", what="the answer cache")) from None

    def _write(self, work) -> None:
        """``work`` in one write transaction, tried again while another process holds the lock."""
        for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(6), reraise=True,
                                         wait=tenacity.wait_random_exponential(multiplier=0.2, max=2.0),
                                         retry=tenacity.retry_if_exception(lambda e: cause(e) == "locked")):
            with attempt, self._lock, self._db:
                self._db.execute("BEGIN IMMEDIATE")
                work()

    def get(self, entry: str) -> dict[str, Any] | None:
        """The value kept under ``entry``, or None (never kept, or older than the ttl); DamagedEntry
        when what is kept there is not a JSON object."""
        if self._empty:
            return None
        now = time.time()
        with self._lock:
            row = self._db.execute("SELECT value, created, used FROM entries WHERE key = ?", (entry,)).fetchone()
        if row is None or now - row[1] > self.ttl:
            return None
        if now - row[2] > _TOUCH_AFTER:  # kept recent for pruning, without a write on every hit
            self._write(lambda: self._db.execute("UPDATE entries SET used = ? WHERE key = ?", (now, entry)))
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, dict):
            raise DamagedEntry(entry)
        return value

    def put(self, entry: str, value: Any, tokens: int = 0, cost: float | None = None) -> None:
        """Keep ``value`` (JSON, secrets already replaced) under ``entry``; ``tokens`` and ``cost``:
        what the answer took, so that a hit can say what it saved. Written with others, at most
        ``FLUSH_SECONDS`` later (and by ``close``): one transaction for many answers."""
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        now = time.time()
        with self._lock:
            self._pending.append((entry, text, now, now, len(text) + len(entry), tokens, cost))
            due = now - self._flushed >= FLUSH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the answers kept since the last flush."""
        with self._lock:
            rows, self._pending, self._flushed = self._pending, [], time.time()
        if rows:
            self._write(lambda: self._db.executemany(
                "INSERT OR REPLACE INTO entries (key, value, created, used, size, tokens, cost)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)", rows))

    def stats(self) -> Stats:
        self.flush()
        with self._lock:
            row = self._db.execute("SELECT count(*), coalesce(sum(size), 0), coalesce(sum(tokens), 0), min(created),"
                                   " max(created) FROM entries").fetchone()
        return Stats(self.path, *row)

    def prune(self) -> int:
        """Delete the entries older than the ttl, then the least recently used past ``max_size``;
        how many went."""
        self.flush()
        before = self.stats().entries

        def work() -> None:
            self._db.execute("DELETE FROM entries WHERE created < ?", (time.time() - self.ttl,))
            total = self._db.execute("SELECT coalesce(sum(size), 0) FROM entries").fetchone()[0]
            if total > self.max_size:
                kept, cutoff = 0, None
                for used, size in self._db.execute("SELECT used, size FROM entries ORDER BY used DESC"):
                    kept += size
                    if kept > self.max_size:
                        cutoff = used
                        break
                if cutoff is not None:
                    self._db.execute("DELETE FROM entries WHERE used <= ?", (cutoff,))

        self._write(work)
        return before - self.stats().entries

    def clear(self) -> int:
        before = self.stats().entries
        self._write(lambda: self._db.execute("DELETE FROM entries"))
        with self._lock:
            self._db.execute("VACUUM")
        return before

    def integrity(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._lock:
                self._db.close()


# -- what one call may use -----------------------------------------------------------------

class Use:
    """The cache as one run of one item may use it, and what it did. The engine hands it down to
    the model clients the item's runner and scorers call (``Models.calling``), with the role of
    the calls: "runner" while the runner runs, "judge" while the scorers score."""

    def __init__(self, open_cache, settings: CacheSettings, repeat: int, secrets, requests: bool):
        """``open_cache()``: the Cache, opened when first needed; ``requests``: the runner's model
        calls are cached one by one (a model runner), not its whole call."""
        self.open_cache, self.settings, self.repeat, self.secrets = open_cache, settings, repeat, secrets
        self.requests = requests
        self.hits = self.misses = self.saved_tokens = self.damaged = self.not_cached = 0
        self.saved_cost = 0.0
        self._counting = threading.Lock()  # a runner may make its calls from threads of its own

    def caches_request(self, body: Mapping[str, Any], role: str) -> bool:
        """Whether a model call with this request body, made as ``role``, is answered from the
        cache: a model runner's with ``runner: true``; a judge's with ``judges: true`` at temperature 0."""
        if role == "runner":
            return self.settings.runner and self.requests
        if self.settings.judges and body.get("temperature") != 0:  # asked every time: counted, to say so
            with self._counting:
                self.not_cached += 1
            return False
        return self.settings.judges

    def key(self, record: Mapping[str, Any]) -> str:
        return key({**without_credentials(dict(record)), "repeat": self.repeat})

    def embeddings_key(self, record: Mapping[str, Any], role: str) -> str | None:
        """The key of an embedding asked for as ``role``, or None when it is not cached: a vector
        is the same at any temperature and in every repeat, so it is kept whenever a judge's calls may be."""
        if role != "judge" or not self.settings.judges:
            return None
        return key(without_credentials(dict(record)))

    def get(self, entry: str, needs: str | None = None) -> dict[str, Any] | None:
        """The kept value, counted as a hit (None: a miss, counted when the answer is kept). An
        entry that is damaged (not a JSON object, or without the ``needs`` key the caller reads)
        is counted as such and answers nothing: the call is made, and its answer replaces it."""
        if self.settings.refresh:
            return None
        try:
            found = self.open_cache().get(entry)
            if found is not None and needs is not None and needs not in found:
                raise DamagedEntry(entry)
        except DamagedEntry:
            with self._counting:
                self.damaged += 1
            return None
        except (sqlite3.Error, UsageError):
            return None  # a cache that cannot be read answers nothing: the call is made
        if found is not None:
            with self._counting:
                self.hits += 1
                tokens, cost = found.get("tokens"), found.get("cost")  # what a damaged entry holds counts nothing
                self.saved_tokens += tokens if isinstance(tokens, int) else 0
                self.saved_cost += cost if isinstance(cost, (int, float)) else 0.0
            from yamleval.records.redaction import restored

            found = restored(found, self.secrets)  # kept redacted: replayed as it was given
        return found

    def put(self, entry: str, value: Mapping[str, Any], tokens: int, cost: float | None) -> None:
        from yamleval.records.redaction import kept_redacted

        with self._counting:
            self.misses += 1
        try:
            self.open_cache().put(entry, kept_redacted({**value, "tokens": tokens, "cost": cost}, self.secrets), tokens,
                                  cost)
        except (sqlite3.Error, UsageError):
            pass  # the answer is used all the same; the next run asks again

    def used(self):
        """What it did, for the item's result (None: nothing asked of it)."""
        from yamleval.records.types import CacheUse

        if not (self.hits or self.misses or self.damaged or self.not_cached):
            return None
        return CacheUse(self.hits, self.misses, self.saved_tokens, self.saved_cost, self.damaged, self.not_cached)
