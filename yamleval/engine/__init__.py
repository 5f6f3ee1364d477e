"""One experiment's items: plan, run, score, repeat, hold to a budget."""
