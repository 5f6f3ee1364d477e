"""The results database: SQLite or PostgreSQL, its schema, writing and reading runs."""
