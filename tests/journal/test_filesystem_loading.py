"""Loading ``<root>/<coordinate>/<journal-version>.journal``: every rule of "On disk"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from journal_texts import Chain, Rel, content, digest, journal_text, write_chain, write_revision
from nenjim.journal.exception import JournalFormatError, JournalLayoutError, JournalRootError
from nenjim.journal.impl.ref import build_journal

A = "com.example.alpha"
V1, V2 = "20260101T000000Z", "20260201T000000Z"


def _start(root: Path) -> object:
    assembly = build_journal(root)
    assembly.process.start()
    return assembly.service


def _tree(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under ``root`` with its bytes (files) and mtime, to prove nothing changed."""
    result: dict[str, tuple[bytes | None, int]] = {}
    for path in sorted(root.rglob("*")):
        stat = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        result[str(path)] = (data, stat.st_mtime_ns)
    return result


def test_genesis_and_successor_load_in_chronological_order(tmp_path: Path) -> None:
    chain = Chain(A)
    chain.add(V1, (Rel("1.0.0", content(1)),))
    chain.add(V2, (Rel("1.0.0", content(1)),))
    write_chain(tmp_path, chain)
    service = build_journal(tmp_path)
    service.process.start()
    assert [str(r.version) for r in service.service.revisions(A)] == [V1, V2]


def test_digest_covers_exact_crlf_bytes(tmp_path: Path) -> None:
    text = journal_text(A, V1, releases=(Rel("1.0.0"),), newline="\r\n")
    write_revision(tmp_path, A, V1, text)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    latest = assembly.service.latest(A)
    assert latest is not None
    assert str(latest.digest) == digest(text)
    assert str(latest.digest) != digest(text.replace("\r\n", "\n"))
    assert latest.text == text


@pytest.mark.parametrize("releases", [1, 700, 1500])  # 1, 2 and 3 reads of 64 KiB
def test_files_of_any_size_are_read_whole(tmp_path: Path, releases: int) -> None:
    text = journal_text(A, V1, releases=tuple(Rel(f"1.0.{n}", content(n)) for n in range(releases)))
    write_revision(tmp_path, A, V1, text)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    latest = assembly.service.latest(A)
    assert latest is not None
    assert latest.text == text
    assert str(latest.digest) == digest(text)
    assert len(latest.releases) == releases


def test_crlf_successor_links_to_crlf_predecessor_digest(tmp_path: Path) -> None:
    genesis = journal_text(A, V1, newline="\r\n")
    write_revision(tmp_path, A, V1, genesis)
    write_revision(tmp_path, A, V2, journal_text(A, V2, predecessor=digest(genesis)))
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assert len(assembly.service.revisions(A)) == 2


def test_examples_and_hidden_names_are_ignored(tmp_path: Path) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    (tmp_path / A / f"{V2}.journal.example").write_text("not even a journal")
    (tmp_path / A / ".editor-swap").write_text("junk")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref")
    (tmp_path / ".DS_Store").write_text("junk")
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assert len(assembly.service.revisions(A)) == 1


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda r: (r / "README.md").write_text("x"), "expected artifact directories only"),
        (lambda r: (r / "Not_A_Coordinate").mkdir(), "not an artifact coordinate"),
        (lambda r: (r / "single").mkdir(), "not an artifact coordinate"),
        (lambda r: (r / A / "notes.txt").write_text("x"), "unexpected entry"),
        (lambda r: (r / A / "sub").mkdir(), "unexpected entry"),
        (lambda r: (r / A / "2026-01-01.journal").write_text("x"), "file name is not"),
        (lambda r: (r / A / "20260101T000000.journal").write_text("x"), "file name is not"),
        (lambda r: (r / A / "20261301T000000Z.journal").write_text("x"), "file name is not"),
        (
            lambda r: (r / A / "20250229T000000Z.journal").write_text("x"),
            "file name is not.*real UTC",
        ),
        (lambda r: (r / A / "20260101T000000Z.JOURNAL").write_text("x"), "unexpected entry"),
        (lambda r: (r / A / "20260101T000000Z.journal.bak").write_text("x"), "unexpected entry"),
        (lambda r: (r / A / "20260301T000000Z.journal").mkdir(), "not a regular file"),
    ],
)
def test_unexpected_entries_fail(tmp_path: Path, make: object, message: str) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    make(tmp_path)  # type: ignore[operator]
    with pytest.raises(JournalLayoutError, match=message):
        _start(tmp_path)


def test_artifact_must_match_its_directory(tmp_path: Path) -> None:
    path = write_revision(tmp_path, "com.example.other", V1, journal_text(A, V1))
    with pytest.raises(JournalLayoutError, match="differs from its directory") as caught:
        _start(tmp_path)
    assert caught.value.path == path


def test_journal_version_must_match_its_file_name(tmp_path: Path) -> None:
    path = write_revision(tmp_path, A, V2, journal_text(A, V1))
    with pytest.raises(JournalLayoutError, match="differs from its file name") as caught:
        _start(tmp_path)
    assert caught.value.path == path
    assert str(path) in str(caught.value)


def test_parse_errors_name_artifact_file_and_line(tmp_path: Path) -> None:
    text = journal_text(A, V1) + "RELEASE 1.0.0\n  LICENSE NotALicense\n  CONTENT " + content(1)
    path = write_revision(tmp_path, A, V1, text)
    with pytest.raises(JournalFormatError) as caught:
        _start(tmp_path)
    error = caught.value
    assert (error.artifact, error.path, error.line) == (A, path, 5)
    message = str(error)
    assert "\n" not in message
    assert all(part in message for part in (A, str(path), "line 5", "NotALicense"))


def test_error_before_the_artifact_line_names_the_directory_artifact(tmp_path: Path) -> None:
    path = write_revision(tmp_path, A, V1, "NENJIM-JOURNAL 7\n")
    with pytest.raises(JournalFormatError, match="unsupported format version") as caught:
        _start(tmp_path)
    assert (caught.value.artifact, caught.value.path, caught.value.line) == (A, path, 1)


def test_invalid_utf8_is_a_format_error_with_line(tmp_path: Path) -> None:
    data = journal_text(A, V1).encode() + b'DESCRIPTION "caf\xe9"\n'
    write_revision(tmp_path, A, V1, data)
    with pytest.raises(JournalFormatError, match="UTF-8") as caught:
        _start(tmp_path)
    assert caught.value.line == 4


def test_symlinks_inside_the_root_are_followed(tmp_path: Path) -> None:
    store = tmp_path / "root" / ".store"
    store.mkdir(parents=True)
    text = journal_text(A, V1)
    (store / "genesis").write_text(text)
    directory = tmp_path / "root" / A
    directory.mkdir()
    (directory / f"{V1}.journal").symlink_to(store / "genesis")
    other = "com.example.beta"
    (store / other).mkdir()
    (store / other / f"{V1}.journal").write_text(journal_text(other, V1))
    (tmp_path / "root" / other).symlink_to(store / other, target_is_directory=True)
    assembly = build_journal(tmp_path / "root")
    assembly.process.start()
    assert {str(c) for c in assembly.service.coordinates()} == {A, other}


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_symlinks_leaving_the_root_are_rejected(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "file":
        (outside / "x.journal").write_text(journal_text(A, V1))
        (root / A).mkdir(parents=True)
        (root / A / f"{V1}.journal").symlink_to(outside / "x.journal")
    else:
        (outside / f"{V1}.journal").write_text(journal_text(A, V1))
        root.mkdir()
        (root / A).symlink_to(outside, target_is_directory=True)
    with pytest.raises(JournalLayoutError, match="outside the journal root"):
        _start(root)


def test_dangling_symlink_is_rejected(tmp_path: Path) -> None:
    (tmp_path / A).mkdir()
    (tmp_path / A / f"{V1}.journal").symlink_to(tmp_path / A / "gone")
    with pytest.raises(JournalLayoutError, match="dangling"):
        _start(tmp_path)


def test_missing_root_fails_without_creating_it(tmp_path: Path) -> None:
    root = tmp_path / "absent"
    with pytest.raises(JournalRootError, match="does not exist"):
        _start(root)
    assert not root.exists()


def test_root_that_is_a_file_fails(tmp_path: Path) -> None:
    root = tmp_path / "file"
    root.write_text("x")
    with pytest.raises(JournalRootError, match="not a directory"):
        _start(root)


def test_unreadable_root_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "locked"
    root.mkdir()
    if os.geteuid() != 0:
        root.chmod(0)
    else:
        # Root reads any directory, so the kernel's refusal is simulated at the
        # one call that lists the root.
        real_scandir = os.scandir

        def refuse(path: object) -> object:
            if Path(str(path)) == root:
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "scandir", refuse)
    try:
        with pytest.raises(JournalRootError, match="cannot read directory"):
            _start(root)
    finally:
        root.chmod(0o755)


def test_loading_never_changes_the_disk(tmp_path: Path) -> None:
    chain = Chain(A)
    chain.add(V1)
    chain.add(V2)
    write_chain(tmp_path, chain)
    (tmp_path / A / "20260301T000000Z.journal.example").write_text("example")
    before = _tree(tmp_path)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assembly.manager.refresh()
    assert _tree(tmp_path) == before


def test_manager_reports_the_normalised_absolute_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assembly = build_journal("../b/./c/..")
    assert assembly.manager.journal_root == tmp_path / "b"
    assert assembly.manager.journal_root.is_absolute()
