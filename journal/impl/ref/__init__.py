"""The reference Journal; its public names are the construction entry point.

``build_journal(root, *, store=None)`` returns a :class:`JournalAssembly`
(``service is process``, and a distinct ``manager``). The submodules
(parser wiring, ingestion, chain state, filesystem loader, audit) are not
API.
"""

from journal.impl.ref.assembly import JournalAssembly, build_journal

__all__ = ["JournalAssembly", "build_journal"]
