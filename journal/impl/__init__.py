"""Implementations of the Journal API; nothing here is public API."""
