"""The ``postgresql://`` store kind: everything a PostgreSQL store needs (imports psycopg)."""
