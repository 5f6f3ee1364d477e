"""A stored run from start to end: run, rescore, merge, resume, shards, preview."""
