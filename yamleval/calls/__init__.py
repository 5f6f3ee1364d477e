"""How a run calls out: the one HTTP layer (attempts, rate limits, endpoint health) and the answer
cache (what is kept, and when a run may use it)."""
from yamleval.calls.network import Network, RunNetwork

__all__ = ["Network", "RunNetwork"]
