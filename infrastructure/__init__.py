"""Infrastructure: the append-only log and the stores built on it."""
