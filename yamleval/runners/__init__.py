"""Built-in runners. Each is registered as an entry point in ``yamleval.runners``."""
from yamleval.runners.command import command
from yamleval.runners.echo import echo
from yamleval.runners.http import http

__all__ = ["command", "echo", "http"]
