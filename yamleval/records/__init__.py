"""The typed records every layer passes on (items, results, errors, their JSON codec), and what
is never shown: ``${VAR}`` values redacted, database passwords hidden."""
