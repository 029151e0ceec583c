"""The digest index (one claim per accepted revision) checked against the chains.

Every revision in the log has its digest claimed for its artifact, and every
claim has its revision: the claims are written in the transaction of the
events they accompany, so any disagreement is an edit behind the engine's
back.
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.journal.errors import JournalIntegrityError
from projections.journal_chains import JournalWorldview


def check_digest_index(
    view: JournalWorldview, before: Mapping[str, str], after: Mapping[str, str]
) -> None:
    """Raise :class:`JournalIntegrityError` unless the claims agree with ``view``.

    ``before`` was read before the events of ``view`` and ``after`` after
    them, so a concurrent writer's append (claims and events commit together)
    may add claims to ``after`` and revisions to ``view`` but cannot make a
    consistent log look inconsistent: every claim read before has its
    revision in ``view``, and every revision in ``view`` its claim read after.
    """
    owners = {s.digest: s.coordinate for chain in view.chains.values() for s in chain.stored}
    for digest, coordinate in owners.items():
        owner = after.get(digest)
        if owner != coordinate:
            raise JournalIntegrityError(
                f"digest index: {digest} of {coordinate} is claimed by {owner!r}"
            )
    for digest, owner in before.items():
        if digest not in owners:
            raise JournalIntegrityError(
                f"digest index: {digest} claimed by {owner} has no revision"
            )
