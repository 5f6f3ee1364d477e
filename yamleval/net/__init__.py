"""The one HTTP layer: the attempt sequence, rate limits and endpoint health of one run."""
from yamleval.net.network import Network, RunNetwork

__all__ = ["Network", "RunNetwork"]
