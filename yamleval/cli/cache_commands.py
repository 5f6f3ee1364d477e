"""``yamleval cache stats|prune|clear``: the answer cache looked at and emptied (``api.cache_stats``...)."""
from __future__ import annotations

from datetime import datetime, timezone

import click

from yamleval import api
from yamleval.cli import cli

PATH_OPTION = click.option("--path", type=click.Path(dir_okay=False),
                           help="The cache file [the config's `defaults.cache.path`, else .yamleval/cache.db].")


@cli.group()
def cache():
    """The answer cache: what it keeps, pruning and emptying it."""


@cache.command()
@PATH_OPTION
def stats(path):
    """How many answers the cache keeps, their size, and the tokens they took."""
    found = api.cache_stats(path)
    click.echo(f"cache {found.path}: {found.entries:,} answers, {found.bytes / 1e6:.1f} MB, "
               f"{found.tokens:,} tokens kept; oldest {_when(found.oldest)}, newest {_when(found.newest)}")


def _when(stamp: float | None) -> str:
    return "–" if stamp is None else datetime.fromtimestamp(stamp, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


@cache.command()
@PATH_OPTION
@click.option("--ttl", help="Delete answers older than this (`7d`, `12h`) [7d].")
@click.option("--max-size", help="Then delete the least recently used past this size (`2GB`, `500MB`) [2GB].")
def prune(path, ttl, max_size):
    """Delete expired answers, then the least recently used past the size limit."""
    done = api.prune_cache(path, ttl=ttl, max_size=max_size)
    click.echo(f"pruned {done.removed:,} answers; {done.kept.entries:,} kept ({done.kept.bytes / 1e6:.1f} MB)")


@cache.command()
@PATH_OPTION
def clear(path):
    """Delete every kept answer."""
    done = api.clear_cache(path)
    click.echo(f"cleared {done.removed:,} answers from {done.kept.path}")
