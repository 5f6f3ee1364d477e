"""``similar``: how close in meaning the output is to the expected value, by the cosine
similarity of their embeddings from the ``/embeddings`` endpoint of a ``models:`` entry.

The score is the cosine clipped to [0, 1]: 1 for the same direction, 0 for unrelated or
opposite meanings, so an entry's ``threshold: 0.8`` passes a cosine of 0.8 or more. An
expected list counts its closest value. Each distinct text is embedded once per run and kept
in the answer cache (``yamleval.builtins.models.embeddings``). A failed request, a reply that is not a
vector per text, and vectors of different lengths make the score an error.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from yamleval.builtins.scorers.judges import payload_text
from yamleval.records.types import Score


def similar(output: Any, expected: Any, models: Any, model: str) -> Score:
    """The cosine similarity of the embeddings of the output and the expected value (the
    closest of an expected list), clipped to [0, 1]; ``model`` names the embeddings model."""
    if models is None:
        raise ValueError(f"model {model!r}: this experiment declares no `models:`")
    references = [payload_text(value) for value in (expected if isinstance(expected, (list, tuple)) else [expected])]
    if not references:
        raise ValueError("the expected list is empty: there is nothing to compare the output with")
    if not all(text.strip() for text in references):
        raise ValueError("an expected value is empty: there is no meaning to compare the output with")
    answer = payload_text(output)
    if not answer.strip():
        return Score(score=0.0, reason="the output is empty", metadata={"model": model})
    embedded = models.embeddings(model).embed([answer, *references])
    vector, *others = embedded.vectors
    cosines = [_cosine(vector, other, model) for other in others]
    best = max(range(len(cosines)), key=cosines.__getitem__)
    metadata: dict[str, Any] = {"similarity": cosines[best], "model": model}
    reason = f"cosine similarity {cosines[best]:.4f} to the expected value"
    if len(cosines) > 1:
        metadata.update(closest=best, similarities=cosines)
        reason = f"cosine similarity {cosines[best]:.4f} to expected value {best + 1} of {len(cosines)}, the closest"
    usage = embedded.usage if embedded.usage.total_tokens or embedded.usage.cost else None
    return Score(score=min(1.0, max(0.0, cosines[best])), reason=reason, metadata=metadata, usage=usage)


def _cosine(a: Sequence[float], b: Sequence[float], model: str) -> float:
    if len(a) != len(b):
        raise ValueError(f"model {model!r} gave vectors of different lengths ({len(a)} for the output, "
                         f"{len(b)} for the expected value): they cannot be compared")
    norms = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norms == 0.0:
        raise ValueError(f"model {model!r} gave a vector of zeros, which has no direction to compare")
    return math.fsum(x * y for x, y in zip(a, b)) / norms
