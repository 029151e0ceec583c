"""The public Journal API: exactly :class:`JournalService` and :class:`JournalServiceManager`.

Models, value types and exceptions live in ``nenjim.journal.model``,
``nenjim.journal.valuetypes`` and ``nenjim.journal.exception``, the component contracts in
``nenjim.journal.component``. A Journal is built with
``nenjim.journal.impl.ref.build_journal(root, store=...)``, which returns a
``nenjim.journal.impl.ref.JournalAssembly``; ``nenjim.journal.impl.ref`` also holds
``JournalFollower`` and ``move_root``. Those are the only public names under
``nenjim.journal.impl``; its submodules are implementation, not API.
``docs/journal.md`` lists every public name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from nenjim.journal.component import NenjimComponent
from nenjim.journal.model import JournalRevision, RefreshReport, Release
from nenjim.journal.valuetypes import ArtifactCoordinate, JournalVersion, ReleaseVersion

__all__ = ["JournalService", "JournalServiceManager"]
_PUBLIC_MODULES = ("component", "exception", "impl", "model", "valuetypes")


class JournalService(NenjimComponent):
    """Read-only, filesystem-independent queries over accepted Journal revisions.

    Every argument may be a value type or its canonical string. Unknown
    things give ``None`` or an empty immutable collection. Before a
    successful start, after a failed one and after stop, every query raises
    ``nenjim.journal.exception.LifecycleError``.
    """

    @abstractmethod
    def coordinates(self) -> frozenset[ArtifactCoordinate]:
        """Every artifact with an accepted revision."""

    @abstractmethod
    def revisions(self, coordinate: ArtifactCoordinate | str) -> tuple[JournalRevision, ...]:
        """All revisions of an artifact, ascending by Journal version; ``()`` if unknown."""

    @abstractmethod
    def latest(self, coordinate: ArtifactCoordinate | str) -> JournalRevision | None:
        """The chain head, or ``None``."""

    @abstractmethod
    def revision(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        """The revision at exactly ``version``, or ``None``."""

    @abstractmethod
    def as_of(
        self, coordinate: ArtifactCoordinate | str, version: JournalVersion | str
    ) -> JournalRevision | None:
        """The newest revision with Journal version ``<= version``, or ``None``."""

    @abstractmethod
    def release(
        self,
        coordinate: ArtifactCoordinate | str,
        version: JournalVersion | str,
        release_version: ReleaseVersion | str,
    ) -> Release | None:
        """The release as the exact revision at ``version`` knows it, or ``None``."""


class JournalServiceManager(ABC):
    """Passive administration of one Journal: its root and explicit refresh, nothing else."""

    @property
    @abstractmethod
    def journal_root(self) -> Path:
        """The normalised absolute root the Journal loads from."""

    @abstractmethod
    def refresh(self) -> RefreshReport:
        """Ingest new valid files, one atomic ingestion each; idempotent when nothing changed.

        Raises ``LifecycleError`` unless the Journal started successfully.
        """


def __dir__() -> list[str]:
    # The API only: the two interfaces and the public subpackages already imported; the
    # names imported for the interfaces' signatures are attributes too, not API.
    return sorted([*__all__, *(name for name in _PUBLIC_MODULES if name in globals())])
