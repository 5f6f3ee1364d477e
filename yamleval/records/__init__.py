"""The typed records every layer passes on: items, results, errors, their JSON codec."""
