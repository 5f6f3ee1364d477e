"""A tiny offline "support bot" and a scorer for it: the shape of a real runner plugin.

A runner receives the item's fields it names (``input``, ``item``, ``expected``,
``context``, ``metadata``, ``vars``) and its ``with:`` values as keyword arguments.
A scorer receives ``output`` and the item's fields it names, plus its ``with:`` values.
"""
from __future__ import annotations

from yamleval import RunnerResult, Score

ANSWERS = {
    "refund": "You can ask for a refund within 30 days of purchase. Please keep your receipt.",
    "hours": "We are open Monday to Friday, 9:00 to 17:00.",
    "shipping": "Shipping takes 3 to 5 business days.",
    "password": "Click 'Forgot password' on the login page to reset it.",
}


def answer(input: str, tone: str = "plain") -> RunnerResult:
    """Answer from a keyword table, as a retrieval bot would; unknown questions get a fallback."""
    text = next((reply for key, reply in ANSWERS.items() if key in input.lower()),
                "I'm not sure. Let me connect you with a human agent.")
    if tone == "friendly":
        text = "Happy to help! " + text
    words = len(input.split())
    return RunnerResult(output=text, metadata={"tone": tone},
                        usage={"prompt_tokens": words, "completion_tokens": len(text.split())})


def politeness(output: str, min_words: int = 5) -> Score:
    """1.0 for an answer that is long enough and polite; partial credit otherwise."""
    words = len(output.split())
    polite = any(w in output.lower() for w in ("please", "happy to help", "thank"))
    score = (0.5 if words >= min_words else 0.0) + (0.5 if polite else 0.0)
    reason = f"{words} words, {'polite' if polite else 'no courtesy phrase'}"
    return Score(score=score, reason=reason)
