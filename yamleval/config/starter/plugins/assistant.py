"""The system under test: a stand-in that answers offline from a table of facts.

Make ``answer`` call your own application, or name a built-in runner in evals.yaml instead
(``http`` for an endpoint, ``command`` for a program, ``openai`` for a model). A runner
receives the case's ``input`` and returns the answer.
"""

FACTS = {
    "refund": "Refunds are accepted within 30 days of purchase.",
    "receipt": "Keep your receipt: a return needs it.",
    "open": "We are open Monday to Saturday, 9:00 to 18:00.",
    "ship": "Standard shipping takes 3 to 5 business days.",
    "password": "Choose 'Forgot password' on the sign-in page to reset it.",
}
OUT_OF_SCOPE = "Sorry, I can only help with orders, shipping, returns, opening hours and accounts."


def answer(input: str) -> str:
    """The first fact whose keyword the question mentions, else a polite refusal."""
    question = input.lower()
    return next((fact for keyword, fact in FACTS.items() if keyword in question), OUT_OF_SCOPE)
