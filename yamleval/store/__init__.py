"""The results database: SQLite or PostgreSQL behind one ``Database`` interface, its schema,
writing and reading runs. ``open_store`` opens a database that holds stored runs already."""
from yamleval.store.writer import open_store

__all__ = ["open_store"]
