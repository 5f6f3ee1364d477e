"""Built-in scorers. Each is registered as an entry point in ``yamleval.scorers``.

Loaded on first use, so a run that only compares strings never imports a model client.
"""
from __future__ import annotations

import importlib

_MODULES = {
    "yamleval.scorers.text": ("contains", "contains_all", "contains_any", "exact_match", "levenshtein", "regex",
                              "starts_with"),
    "yamleval.scorers.structured": ("is_json", "json_diff", "json_schema", "list_contains", "numeric_diff"),
    "yamleval.scorers.judges": ("classifier", "factuality", "humor", "judge", "possible", "summary", "translation"),
    "yamleval.scorers.rag": ("answer_correctness", "answer_relevancy", "context_precision", "context_recall",
                             "context_relevancy", "moderation"),
    "yamleval.scorers.tools": ("tool_call_accuracy",),
    "yamleval.scorers.trajectory": ("trajectory",),
}
_SCORERS = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_SCORERS)


def __getattr__(name: str):
    if name not in _SCORERS:
        raise AttributeError(f"module 'yamleval.scorers' has no attribute {name!r}")
    return getattr(importlib.import_module(_SCORERS[name]), name)
