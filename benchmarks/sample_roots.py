"""Deterministic generator of valid Journal roots, for benchmarks and tests.

``generate_root`` writes ``<root>/<coordinate>/<journal-version>.journal``
files that load through the reference Journal: every chain has real
predecessor digests and strictly increasing Journal versions, successors keep
every earlier release with its CONTENT, and dependencies name artifacts
generated earlier with requirements one of their releases satisfies. The same
arguments always give the same bytes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nenjim.domain.journal.document import Dependency, JournalDocument, Preference, Release
from nenjim.domain.journal.renderer import render_journal
from nenjim.domain.journal.values import (
    ArtifactCoordinate,
    JournalVersion,
    Policy,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

__all__ = ["generate_root"]

_ORGANISATIONS = ("com.acme", "org.example", "io.sample", "net.widgets", "dev.toolsmith")
_NAMES = ("core", "api", "log", "cli", "store", "agent", "config", "http", "json", "cache")
_LICENSES = (
    "Apache-2.0",
    "MIT",
    "BSD-3-Clause",
    "Apache-2.0 OR MIT",
    "EPL-2.0",
    "MPL-2.0",
    "GPL-2.0-only WITH Classpath-exception-2.0",
    "LicenseRef-Sample-Proprietary",
)
_RETIREMENTS = (
    Policy(PolicyStatus.DEPRECATED, "superseded by a newer release"),
    Policy(PolicyStatus.YANKED, "broken build"),
    Policy(PolicyStatus.REVOKED, "withdrawn for a licensing problem"),
)
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_YEAR_SECONDS = 365 * 24 * 3600
_MAX_DEPENDENCIES = 3


@dataclass
class _Artifact:
    """One artifact's evolving state while its chain is generated."""

    coordinate: ArtifactCoordinate
    license: str
    next_version: tuple[int, int, int]
    releases: list[Release] = field(default_factory=list)


def generate_root(
    root: Path,
    *,
    artifacts: int,
    revisions: int,
    seed: int = 0,
    releases_per_revision: int = 1,
) -> int:
    """Write a valid Journal root of ``artifacts`` chains of ``revisions`` each
    (:func:`generated_chains`, a file per text).

    ``root`` is created if missing; returns the number of files written
    (``artifacts * revisions``). Raises ``FileExistsError`` if ``root`` exists
    and is not an empty directory, ``ValueError`` for a negative count or
    ``revisions < 1``.
    """
    chains = generated_chains(
        artifacts=artifacts,
        revisions=revisions,
        seed=seed,
        releases_per_revision=releases_per_revision,
    )
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"refusing to generate a Journal root into non-empty {root}")
    root.mkdir(parents=True, exist_ok=True)
    written = 0
    for coordinate, texts in chains:
        directory = root / coordinate
        directory.mkdir()
        for version, text in texts:
            # Bytes, not text mode: the digest covers exact bytes and LF must stay LF.
            (directory / f"{version}.journal").write_bytes(text.encode("utf-8"))
            written += 1
    return written


def generated_chains(
    *, artifacts: int, revisions: int, seed: int = 0, releases_per_revision: int = 1
) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """``artifacts`` valid chains of ``revisions`` texts each, one artifact at a time: its
    coordinate and its ``(Journal version, text)`` pairs, genesis first.

    Each revision adds ``releases_per_revision`` releases (and may retire one);
    later artifacts depend on earlier ones. ``ValueError`` (at once) for a
    negative count or ``revisions < 1``.
    """
    if artifacts < 0 or revisions < 1 or releases_per_revision < 0:
        raise ValueError(
            "expected artifacts >= 0, revisions >= 1 and releases_per_revision >= 0, got "
            f"{artifacts}, {revisions} and {releases_per_revision}"
        )
    return _chains(artifacts, revisions, seed, releases_per_revision)


def _chains(
    artifacts: int, revisions: int, seed: int, releases_per_revision: int
) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    rng = random.Random(seed)
    generated: list[_Artifact] = []
    for index in range(artifacts):
        artifact = _Artifact(
            coordinate=ArtifactCoordinate(
                f"{rng.choice(_ORGANISATIONS)}.{rng.choice(_NAMES)}_{index}"
            ),
            license=rng.choice(_LICENSES),
            next_version=(rng.randrange(3), rng.randrange(10), 0),
        )
        moment = _EPOCH + timedelta(seconds=rng.randrange(_YEAR_SECONDS))
        predecessor: Sha256Digest | None = None
        texts: list[tuple[str, str]] = []
        for revision in range(revisions):
            if revision:
                # At least an hour later, so versions cut to the second stay strictly increasing.
                moment += timedelta(seconds=rng.randrange(3600, 60 * 24 * 3600))
                _retire_one(rng, artifact)
            for _ in range(releases_per_revision):
                artifact.releases.append(_new_release(rng, artifact, generated))
            version = JournalVersion.from_datetime(moment)
            text = render_journal(
                JournalDocument(
                    coordinate=artifact.coordinate,
                    version=version,
                    predecessor=predecessor,
                    description=f"Generated sample artifact number {index}",
                    information=f"https://example.org/artifacts/{artifact.coordinate}",
                    releases=tuple(artifact.releases),
                )
            )
            texts.append((str(version), text))
            predecessor = Sha256Digest.of_text(text)
        yield str(artifact.coordinate), texts
        if artifact.releases:
            generated.append(artifact)


def _retire_one(rng: random.Random, artifact: _Artifact) -> None:
    """Sometimes give one older release a non-active policy, as real successors do."""
    if artifact.releases and rng.random() < 0.3:
        position = rng.randrange(len(artifact.releases))
        old = artifact.releases[position]
        artifact.releases[position] = replace(old, policy=rng.choice(_RETIREMENTS))


def _new_release(rng: random.Random, artifact: _Artifact, earlier: list[_Artifact]) -> Release:
    """The next release of ``artifact``, depending on some ``earlier`` artifacts."""
    major, minor, patch = artifact.next_version
    version = ReleaseVersion(f"{major}.{minor}.{patch}")
    bump = rng.random()
    if bump < 0.6:
        artifact.next_version = (major, minor, patch + 1)
    elif bump < 0.9:
        artifact.next_version = (major, minor + 1, 0)
    else:
        artifact.next_version = (major + 1, 0, 0)
    count = rng.randint(0, min(_MAX_DEPENDENCIES, len(earlier)))
    targets = [earlier[i] for i in rng.sample(range(len(earlier)), count)]
    dependencies = []
    preferences = []
    for target in targets:
        wanted = rng.choice(target.releases).version
        dependencies.append(Dependency(target.coordinate, _requirement(rng, wanted)))
        if rng.random() < 0.1:
            preferences.append(Preference(target.coordinate, wanted))
    return Release(
        version=version,
        license=artifact.license,
        content=Sha256Digest(f"sha256:{rng.getrandbits(256):064x}"),
        dependencies=tuple(dependencies),
        preferences=tuple(preferences),
    )


def _requirement(rng: random.Random, wanted: ReleaseVersion) -> VersionRequirement:
    """A requirement of one of the common forms that ``wanted`` satisfies."""
    form = rng.randrange(3)
    if form == 0:
        return VersionRequirement(str(wanted))
    if form == 1:
        next_major = int(str(wanted).split(".", 1)[0]) + 1
        return VersionRequirement(f"[{wanted},{next_major}.0.0)")
    return VersionRequirement(f"[{wanted},)")
