"""One experiment's items: plan, run, score, repeat, budget, criteria, redaction."""
