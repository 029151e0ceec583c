"""The read-only JournalService: latest, exact, as-of and release queries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from journal_services import SERVICE_KINDS, started_service

from journal_texts import Chain, Rel, content, write_chain
from nenjim.journal import JournalService
from nenjim.journal.component import NenjimProcess
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
)

W = "com.example.widget"
V1, V2, V3 = "20260101T000000Z", "20260201T000000Z", "20260301T000000Z"


@pytest.fixture(params=SERVICE_KINDS)
def service(
    request: pytest.FixtureRequest, tmp_path: Path, journal_store: str
) -> Iterator[JournalService]:
    """A started Journal with a three-revision chain for ``W`` and a genesis for another,
    of each implementation in turn (in memory, served from the store)."""
    chain = Chain(W)
    one = Rel("1.0.0", content(1))
    chain.add(V1, (one,))
    chain.add(
        V2, (one, Rel("1.1.0", content(2), extra=("DEPENDENCY com.example.core [1.0.0,2.0.0)",)))
    )
    chain.add(
        V3,
        (
            Rel("1.0.0", content(1), extra=('POLICY yanked "broken"',)),
            Rel("1.1.0", content(2), extra=("DEPENDENCY com.example.core [1.0.0,2.0.0)",)),
        ),
        header=('DESCRIPTION "third"',),
    )
    root = tmp_path / "root"
    root.mkdir()
    write_chain(root, chain)
    other = Chain("com.example.core")
    other.add(V2, (Rel("1.5.0", content(3)),))
    write_chain(root, other)
    service = started_service(request.param, root, journal_store, tmp_path)
    yield service
    assert isinstance(service, NenjimProcess)
    service.stop()


def _versions(revisions: tuple[JournalRevision, ...]) -> list[str]:
    return [str(r.version) for r in revisions]


def test_coordinates_lists_every_artifact_as_an_immutable_set(service: JournalService) -> None:
    coordinates = service.coordinates()
    assert isinstance(coordinates, frozenset)
    assert coordinates == {ArtifactCoordinate(W), ArtifactCoordinate("com.example.core")}


def test_revisions_are_chronological_and_immutable(service: JournalService) -> None:
    revisions = service.revisions(W)
    assert isinstance(revisions, tuple)
    assert _versions(revisions) == [V1, V2, V3]
    assert revisions[0].is_genesis
    assert revisions[1].predecessor == revisions[0].digest
    assert revisions[2].predecessor == revisions[1].digest


def test_latest_is_the_chain_head(service: JournalService) -> None:
    latest = service.latest(W)
    assert latest is not None
    assert str(latest.version) == V3
    assert latest.description == "third"


def test_exact_revision(service: JournalService) -> None:
    revision = service.revision(W, V2)
    assert revision is not None
    assert str(revision.version) == V2
    assert service.revision(W, "20260115T000000Z") is None


@pytest.mark.parametrize(
    ("as_of", "expected"),
    [
        ("20251231T235959Z", None),
        (V1, V1),
        ("20260115T120000Z", V1),
        (V2, V2),
        ("20260228T235959Z", V2),
        (V3, V3),
        ("20991231T000000Z", V3),
    ],
)
def test_as_of_is_the_newest_at_or_before(
    service: JournalService, as_of: str, expected: str | None
) -> None:
    revision = service.as_of(W, as_of)
    assert (None if revision is None else str(revision.version)) == expected


def test_as_of_returns_the_complete_worldview_of_that_position(service: JournalService) -> None:
    """An older as-of sees the older snapshot, not the newest one filtered by time."""
    old = service.as_of(W, "20260215T000000Z")
    assert old is not None
    release = old.release("1.0.0")
    assert release is not None
    assert release.policy.status is PolicyStatus.ACTIVE  # yanked only from V3 on
    assert old.description is None


def test_release_from_a_selected_revision(service: JournalService) -> None:
    release = service.release(W, V2, "1.1.0")
    assert release is not None
    assert release.content.__str__() == content(2)
    assert [str(d.coordinate) for d in release.dependencies] == ["com.example.core"]
    assert release.dependencies[0].requirement.contains("1.5.0")
    assert service.release(W, V1, "1.1.0") is None  # V1 does not know 1.1.0 yet
    later = service.release(W, V3, "1.0.0")
    assert later is not None
    assert later.policy.status is PolicyStatus.YANKED
    assert later.policy.reason == "broken"


def test_value_types_and_strings_are_interchangeable(service: JournalService) -> None:
    coordinate, version = ArtifactCoordinate(W), JournalVersion(V2)
    assert service.revision(coordinate, version) == service.revision(W, V2)
    assert service.as_of(coordinate, version) == service.as_of(W, V2)
    assert service.release(coordinate, version, ReleaseVersion("1.1.0")) == service.release(
        W, V2, "1.1.0"
    )


def test_unknown_things_give_none_or_empty(service: JournalService) -> None:
    unknown = "com.example.unknown"
    assert service.revisions(unknown) == ()
    assert service.latest(unknown) is None
    assert service.revision(unknown, V1) is None
    assert service.as_of(unknown, V3) is None
    assert service.release(unknown, V1, "1.0.0") is None
    assert service.release(W, V3, "9.9.9") is None


def test_results_are_immutable(service: JournalService) -> None:
    latest = service.latest(W)
    assert latest is not None
    with pytest.raises(AttributeError):
        latest.text = "changed"  # type: ignore[misc]
    release = latest.releases[0]
    with pytest.raises(AttributeError):
        release.license = "GPL-3.0-only"  # type: ignore[misc]
    assert isinstance(release.exclusions, frozenset)
    assert isinstance(latest.releases, tuple)


def test_invalid_argument_syntax_is_an_invalid_value_error(service: JournalService) -> None:
    with pytest.raises(InvalidValueError):
        service.latest("Not A Coordinate")
    with pytest.raises(InvalidValueError):
        service.as_of(W, "2026-01-01")


class _Text(str):
    """A ``str`` subclass: answered as its plain text is."""


_AS_OF_QUERIES = [
    "20251231T235959Z",  # before the genesis
    V1,
    "20260115T120000Z",  # between two revisions
    "20260131T235959Z",  # a 31st, between two revisions
    V3,
    "20280229T000000Z",  # a leap day, after the head
    "20991231T235959Z",
]


@pytest.mark.parametrize("version", _AS_OF_QUERIES)
def test_as_of_with_strings_gives_the_typed_answer_itself(
    service: JournalService, version: str
) -> None:
    typed = service.as_of(ArtifactCoordinate(W), JournalVersion(version))
    assert service.as_of(W, version) is typed
    assert service.as_of(ArtifactCoordinate(W), version) is typed
    assert service.as_of(W, JournalVersion(version)) is typed
    assert service.as_of(_Text(W), _Text(version)) is typed


def test_every_chain_query_finds_a_chain_by_its_text(service: JournalService) -> None:
    coordinate = ArtifactCoordinate(W)
    assert service.revisions(W) == service.revisions(coordinate)
    assert service.latest(W) is service.latest(coordinate)
    assert service.revision(W, V2) is service.revision(coordinate, V2)
    assert service.as_of("com.example.core", V3) is service.as_of(
        ArtifactCoordinate("com.example.core"), V3
    )


@pytest.mark.parametrize(
    "version",
    ["2026-01-01", "20260230T000000Z", "20250229T000000Z", "20260431T000000Z", "", "x" * 16],
)
def test_an_invalid_version_text_raises_what_journal_version_raises(
    service: JournalService, version: str
) -> None:
    with pytest.raises(InvalidValueError) as expected:
        JournalVersion(version)
    with pytest.raises(InvalidValueError) as raised:
        service.as_of(W, version)
    assert str(raised.value) == str(expected.value)


@pytest.mark.parametrize("coordinate", ["Not A Coordinate", "widget", "com..example", ""])
def test_an_invalid_coordinate_text_raises_what_artifact_coordinate_raises(
    service: JournalService, coordinate: str
) -> None:
    with pytest.raises(InvalidValueError) as expected:
        ArtifactCoordinate(coordinate)
    for query in (
        lambda: service.as_of(coordinate, V1),
        lambda: service.revisions(coordinate),
        lambda: service.latest(coordinate),
        lambda: service.revision(coordinate, V1),
    ):
        with pytest.raises(InvalidValueError) as raised:
            query()
        assert str(raised.value) == str(expected.value)


def test_arguments_of_another_type_raise_what_the_value_types_raise(
    service: JournalService,
) -> None:
    with pytest.raises(TypeError) as expected_version:
        JournalVersion.of(20260101)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as raised:
        service.as_of(W, 20260101)  # type: ignore[arg-type]
    assert str(raised.value) == str(expected_version.value)
    with pytest.raises(TypeError) as expected_coordinate:
        ArtifactCoordinate.of(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as raised:
        service.as_of(None, V1)  # type: ignore[arg-type]
    assert str(raised.value) == str(expected_coordinate.value)


def test_as_of_an_unknown_coordinate_text_is_none(service: JournalService) -> None:
    for version in _AS_OF_QUERIES:
        assert service.as_of("com.example.unknown", version) is None
