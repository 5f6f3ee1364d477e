"""``yamleval serve``: the Eval Center over a results database."""
from __future__ import annotations

import click

from yamleval import api
from yamleval.cli import cli
from yamleval.cli.history import STORE_OPTION


@cli.command()
@STORE_OPTION
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Where to listen; any address but this machine's own needs --token-env.")
@click.option("--port", default=8600, show_default=True, type=click.IntRange(0, 65535), help="The port to listen on.")
@click.option("--token-env", metavar="NAME",
              help="The environment variable that holds the token every request must bring"
                   " (`Authorization: Bearer TOKEN`, or the sign-in page); several, each named for who holds it:"
                   " \"ana=TOKEN bo=TOKEN\".")
@click.option("--reviews", is_flag=True,
              help="Let people give items their verdict (pass/fail and a note) on the items' pages; else read-only.")
@click.option("--reviewer", metavar="NAME", help="With --reviews: who reviews (else the signed-in token's name, else each review names its"
                   " reviewer).")
def serve(store_file, host, port, token_env, reviews, reviewer):
    """Serve the Eval Center: every stored run (SQLite file or PostgreSQL URL), a running one as
    its items finish, comparisons, history and a JSON API under /api/. Read-only unless
    --reviews; stop with Ctrl-C."""
    def ready(address: str) -> None:
        click.echo(f"serving {address} (Ctrl-C stops)", err=True)

    api.serve(store=store_file, host=host, port=port, token_env=token_env, ready=ready, reviews=reviews,
              reviewer=reviewer)
