"""Numbers from results: aggregation, statistics, comparison, history."""
