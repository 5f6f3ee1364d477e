"""OpenAI-compatible model endpoints: configuration, chat and structured answers."""
from yamleval.models.client import (
    ChatClient,
    ChatReply,
    ModelConfig,
    ModelError,
    Price,
    StructuredAnswerError,
)
from yamleval.models.extract import extract_json

__all__ = ["ChatClient", "ChatReply", "ModelConfig", "ModelError", "Price", "StructuredAnswerError",
           "extract_json"]
