"""The Journal model: a complete snapshot of one artifact at one Journal version."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from nenjim.domain.journal.values import (
    ACTIVE_POLICY,
    ArtifactCoordinate,
    JournalVersion,
    Policy,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

_Named = TypeVar("_Named", bound="Dependency | Preference")


@dataclass(frozen=True, slots=True)
class Dependency:
    """A release depends on ``coordinate`` at versions admitted by ``requirement``."""

    coordinate: ArtifactCoordinate
    requirement: VersionRequirement


@dataclass(frozen=True, slots=True)
class Preference:
    """Resolution should prefer ``version`` of ``coordinate``."""

    coordinate: ArtifactCoordinate
    version: ReleaseVersion


@dataclass(frozen=True, slots=True)
class Release:
    """One released version as a revision knows it.

    ``dependencies`` and ``preferences`` are ordered by coordinate (each
    coordinate appears once, so order in the text carries no meaning);
    construction sorts them, so equal content makes equal releases.
    ``policy`` is the effective policy: the release's own, else the header's.
    """

    version: ReleaseVersion
    license: str
    content: Sha256Digest
    description: str | None = None
    policy: Policy = ACTIVE_POLICY
    dependencies: tuple[Dependency, ...] = ()
    exclusions: frozenset[ArtifactCoordinate] = field(default_factory=frozenset)
    preferences: tuple[Preference, ...] = ()

    def __post_init__(self) -> None:
        # Frozen: normalising the collections needs the object-level setter. A tuple of
        # at most one is normal already (a parse builds thousands of such releases).
        dependencies = self.dependencies
        if type(dependencies) is not tuple or len(dependencies) > 1:
            object.__setattr__(self, "dependencies", _by_coordinate(dependencies))
        if type(self.exclusions) is not frozenset:
            object.__setattr__(self, "exclusions", frozenset(self.exclusions))
        preferences = self.preferences
        if type(preferences) is not tuple or len(preferences) > 1:
            object.__setattr__(self, "preferences", _by_coordinate(preferences))


@dataclass(frozen=True, slots=True)
class JournalDocument:
    """The meaning of one Journal text; ``releases`` ascend by SemVer precedence.

    Construction sorts ``releases``, so equal content makes equal documents.
    """

    coordinate: ArtifactCoordinate
    version: JournalVersion
    predecessor: Sha256Digest | None = None
    description: str | None = None
    information: str | None = None
    policy: Policy = ACTIVE_POLICY
    releases: tuple[Release, ...] = ()

    def __post_init__(self) -> None:
        releases = tuple(sorted(self.releases, key=_precedence))
        object.__setattr__(self, "releases", releases)

    @property
    def is_genesis(self) -> bool:
        """True for the first revision of a chain (no predecessor)."""
        return self.predecessor is None

    def release(self, version: ReleaseVersion | str) -> Release | None:
        """The release with that version, or ``None``."""
        wanted = ReleaseVersion.of(version)
        return next((r for r in self.releases if r.version == wanted), None)


def _by_coordinate(items: Iterable[_Named]) -> tuple[_Named, ...]:
    return tuple(sorted(items, key=_coordinate_text))


def _coordinate_text(item: Dependency | Preference) -> str:
    # Coordinates order as their text: a key of str compares in C.
    return str(item.coordinate)


def _precedence(release: Release) -> tuple[object, ...]:
    return release.version.precedence


@dataclass(frozen=True, slots=True)
class JournalRevision:
    """An accepted, immutable Journal revision: its exact text, digest and meaning."""

    document: JournalDocument
    text: str = field(repr=False)
    digest: Sha256Digest

    @property
    def coordinate(self) -> ArtifactCoordinate:
        """The artifact this revision describes."""
        return self.document.coordinate

    @property
    def version(self) -> JournalVersion:
        """This revision's Journal version."""
        return self.document.version

    @property
    def predecessor(self) -> Sha256Digest | None:
        """The digest of the previous revision, ``None`` for the genesis."""
        return self.document.predecessor

    @property
    def is_genesis(self) -> bool:
        """True for the first revision of a chain."""
        return self.document.is_genesis

    @property
    def description(self) -> str | None:
        """The artifact's description."""
        return self.document.description

    @property
    def information(self) -> str | None:
        """An absolute URI with more information."""
        return self.document.information

    @property
    def policy(self) -> Policy:
        """The artifact-level policy."""
        return self.document.policy

    @property
    def releases(self) -> tuple[Release, ...]:
        """All releases this revision knows, ascending by precedence."""
        return self.document.releases

    def release(self, version: ReleaseVersion | str) -> Release | None:
        """The release with that version in this revision, or ``None``."""
        return self.document.release(version)


def release_rule_violations(
    artifact: ArtifactCoordinate, release: Release
) -> Iterator[tuple[str, ArtifactCoordinate, str]]:
    """Semantic rules 2-4 of one release: ``(keyword, coordinate, problem)`` per breach."""
    if not (release.dependencies or release.exclusions or release.preferences):
        return
    dependencies = {d.coordinate: d.requirement for d in release.dependencies}
    named = (
        [("DEPENDENCY", c) for c in dependencies]
        + [("EXCLUDE", c) for c in sorted(release.exclusions)]
        + [("PREFER", p.coordinate) for p in release.preferences]
    )
    for keyword, coordinate in named:
        if coordinate == artifact:
            yield keyword, coordinate, f"{keyword} may not name the journal's own artifact"
    for coordinate in sorted(release.exclusions):
        if coordinate in dependencies:
            yield "EXCLUDE", coordinate, f"EXCLUDE {coordinate} names a direct DEPENDENCY"
    for preference in release.preferences:
        if preference.coordinate in release.exclusions:
            yield (
                "PREFER",
                preference.coordinate,
                f"PREFER {preference.coordinate} names an excluded coordinate",
            )
        required = dependencies.get(preference.coordinate)
        if required is not None and not required.contains(preference.version):
            yield (
                "PREFER",
                preference.coordinate,
                f"preferred version {preference.version} does not satisfy "
                f"DEPENDENCY {preference.coordinate} {required}",
            )
