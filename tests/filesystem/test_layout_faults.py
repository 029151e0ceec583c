"""Faults of the tree under a root: each one a typed, one-line error naming the path."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from journal_texts import journal_text, write_revision
from nenjim.journal.exception import (
    JournalError,
    JournalFormatError,
    JournalLayoutError,
    JournalRootError,
)
from nenjim.journal.impl.ref import build_journal

A = "com.example.alpha"
B = "com.example.beta"
V1 = "20260101T000000Z"


def _start(root: Path) -> None:
    build_journal(root).process.start()


def _one_line(error: JournalError) -> str:
    message = str(error)
    assert len(message.splitlines()) == 1, message
    assert message.isprintable(), message
    return message


# --- symbolic links -----------------------------------------------------------------


def _artifact_loop(root: Path) -> Path:
    write_revision(root, A, V1, journal_text(A, V1))
    (root / B).symlink_to(root / B, target_is_directory=True)
    return root / B


def _file_loop(root: Path) -> Path:
    (root / A).mkdir()
    (root / A / f"{V1}.journal").symlink_to(f"{V1}.journal")
    return root / A / f"{V1}.journal"


def _loop_through_hidden_links(root: Path) -> Path:
    (root / ".links").mkdir()
    (root / ".links" / "one").symlink_to("two")
    (root / ".links" / "two").symlink_to("one")
    (root / A).mkdir()
    (root / A / f"{V1}.journal").symlink_to(root / ".links" / "one")
    return root / A / f"{V1}.journal"


def _loop_between_artifact_directories(root: Path) -> Path:
    (root / A).symlink_to(root / B, target_is_directory=True)
    (root / B).symlink_to(root / A, target_is_directory=True)
    return root / A


@pytest.mark.parametrize(
    "make",
    [_artifact_loop, _file_loop, _loop_through_hidden_links, _loop_between_artifact_directories],
)
def test_a_symbolic_link_loop_is_a_layout_error_naming_the_link(
    tmp_path: Path, make: Callable[[Path], Path]
) -> None:
    link = make(tmp_path)
    with pytest.raises(JournalLayoutError, match="symbolic link loop") as caught:
        _start(tmp_path)
    assert caught.value.path == link
    assert str(link) in _one_line(caught.value)


def test_a_root_that_is_a_symbolic_link_loop_is_a_root_error(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.symlink_to(root, target_is_directory=True)
    with pytest.raises(JournalRootError, match="symbolic link loop") as caught:
        _start(root)
    assert caught.value.path == root


def test_a_root_reached_through_a_symbolic_link_loads(tmp_path: Path) -> None:
    write_revision(tmp_path / "real", A, V1, journal_text(A, V1))
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assembly = build_journal(tmp_path / "link")
    assembly.process.start()
    assert {str(c) for c in assembly.service.coordinates()} == {A}


def test_a_dangling_artifact_directory_link_is_rejected(tmp_path: Path) -> None:
    (tmp_path / A).symlink_to(tmp_path / "gone", target_is_directory=True)
    with pytest.raises(JournalLayoutError, match="dangling symbolic link") as caught:
        _start(tmp_path)
    assert caught.value.path == tmp_path / A


def test_a_link_out_of_the_root_and_back_in_is_followed(tmp_path: Path) -> None:
    """Only where a link finally resolves counts, not the way it takes."""
    root = tmp_path / "root"
    write_revision(root / ".store", A, V1, journal_text(A, V1))
    (tmp_path / "outside").symlink_to(root / ".store" / A, target_is_directory=True)
    (root / A).symlink_to(tmp_path / "outside", target_is_directory=True)
    assembly = build_journal(root)
    assembly.process.start()
    assert len(assembly.service.revisions(A)) == 1


def test_a_link_into_a_directory_outside_the_root_names_the_link(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_revision(tmp_path / "outside", A, V1, journal_text(A, V1))
    root.mkdir()
    (root / A).symlink_to(tmp_path / "outside" / A, target_is_directory=True)
    with pytest.raises(JournalLayoutError, match="outside the journal root") as caught:
        _start(root)
    assert caught.value.path == root / A


# --- permissions (simulated: the suite may run as root, which reads everything) -----


def _deny(monkeypatch: pytest.MonkeyPatch, name: str, denied: Path) -> None:
    """Make ``os.<name>`` refuse ``denied`` as the kernel would without permission."""
    real = getattr(os, name)

    def refuse(path: object, *args: object, **kwargs: object) -> object:
        if Path(os.fspath(path)) == denied:  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, refuse)


def test_an_unreadable_artifact_directory_is_a_layout_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    _deny(monkeypatch, "scandir", tmp_path / A)
    with pytest.raises(JournalLayoutError, match="cannot read directory: Permission denied") as e:
        _start(tmp_path)
    assert e.value.path == tmp_path / A


class _UnexaminableEntry:
    """A listed entry whose type the listing did not give and whose status is refused.

    What a file system without entry types shows for a name in a directory that
    is readable but not searchable.
    """

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name = entry.name
        self.path = entry.path

    def _refuse(self, *args: object, **kwargs: object) -> bool:
        raise PermissionError(13, "Permission denied", self.path)

    is_symlink = is_file = is_dir = stat = _refuse


def _list_unexaminable(monkeypatch: pytest.MonkeyPatch, denied: Path) -> None:
    real = os.scandir

    class Listing:
        def __init__(self, directory: object) -> None:
            self._listing = real(directory)  # type: ignore[call-overload]

        def __enter__(self) -> Iterator[object]:
            entries = self._listing.__enter__()
            return (_UnexaminableEntry(e) if Path(e.path) == denied else e for e in entries)

        def __exit__(self, *args: object) -> None:
            self._listing.__exit__(*args)

    monkeypatch.setattr(os, "scandir", Listing)


def test_an_entry_that_cannot_be_examined_is_a_layout_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_revision(tmp_path, A, V1, journal_text(A, V1))
    _list_unexaminable(monkeypatch, path)
    with pytest.raises(JournalLayoutError, match="cannot access: Permission denied") as caught:
        _start(tmp_path)
    assert (caught.value.artifact, caught.value.path) == (A, path)


def test_an_artifact_directory_that_cannot_be_examined_is_a_layout_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    _list_unexaminable(monkeypatch, tmp_path / A)
    with pytest.raises(JournalLayoutError, match="cannot access: Permission denied") as caught:
        _start(tmp_path)
    assert caught.value.path == tmp_path / A


def test_an_unreadable_file_is_a_layout_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory readable but not searchable: the name is listed, opening it is refused."""
    path = write_revision(tmp_path, A, V1, journal_text(A, V1))
    real = os.open

    def refuse(file: str | os.PathLike[str], *args: Any, **kwargs: Any) -> int:
        if Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(JournalLayoutError, match="cannot read file: Permission denied") as caught:
        _start(tmp_path)
    assert caught.value.path == path


def test_a_root_that_cannot_be_examined_is_a_root_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    _deny(monkeypatch, "stat", root)
    with pytest.raises(JournalRootError, match="cannot access the journal root") as caught:
        _start(root)
    assert caught.value.path == root


# --- names and texts holding control characters ------------------------------------

CONTROL = ["\n", "\r", "\x1b[31m", "\x7f", "\x85", "\u2028", "\t"]


@pytest.mark.parametrize("control", CONTROL, ids=repr)
def test_a_directory_name_with_a_control_character_gives_one_line(
    tmp_path: Path, control: str
) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    (tmp_path / f"com.example{control}x").mkdir()
    with pytest.raises(JournalLayoutError, match="not an artifact coordinate") as caught:
        _start(tmp_path)
    message = _one_line(caught.value)
    assert control.encode("unicode_escape").decode() in message
    assert caught.value.path == tmp_path / f"com.example{control}x"  # the real name stays


@pytest.mark.parametrize("control", CONTROL, ids=repr)
def test_a_file_name_with_a_control_character_gives_one_line(tmp_path: Path, control: str) -> None:
    write_revision(tmp_path, A, V1, journal_text(A, V1))
    (tmp_path / A / f"2026{control}.journal").write_text("x")
    with pytest.raises(JournalLayoutError, match="file name is not") as caught:
        _start(tmp_path)
    _one_line(caught.value)


@pytest.mark.parametrize("control", CONTROL, ids=repr)
def test_a_root_path_with_a_control_character_gives_one_line(tmp_path: Path, control: str) -> None:
    root = tmp_path / f"r{control}oot"
    (root / A).mkdir(parents=True)
    (root / A / "stray.txt").write_text("x")
    with pytest.raises(JournalLayoutError, match="unexpected entry") as caught:
        _start(root)
    _one_line(caught.value)


def test_a_link_target_with_a_control_character_gives_one_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "out\nside"
    write_revision(outside, A, V1, journal_text(A, V1))
    root.mkdir()
    (root / A).symlink_to(outside / A, target_is_directory=True)
    with pytest.raises(JournalLayoutError, match="outside the journal root") as caught:
        _start(root)
    assert "out\\nside" in _one_line(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "NENJIM-JOURNAL 1\u2028\n",  # the argument holds a line separator
        "NENJIM-JOURNAL 7\x85\n",
        f"NENJIM-JOURNAL 1\nARTIFACT {A}\u2028\n",
        f'NENJIM-JOURNAL 1\nARTIFACT {A}\nJOURNAL_VERSION {V1}\nDESCRIPTION "a\\\u2028"\n',
        f"NENJIM-JOURNAL 1\nARTIFACT {A}\nJOURNAL_VERSION {V1}\n"
        "RELEASE 1.0.0\n  LICENSE MIT\u2029\n",
    ],
    ids=["magic", "format-version", "artifact", "escape", "license"],
)
def test_errors_quoting_file_content_are_one_line(tmp_path: Path, text: str) -> None:
    write_revision(tmp_path, A, V1, text)
    with pytest.raises((JournalFormatError, JournalError)) as caught:
        _start(tmp_path)
    _one_line(caught.value)
