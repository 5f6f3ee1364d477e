"""The one HTTP layer: the attempt sequence, rate limits and endpoint health of one run."""
