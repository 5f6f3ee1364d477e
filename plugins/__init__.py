"""Example plugins for the demo experiments in evals.yaml."""
