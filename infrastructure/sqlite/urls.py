"""SQLite store URLs: ``sqlite:///abs/path.db`` or ``sqlite:relative.db`` (to the working
directory), one file and no parameters (a ``?`` or ``#`` in a file name is written ``%3F``,
``%23``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from nenjim.infrastructure.store.urls import UnsupportedStoreError


def sqlite_env(url: str) -> dict[str, str]:
    """The ``eventsourcing`` environment of the SQLite store at ``url``, checked."""

    def invalid(reason: str) -> UnsupportedStoreError:
        return UnsupportedStoreError(f"invalid SQLite URL {url!r}: {reason}")

    rest = url.removeprefix("sqlite:")
    if "?" in rest or "#" in rest:
        raise invalid("an SQLite URL takes no parameters (write '?' as %3F, '#' as %23)")
    if rest.startswith("//"):
        if not rest.startswith("///"):
            raise invalid("expected 'sqlite:///absolute/path.db'")
        # sqlite:///abs/path.db; a fourth slash (sqlite:////abs) is tolerated.
        rest = "/" + rest[3:].lstrip("/")
    try:
        name = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        raise invalid("its percent-encoded bytes are not UTF-8") from None
    if "\x00" in name:
        raise invalid("a file name cannot hold a NUL (%00)")
    if name.rpartition("/")[2] in ("", ".", ".."):
        raise invalid("no database file named")
    return {
        "SQLITE_DBNAME": str(Path(name).absolute()),
        "SQLITE_LOCK_TIMEOUT": "30",
    }
