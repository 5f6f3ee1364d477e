"""The version of yamleval, where any layer may read it."""

__version__ = "0.1.0"
