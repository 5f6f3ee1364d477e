"""Built-in scorers. Each is registered as an entry point in ``yamleval.scorers``."""
from yamleval.scorers.structured import is_json, json_diff, json_schema, list_contains, numeric_diff
from yamleval.scorers.text import (contains, contains_all, contains_any, exact_match, levenshtein, regex,
                                   starts_with)

__all__ = ["contains", "contains_all", "contains_any", "exact_match", "is_json", "json_diff", "json_schema",
           "levenshtein", "list_contains", "numeric_diff", "regex", "starts_with"]
