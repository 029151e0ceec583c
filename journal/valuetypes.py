"""Public value types of the Journal API."""

from domain.journal.values import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

__all__ = [
    "ArtifactCoordinate",
    "JournalVersion",
    "PolicyStatus",
    "ReleaseVersion",
    "Sha256Digest",
    "VersionRequirement",
]
