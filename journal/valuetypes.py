"""Public value types of the Journal API."""

from nenjim.domain.journal.values import (
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


def __dir__() -> list[str]:
    # The API only: names imported for the definitions are attributes too, not API.
    return sorted(__all__)
