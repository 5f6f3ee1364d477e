"""Plugin modules used by the invalid-config cases; each is named after its case."""
