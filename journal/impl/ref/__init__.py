"""The reference Journal: parser wiring, ingestion, chain state, filesystem loader, construction."""

from journal.impl.ref.assembly import JournalAssembly, build_journal

__all__ = ["JournalAssembly", "build_journal"]
