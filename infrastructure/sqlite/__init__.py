"""The ``sqlite:`` store kind: everything an SQLite file store needs (imports ``sqlite3``)."""
