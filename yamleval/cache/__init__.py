"""Answers kept by what shaped them, and when a run may use them."""
