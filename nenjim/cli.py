"""The ``nenjim`` command line."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``nenjim`` console script."""
    raise SystemExit("nenjim: not yet implemented")
