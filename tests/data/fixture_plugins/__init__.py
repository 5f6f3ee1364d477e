"""Runners and scorers with known behaviour, for the tests."""
