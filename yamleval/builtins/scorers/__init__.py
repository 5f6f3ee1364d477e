"""Built-in scorers, each registered as an entry point in ``yamleval.scorers`` (setup.cfg).

Each module loads when one of its scorers is used, so a run that only compares strings
never imports a model client.
"""
