"""OpenAI-compatible model endpoints: configuration, chat and structured answers.

Names load on first use: ``requests`` is slow to import and most runs never call a model.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "ChatClient": "yamleval.builtins.models.client", "ChatReply": "yamleval.builtins.models.client",
    "ModelConfig": "yamleval.builtins.models.config", "ModelError": "yamleval.builtins.models.client",
    "Price": "yamleval.builtins.models.config", "StructuredAnswerError": "yamleval.builtins.models.client",
    "extract_json": "yamleval.builtins.models.extract", "Models": "yamleval.builtins.models.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'yamleval.builtins.models' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
