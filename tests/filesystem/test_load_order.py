"""The initial load reports the violation a refresh would, however the files sort.

A refresh judges a new file against revisions accepted before it; the
initial load sees every file at once. Deciding each file after the file it
cites makes both report the same rule and the same message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from journal_texts import Rel, content, digest, journal_text, write_revision
from nenjim.journal.exception import ChainViolation, JournalChainError
from nenjim.journal.impl.ref import build_journal

V1, V2, V3, V4 = (f"2026010{n}T000000Z" for n in range(1, 5))


def _start_error(root: Path) -> JournalChainError:
    with pytest.raises(JournalChainError) as caught:
        build_journal(root).process.start()
    return caught.value


def _refresh_error(root: Path, late: list[tuple[str, str, str]]) -> JournalChainError:
    """Start without the ``late`` files, add them, refresh; the refresh's error."""
    held = {}
    for artifact, version, _ in late:
        path = root / artifact / f"{version}.journal"
        held[path] = path.read_bytes()
        path.unlink()
    assembly = build_journal(root)
    assembly.process.start()
    for path, data in held.items():
        path.write_bytes(data)
    with pytest.raises(JournalChainError) as caught:
        assembly.manager.refresh()
    return caught.value


@pytest.mark.parametrize(
    ("citing", "cited"),
    [("com.example.a", "com.example.b"), ("com.example.b", "com.example.a")],
    ids=["citing-sorts-first", "cited-sorts-first"],
)
def test_a_successor_citing_another_artifacts_revision_is_cross_artifact(
    tmp_path: Path, citing: str, cited: str
) -> None:
    foreign = journal_text(cited, V1, releases=(Rel("1.0.0", content(1)),))
    write_revision(tmp_path, cited, V1, foreign)
    write_revision(tmp_path, citing, V1, journal_text(citing, V1))
    path = write_revision(
        tmp_path, citing, V2, journal_text(citing, V2, predecessor=digest(foreign))
    )
    at_start = _start_error(tmp_path)
    assert at_start.reason is ChainViolation.CROSS_ARTIFACT_PREDECESSOR
    assert (at_start.artifact, at_start.path) == (citing, path)
    at_refresh = _refresh_error(tmp_path, [(citing, V2, "")])
    assert str(at_start) == str(at_refresh)


@pytest.mark.parametrize(
    ("citing", "cited"),
    [("com.example.a", "com.example.b"), ("com.example.b", "com.example.a")],
    ids=["citing-sorts-first", "cited-sorts-first"],
)
def test_a_genesis_candidate_citing_another_artifact_is_cross_artifact(
    tmp_path: Path, citing: str, cited: str
) -> None:
    """The citing artifact has no chain yet: its first file cites a foreign revision."""
    foreign = journal_text(cited, V1)
    write_revision(tmp_path, cited, V1, foreign)
    write_revision(tmp_path, citing, V2, journal_text(citing, V2, predecessor=digest(foreign)))
    at_start = _start_error(tmp_path)
    assert at_start.reason is ChainViolation.CROSS_ARTIFACT_PREDECESSOR
    assert str(at_start) == str(_refresh_error(tmp_path, [(citing, V2, "")]))


@pytest.mark.parametrize("artifact", ["com.example.a", "com.example.zz"])
def test_a_lower_version_citing_a_later_head_is_non_increasing(
    tmp_path: Path, artifact: str
) -> None:
    genesis = journal_text(artifact, V1)
    later = journal_text(artifact, V3, predecessor=digest(genesis))
    write_revision(tmp_path, artifact, V1, genesis)
    write_revision(tmp_path, artifact, V3, later)
    path = write_revision(
        tmp_path, artifact, V2, journal_text(artifact, V2, predecessor=digest(later))
    )
    write_revision(tmp_path, "com.example.m", V1, journal_text("com.example.m", V1))
    at_start = _start_error(tmp_path)
    assert at_start.reason is ChainViolation.NON_INCREASING_VERSION
    assert at_start.path == path
    assert str(at_start) == str(_refresh_error(tmp_path, [(artifact, V2, "")]))


def test_a_lower_version_citing_a_later_non_head_is_a_fork(tmp_path: Path) -> None:
    artifact = "com.example.a"
    genesis = journal_text(artifact, V1)
    third = journal_text(artifact, V3, predecessor=digest(genesis))
    write_revision(tmp_path, artifact, V1, genesis)
    write_revision(tmp_path, artifact, V3, third)
    write_revision(tmp_path, artifact, V4, journal_text(artifact, V4, predecessor=digest(third)))
    path = write_revision(
        tmp_path, artifact, V2, journal_text(artifact, V2, predecessor=digest(third))
    )
    at_start = _start_error(tmp_path)
    assert at_start.reason is ChainViolation.FORK
    assert at_start.path == path
    assert str(at_start) == str(_refresh_error(tmp_path, [(artifact, V2, "")]))


def test_a_valid_root_still_loads_chronologically(tmp_path: Path) -> None:
    artifact = "com.example.a"
    texts = [journal_text(artifact, V1)]
    for version in (V2, V3):
        texts.append(journal_text(artifact, version, predecessor=digest(texts[-1])))
    for version, text in zip((V1, V2, V3), texts, strict=True):
        write_revision(tmp_path, artifact, version, text)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assert [str(r.version) for r in assembly.service.revisions(artifact)] == [V1, V2, V3]
