"""OpenAI-compatible model endpoints: configuration, chat and structured answers.

Names load on first use: ``requests`` is slow to import and most runs never call a model.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "ChatClient": "yamleval.models.client", "ChatReply": "yamleval.models.client",
    "ModelConfig": "yamleval.models.config", "ModelError": "yamleval.models.client",
    "Price": "yamleval.models.config", "StructuredAnswerError": "yamleval.models.client",
    "extract_json": "yamleval.models.extract", "Models": "yamleval.models.registry",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'yamleval.models' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
