"""Journal documents, their text format and the per-artifact chain rules."""
