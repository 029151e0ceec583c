"""What a Journal worldview holds, as plain values, to compare views built apart."""

from __future__ import annotations

from nenjim.projections.journal_chains import JournalWorldview

Contents = tuple[int, dict[str, list[tuple[str, str, str]]]]


def contents(view: JournalWorldview) -> Contents:
    """The view's position and, per artifact, each revision's version, digest and text."""
    return view.position, {
        str(coordinate): [(s.version_key, s.digest, s.text) for s in chain.stored]
        for coordinate, chain in view.chains.items()
    }
