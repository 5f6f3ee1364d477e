"""Built-in runners. Each is registered as an entry point in ``yamleval.runners``."""
from yamleval.runners.echo import echo

__all__ = ["echo"]
