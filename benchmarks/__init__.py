"""Benchmarks of the Journal and its append-only log; see ``benchmarks/README.md``."""
