"""The digest index (one claim per accepted revision) checked against the chains.

Every revision in the log has its digest claimed for its artifact, and every
claim has its revision: the claims are written in the transaction of the
events they accompany, so any disagreement is an edit behind the engine's
back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nenjim.domain.journal.errors import JournalIntegrityError
from nenjim.projections.journal_chains import JournalWorldview


def check_digest_index(
    view: JournalWorldview,
    claims: Mapping[str, str],
    caught_up: Callable[[], JournalWorldview],
) -> JournalWorldview:
    """Raise :class:`JournalIntegrityError` unless ``claims`` agree with ``view``; the view.

    ``claims`` (digest to owner) were read after the events of ``view``, so
    every revision of ``view`` must have its claim. A claim without a
    revision may belong to a writer that appended after ``view`` was read:
    only then is ``caught_up()`` called, once, to read the log again, and a
    claim still without its revision is an edit. Returns the view checked.
    """
    checked = [view]

    def again() -> Mapping[str, str]:
        checked.append(caught_up())
        return _owners(checked[-1])

    check_digest_claims(_owners(view), claims, again)
    return checked[-1]


def check_digest_claims(
    owners: Mapping[str, str],
    claims: Mapping[str, str],
    caught_up: Callable[[], Mapping[str, str]],
) -> None:
    """:func:`check_digest_index` over ``owners`` (every revision's digest to its artifact)
    instead of a view: ``caught_up()`` returns the owners of the log read again."""
    if owners == claims:
        return  # the usual case, compared in one step; a difference is found below
    for digest, coordinate in owners.items():
        owner = claims.get(digest)
        if owner is None:
            raise JournalIntegrityError(
                f"digest index: revision {digest} of {coordinate} has no digest claim: its "
                "claim was deleted, or its text and digest were edited (a forged revision)"
            )
        if owner != coordinate:
            raise JournalIntegrityError(
                f"digest index: revision {digest} of {coordinate} is claimed by {owner!r}: "
                "the claim was edited"
            )
    unmatched = {digest: owner for digest, owner in claims.items() if digest not in owners}
    if unmatched:
        owners = caught_up()
        for digest, owner in unmatched.items():
            if owners.get(digest) != owner:
                raise JournalIntegrityError(
                    f"digest index: {digest} claimed by {owner} has no revision: the log "
                    "lost that revision (a cut chain head), or the claim was added or edited"
                )


def _owners(view: JournalWorldview) -> dict[str, str]:
    return {s.digest: s.coordinate for chain in view.chains.values() for s in chain.stored}
