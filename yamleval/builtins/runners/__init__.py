"""Built-in runners, each registered as an entry point in ``yamleval.runners`` (setup.cfg).

Each loads when it is used: ``echo`` must not pay for ``requests`` (the ``http`` runner).
"""
