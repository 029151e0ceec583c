"""The reference Journal; its public names are its entry points.

``build_journal(root, *, store=None, journal=None, progress=None)`` returns
a :class:`JournalAssembly` (``service is process``, and a distinct
``manager``). :class:`JournalFollower` follows the Journal log of an existing
store, for long-running readers. :class:`StoredJournal` answers the queries
from an existing store with bounded memory. :func:`move_root` gives a root's store to
the path the root moved to. :class:`JournalAppender` (and
:func:`append_revisions`) appends revision texts or files to a durable
Journal's store without a root, judged as a root's files are;
:class:`RevisionSource` is one such text with the file it came from. The
submodules (parser wiring, ingestion, chain state, filesystem loader, audit)
are not API.
"""

from nenjim.journal.impl.ref.appender import JournalAppender, RevisionSource, append_revisions
from nenjim.journal.impl.ref.assembly import JournalAssembly, build_journal
from nenjim.journal.impl.ref.follower import JournalFollower
from nenjim.journal.impl.ref.root_move import move_root
from nenjim.journal.impl.ref.stored_queries import StoredJournal

__all__ = [
    "JournalAppender",
    "JournalAssembly",
    "JournalFollower",
    "RevisionSource",
    "StoredJournal",
    "append_revisions",
    "build_journal",
    "move_root",
]


def __dir__() -> list[str]:
    # The submodules are attributes once imported, but not API.
    return sorted(__all__)
