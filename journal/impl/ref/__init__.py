"""The reference Journal; its public names are the construction entry point.

``build_journal(root, *, store=None)`` returns a :class:`JournalAssembly`
(``service is process``, and a distinct ``manager``). The submodules
(parser wiring, ingestion, chain state, filesystem loader, audit) are not
API. :class:`JournalFollower` follows the Journal log of an existing store,
for long-running readers.
"""

from journal.impl.ref.assembly import JournalAssembly, build_journal
from journal.impl.ref.follower import JournalFollower

__all__ = ["JournalAssembly", "JournalFollower", "build_journal"]
