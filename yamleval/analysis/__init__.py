"""Numbers from results: aggregation, pass criteria, statistics, comparison (no text), history."""
