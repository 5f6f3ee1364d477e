"""The ``yamleval`` command: click options → ``yamleval.api`` → printing and exit codes; nothing
below the api. One module per group of commands:

    running   run (with --resume), rescore
    history   runs, show, tag, report, merge, export, compare, history
    reviews   review, agreement (people's verdicts)
    serve     serve (the Eval Center)
    here      init, validate, preview, schema
    cache_commands  cache stats, prune, clear
"""
from __future__ import annotations

import sys

import click

from yamleval.records.version import __version__
from yamleval.cli.heap import one_heap
from yamleval.records.errors import ExitCode, YamlevalError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="yamleval")
def cli():
    """Evaluate LLM applications and agents from YAML."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: yamleval errors are shown without a traceback, with their exit code."""
    one_heap()
    try:
        cli.main(args=argv, prog_name="yamleval", standalone_mode=False)
    except YamlevalError as exc:
        click.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.CONFIG_ERROR)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    sys.exit(ExitCode.OK)


from yamleval.cli import cache_commands, here, history, reviews, running, serve  # noqa: E402,F401  (they add their commands to ``cli``)
