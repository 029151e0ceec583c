"""Shared fixtures for the whole suite."""
