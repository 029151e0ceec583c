"""The runtime sample root data/sample/journals and the generator benchmarks.sample_roots."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.sample_roots import generate_root
from nenjim.journal import JournalService
from nenjim.journal.impl.ref import build_journal

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "journals"
HUBD = "com.r35157.nenjim.hubd"
AS_OF = "20260301T000000Z"


def _started(root: Path) -> JournalService:
    assembly = build_journal(root)
    assembly.process.start()
    return assembly.service


@pytest.fixture(scope="module")
def sample() -> JournalService:
    return _started(SAMPLE)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


# The hand-curated sample root.


def test_sample_root_loads_every_artifact_and_revision(sample: JournalService) -> None:
    coordinates = sample.coordinates()
    assert len(coordinates) == 20
    assert sum(len(sample.revisions(c)) for c in coordinates) == 45
    assert {str(c) for c in coordinates} == {p.name for p in SAMPLE.iterdir()}


def test_sample_root_has_several_multi_revision_chains(sample: JournalService) -> None:
    lengths = [len(sample.revisions(c)) for c in sample.coordinates()]
    assert sum(1 for n in lengths if n >= 2) >= 5
    assert max(lengths) == 5


def test_hubd_spans_the_as_of_instant_of_the_main_job(sample: JournalService) -> None:
    versions = [str(r.version) for r in sample.revisions(HUBD)]
    assert versions == [
        "20251125T101500Z",
        "20260112T143000Z",
        "20260218T091000Z",
        "20260317T160000Z",
    ]
    revision = sample.as_of(HUBD, AS_OF)
    assert revision is not None
    assert str(revision.version) == "20260218T091000Z"


def test_every_dependency_names_an_artifact_of_the_root(sample: JournalService) -> None:
    coordinates = sample.coordinates()
    named = {
        d.coordinate
        for c in coordinates
        for revision in sample.revisions(c)
        for release in revision.releases
        for d in release.dependencies
    }
    assert named
    assert named <= coordinates


def test_every_dependency_is_satisfiable_when_its_revision_was_written(
    sample: JournalService,
) -> None:
    for coordinate in sample.coordinates():
        for revision in sample.revisions(coordinate):
            for release in revision.releases:
                for dependency in release.dependencies:
                    target = sample.as_of(dependency.coordinate, revision.version)
                    assert target is not None, f"{coordinate} {revision.version}"
                    assert any(
                        dependency.requirement.contains(r.version) for r in target.releases
                    ), f"{coordinate} {revision.version} {release.version} {dependency}"


# The generator.


def test_generated_root_loads_with_every_revision(tmp_path: Path) -> None:
    root = tmp_path / "root"
    written = generate_root(root, artifacts=12, revisions=4, seed=7, releases_per_revision=2)
    assert written == 48
    assert len(_files(root)) == 48
    service = _started(root)
    coordinates = service.coordinates()
    assert len(coordinates) == 12
    for coordinate in coordinates:
        chain = service.revisions(coordinate)
        assert len(chain) == 4
        assert len(chain[-1].releases) == 8
        for release in chain[-1].releases:
            for dependency in release.dependencies:
                target = service.latest(dependency.coordinate)
                assert target is not None
                assert any(dependency.requirement.contains(r.version) for r in target.releases)


def test_generated_root_has_dependencies(tmp_path: Path) -> None:
    generate_root(tmp_path, artifacts=20, revisions=2)
    service = _started(tmp_path)
    assert any(
        release.dependencies
        for c in service.coordinates()
        for release in service.revisions(c)[-1].releases
    )


def test_generation_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        generate_root(tmp_path / name, artifacts=15, revisions=3, seed=seed)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a") != _files(tmp_path / "c")


def test_generation_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        generate_root(tmp_path, artifacts=2, revisions=2)
    assert _files(tmp_path) == {"keep.txt": b"mine"}


def test_generation_refuses_a_file_as_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.write_text("mine")
    with pytest.raises(FileExistsError):
        generate_root(root, artifacts=2, revisions=2)


def test_generation_rejects_zero_revisions(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="revisions >= 1"):
        generate_root(tmp_path, artifacts=2, revisions=0)
    assert not any(tmp_path.iterdir())
