"""Refused writes in every position among accepted ones, on one connection.

A refused write on PostgreSQL aborts its round trip, and the server skips
whatever was sent after the refused statement. Refusals twice in a row, then
after 0 to ``rounds - 1`` accepted writes, each followed by an accepted write:
whatever a refusal left behind on the connection shows in the next write.
"""

from __future__ import annotations

from collections.abc import Callable


def refusals_in_every_position(
    accepted: Callable[[], None], refused: Callable[[], None], rounds: int = 8
) -> None:
    """Run the sequence; ``refused`` must check its own refusal."""
    for round_ in range(rounds):
        refused()
        refused()
        for _ in range(round_):
            accepted()
        refused()
        accepted()
