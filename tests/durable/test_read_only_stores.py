"""SQLite stores on read-only media: what only reads works, what must write says so.

A store is copied from one written beforehand (a Journal and a busy life of
durable state) and made read-only three ways: a read-only file system (its
directory mounted read-only: SQLite cannot create its WAL files beside it),
the file alone mounted read-only (the directory stays writable), and the
file's mode 0444 for a user who does not own it. Every command that only
reads must answer exactly what it answers on the writable store; every
command that must write fails with one line, exit 3, naming the store and
saying it is read-only, and leaves the file as it was.

The suite usually runs as root, and root writes through any file permission.
So read-only mounts are made in a mount namespace of the command's own
(``unshare --mount``, or with ``--map-root-user`` for another user): nothing
outside that one process sees them, and nothing is left mounted. File modes
are tried as ``nobody`` (``setpriv``), in a directory every user can reach.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from busy_state import live_a_busy_life

from nenjim.infrastructure.persistence import Persistence

PROJECT = Path(__file__).resolve().parents[2]
NAME = "sample"
COORD = "com.r35157.nenjim.hubd"
VERSION = "20260317T160000Z"
NEW_VERSION = "20270101T000000Z"


@dataclass(frozen=True)
class Written:
    """A store written beforehand, with the root it holds and a key to sign with."""

    url: str
    root: Path
    grown_root: Path
    key: Path


def _nenjim(*argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "NENJIM_STORE_URL": ""}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nenjim", *argv],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        cwd=PROJECT,
    )


@contextmanager
def _reachable_directory() -> Iterator[Path]:
    """A new directory every user can read (``nobody`` runs some commands, with this
    checkout's interpreter and code, which it must be able to reach); removed after."""
    directory = Path(tempfile.mkdtemp(prefix="nenjim-read-only-"))
    directory.chmod(0o755)
    try:
        with _traversable_by_all(PROJECT, Path(sys.executable)):
            yield directory
    finally:
        shutil.rmtree(directory)


@pytest.fixture(scope="module")
def written() -> Iterator[Written]:
    with _reachable_directory() as place:
        yield _write(place, f"sqlite://{place / 'store.db'}")


def _write(place: Path, url: str) -> Written:
    """A Journal and durable state in the store at ``url``, with the files around them."""
    root = place / "root"
    shutil.copytree(PROJECT / "data" / "sample" / "journals", root)
    done = _nenjim("journal", "verify", str(root), "--store", url, "--journal", NAME)
    assert done.returncode == 0, done.stderr
    persistence = Persistence.open(url)
    try:
        live_a_busy_life(persistence)
    finally:
        persistence.close()
    grown_root = place / "grown"
    shutil.copytree(root, grown_root)
    head = grown_root / COORD / f"{VERSION}.journal"
    digest = hashlib.sha256(head.read_bytes()).hexdigest()
    # A successor of the head: its text at a later version, naming the head.
    lines = [
        f"JOURNAL_VERSION {NEW_VERSION}"
        if line.startswith("JOURNAL_VERSION ")
        else f"PREDECESSOR sha256:{digest}"
        if line.startswith("PREDECESSOR ")
        else line
        for line in head.read_text(encoding="utf-8").split("\n")
    ]
    successor = "\n".join(lines)
    (grown_root / COORD / f"{NEW_VERSION}.journal").write_text(successor, encoding="utf-8")
    key = place / "signer.key"
    done = _nenjim("keys", "new", "--out", str(key), "sample.example")
    assert done.returncode == 0, done.stderr
    # Private (signing refuses a key others can read), and nobody's: one medium runs
    # the commands as nobody, and root reads it anyway.
    os.chown(key, pwd.getpwnam("nobody").pw_uid, -1)
    return Written(url, root, grown_root, key)


def _mounted_read_only(target: Path) -> tuple[str, ...]:
    """The command prefix that runs a command with ``target`` (a file or a directory)
    on a read-only bind mount of its own."""
    namespace = ("--mount",) if os.geteuid() == 0 else ("--map-root-user", "--mount")
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return ("unshare", *namespace, "sh", "-c", script, "sh", str(target))


def _as_another_user() -> tuple[str, ...]:
    """The command prefix that runs a command as a user file modes apply to."""
    if os.geteuid() != 0:
        return ()
    return ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")


@dataclass(frozen=True)
class Copy:
    """A fresh copy of the written store, and how to run a command where it is read-only."""

    store: Path
    url: str
    prefix: tuple[str, ...]
    outputs: Path
    written: Written


MEDIA = ["read-only file system", "read-only file", "file mode 0444"]


@contextmanager
def _traversable_by_all(*paths: Path) -> Iterator[None]:
    """Every directory above ``paths`` searchable by every user while inside (``nobody``
    runs this checkout's interpreter and code, which may sit in a directory only its
    owner may enter, as ``mktemp -d`` makes one); their modes are put back after."""
    changed: dict[Path, int] = {}
    for path in paths:
        for directory in path.absolute().parents:
            mode = directory.stat().st_mode
            if directory not in changed and not mode & stat.S_IXOTH:
                changed[directory] = stat.S_IMODE(mode)
                directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
    try:
        yield
    finally:
        for directory, mode in changed.items():
            directory.chmod(mode)


@pytest.fixture(params=MEDIA)
def copy(request: pytest.FixtureRequest, written: Written) -> Iterator[Copy]:
    with _reachable_directory() as place:
        media, outputs = place / "media", place / "outputs"
        media.mkdir()
        outputs.mkdir(mode=0o777)
        outputs.chmod(0o777)  # whatever the umask: nobody writes its output here
        store = media / "store.db"
        shutil.copyfile(written.url.removeprefix("sqlite://"), store)
        if request.param == "read-only file system":
            prefix = _mounted_read_only(media)
        elif request.param == "read-only file":
            prefix = _mounted_read_only(store)
        else:
            media.chmod(0o777)  # SQLite may put its WAL files beside the file
            store.chmod(0o444)
            prefix = _as_another_user()
        yield Copy(store, f"sqlite://{store}", prefix, outputs, written)


READS = {
    "journal audit": ["journal", "audit", "--store", "{url}", "--journal", NAME],
    "journal verify": ["journal", "verify", "{root}", "--store", "{url}", "--journal", NAME],
    "journal log": ["journal", "log", "{root}", COORD, "--store", "{url}", "--journal", NAME],
    "journal show": ["journal", "show", "{root}", COORD, "--store", "{url}", "--journal", NAME],
    "journal release": [
        "journal",
        "release",
        "{root}",
        COORD,
        "1.0.0",
        "--store",
        "{url}",
        "--journal",
        NAME,
    ],
    "journal checkpoint": ["journal", "checkpoint", "--store", "{url}", "--key", "{key}"],
    "journal prove": ["journal", "prove", COORD, VERSION, "--store", "{url}", "--key", "{key}"],
    "projections status": ["projections", "status", "--store", "{url}"],
    "storage audit": ["storage", "audit", "--store", "{url}"],
    "log export": ["log", "export", "--store", "{url}", "--out", "{out}"],
}

WRITES = {
    "projections rebuild journal-chains": [
        "projections",
        "rebuild",
        "journal-chains",
        "--store",
        "{url}",
    ],
    "projections rebuild agent-runs": ["projections", "rebuild", "agent-runs", "--store", "{url}"],
    "storage repair": ["storage", "repair", "--store", "{url}"],
    "journal verify, a new revision": [
        "journal",
        "verify",
        "{grown}",
        "--store",
        "{url}",
        "--journal",
        NAME,
    ],
}


def _argv(template: list[str], url: str, written: Written, out: Path) -> list[str]:
    values = {
        "{url}": url,
        "{root}": str(written.root),
        "{grown}": str(written.grown_root),
        "{key}": str(written.key),
        "{out}": str(out),
    }
    return [values.get(word, word) for word in template]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", list(READS))
def test_a_command_that_only_reads_works_on_read_only_media(command: str, copy: Copy) -> None:
    # What it answers on the writable store first (the store is caught up by then).
    writable = _nenjim(
        *_argv(READS[command], copy.url, copy.written, copy.outputs / "writable.out")
    )
    assert writable.returncode == 0, writable.stderr
    before = _sha256(copy.store)
    read_only = copy.outputs / "read-only.out"
    done = _nenjim(*_argv(READS[command], copy.url, copy.written, read_only), prefix=copy.prefix)
    assert (done.returncode, done.stderr) == (0, "")
    if command == "log export":
        assert read_only.read_bytes() == (copy.outputs / "writable.out").read_bytes()
    elif command != "journal checkpoint":  # a checkpoint signs the time it was made
        assert done.stdout == writable.stdout
    assert _sha256(copy.store) == before


@pytest.mark.parametrize("command", list(WRITES))
def test_a_command_that_must_write_says_the_store_is_read_only(command: str, copy: Copy) -> None:
    before = _sha256(copy.store)
    done = _nenjim(
        *_argv(WRITES[command], copy.url, copy.written, copy.outputs / "out"), prefix=copy.prefix
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("nenjim: error: ")
    assert str(copy.store) in done.stderr
    assert "read-only" in done.stderr
    assert _sha256(copy.store) == before


def test_an_import_into_a_read_only_directory_says_so(written: Written) -> None:
    with _reachable_directory() as place:
        exported, media = place / "store.log", place / "media"
        done = _nenjim("log", "export", "--store", written.url, "--out", str(exported))
        assert done.returncode == 0, done.stderr
        media.mkdir()
        target = media / "new.db"
        done = _nenjim(
            "log",
            "import",
            "--store",
            f"sqlite://{target}",
            str(exported),
            prefix=_mounted_read_only(media),
        )
        assert done.returncode == 3, done.stderr
        assert done.stderr.count("\n") == 1
        assert str(target) in done.stderr
        assert "read-only" in done.stderr
        assert list(media.iterdir()) == []


def test_a_store_sqlite_cannot_read_without_writing_beside_it_says_why(written: Written) -> None:
    # A directory this user cannot write, on a writable file system: SQLite reads a WAL
    # database through a -shm file it must create there, and nothing can read it as it is
    # (another user may write it meanwhile).
    with _reachable_directory() as place:
        media = place / "media"
        media.mkdir()
        store = media / "store.db"
        shutil.copyfile(written.url.removeprefix("sqlite://"), store)
        media.chmod(0o555)
        try:
            done = _nenjim(
                "journal", "audit", "--store", f"sqlite://{store}", prefix=_as_another_user()
            )
        finally:
            media.chmod(0o755)
        assert done.returncode == 3, done.stderr
        assert done.stderr == (
            f"nenjim: error: cannot read SQLite store {store}: SQLite must create "
            f"store.db-shm beside it, and directory {media} cannot be written\n"
        )


@pytest.fixture(scope="module")
def on_postgresql(postgres_url: str) -> Iterator[tuple[str, Written]]:
    """A store written on the suite's server (a schema of its own), and its files."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    url = urlunsplit(urlsplit(postgres_url)._replace(query=f"schema={schema}&pool_size=1"))
    try:
        with _reachable_directory() as place:
            yield url, _write(place, url)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# Every session of the server refuses to write, as a standby server does.
READ_ONLY_SESSIONS = "&options=-c%20default_transaction_read_only%3Don"


@pytest.mark.parametrize("command", list(READS))
def test_a_read_on_a_read_only_postgresql_server_answers_as_on_a_writable_one(
    command: str, on_postgresql: tuple[str, Written], tmp_path: Path
) -> None:
    # A server that only reads (a standby) is asked so on open: the log is then opened
    # as it is, with no DDL and no write, and every read answers whole.
    url, written = on_postgresql
    writable = _nenjim(*_argv(READS[command], url, written, tmp_path / "writable.out"))
    assert writable.returncode == 0, writable.stderr
    read_only = tmp_path / "read-only.out"
    done = _nenjim(*_argv(READS[command], url + READ_ONLY_SESSIONS, written, read_only))
    assert (done.returncode, done.stderr) == (0, "")
    if command == "log export":  # the same events: its first and last lines name the URL
        written_lines = (tmp_path / "writable.out").read_bytes().split(b"\n")
        assert read_only.read_bytes().split(b"\n")[1:-2] == written_lines[1:-2]
    elif command != "journal checkpoint":
        assert done.stdout == writable.stdout


@pytest.mark.parametrize("command", [name for name in WRITES if name != "storage repair"])
def test_a_write_on_a_read_only_postgresql_server_says_so_in_one_line(
    command: str, on_postgresql: tuple[str, Written], tmp_path: Path
) -> None:
    url, written = on_postgresql
    done = _nenjim(*_argv(WRITES[command], url + READ_ONLY_SESSIONS, written, tmp_path / "out"))
    assert (done.returncode, done.stdout) == (3, ""), done.stderr
    assert done.stderr.count("\n") == 1
    assert "is read-only" in done.stderr
