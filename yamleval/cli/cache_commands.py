"""``yamleval cache stats|prune|clear``: the answer cache (``yamleval.cache.answers``) looked at and emptied."""
from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone

import click

from yamleval.cli import cli
from yamleval.cli.common import DEFAULT_CONFIG, config_path


def cache_path(given: str | None, config: str = DEFAULT_CONFIG) -> str:
    """``--path``, else the ``cache: {path}`` of ./evals.yaml's ``defaults``, else .yamleval/cache.db."""
    from yamleval.cache.answers import DEFAULT_PATH

    return given or config_path(config, "defaults", "cache", "path") or DEFAULT_PATH


PATH_OPTION = click.option("--path", type=click.Path(dir_okay=False),
                           help="The cache file [the config's `defaults.cache.path`, else .yamleval/cache.db].")


@contextlib.contextmanager
def _opened(path: str, *limits: float):
    """The cache file at ``path`` (which must exist), closed after use; ``limits``: its ttl and max size."""
    from yamleval.cache.answers import Cache
    from yamleval.records.errors import UsageError

    if not os.path.exists(path):
        raise UsageError(f"no cache at {path} yet: a run keeps answers there once a cached call is made")
    kept = Cache(path, *limits)
    try:
        yield kept
    finally:
        kept.close()


@cli.group()
def cache():
    """The answer cache: what it keeps, pruning and emptying it."""


@cache.command()
@PATH_OPTION
def stats(path):
    """How many answers the cache keeps, their size, and the tokens they took."""
    path = cache_path(path)
    with _opened(path) as kept:
        found = kept.stats()
    click.echo(f"cache {path}: {found.entries:,} answers, {found.bytes / 1e6:.1f} MB, "
               f"{found.tokens:,} tokens kept; oldest {_when(found.oldest)}, newest {_when(found.newest)}")


def _when(stamp: float | None) -> str:
    return "–" if stamp is None else datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@cache.command()
@PATH_OPTION
@click.option("--ttl", help="Delete answers older than this (`7d`, `12h`) [7d].")
@click.option("--max-size", help="Then delete the least recently used past this size (`2GB`, `500MB`) [2GB].")
def prune(path, ttl, max_size):
    """Delete expired answers, then the least recently used past the size limit."""
    from yamleval.cache.answers import DEFAULT_MAX_SIZE, DEFAULT_TTL
    from yamleval.engine.budget import seconds
    from yamleval.config.model import size_bytes
    from yamleval.records.errors import UsageError

    try:
        limits = (seconds(ttl) if ttl else DEFAULT_TTL, size_bytes(max_size) if max_size else DEFAULT_MAX_SIZE)
        if not limits[0]:
            raise ValueError(ttl)
    except (AttributeError, KeyError, ValueError):
        raise UsageError("give --ttl as a number and s, m, h, d or w (`7d`, `12h`), and --max-size as a number and B, KB,"
                         " MB, GB or TB (`2GB`)") from None
    with _opened(cache_path(path), *limits) as kept:
        gone = kept.prune()
        left = kept.stats()
    click.echo(f"pruned {gone:,} answers; {left.entries:,} kept ({left.bytes / 1e6:.1f} MB)")


@cache.command()
@PATH_OPTION
def clear(path):
    """Delete every kept answer."""
    path = cache_path(path)
    with _opened(path) as kept:
        gone = kept.clear()
    click.echo(f"cleared {gone:,} answers from {path}")
