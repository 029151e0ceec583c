"""The leaf data of one Journal revision in the transparency log.

A revision's leaf is the UTF-8 line ``<coordinate> <journal-version>
sha256:<64 lowercase hex>\\n``, the hex being the SHA-256 of the revision's
exact bytes. Coordinate and journal version are printable ASCII without
spaces, so the line splits back into its three fields one way only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from domain.transparency.errors import InvalidLeafError

_FIELD = re.compile(r"[\x21-\x7e]+")
_LEAF = re.compile(rb"([\x21-\x7e]+) ([\x21-\x7e]+) sha256:([0-9a-f]{64})\n")
# Possessive throughout: each byte is read once, whatever the input (a hostile log's too).
_LEAF_LINES = re.compile(rb"(?:[\x21-\x7e]++ [\x21-\x7e]++ sha256:[0-9a-f]{64}\n)*+")
_DIGEST_SIZE = 32


@dataclass(frozen=True, slots=True)
class JournalLeaf:
    """What the log records of a revision: coordinate, journal version, text digest."""

    coordinate: str
    journal_version: str
    digest: bytes

    def __post_init__(self) -> None:
        for what, value in (
            ("coordinate", self.coordinate),
            ("journal version", self.journal_version),
        ):
            if not _FIELD.fullmatch(value):
                raise InvalidLeafError(
                    f"journal leaf {what} {value!r} is not non-empty printable ASCII without spaces"
                )
        if len(self.digest) != _DIGEST_SIZE:
            raise InvalidLeafError(
                f"journal leaf digest for {self.coordinate} {self.journal_version} is "
                f"{len(self.digest)} bytes, not {_DIGEST_SIZE}"
            )

    @classmethod
    def of_revision(cls, coordinate: str, journal_version: str, revision: bytes) -> JournalLeaf:
        """The leaf of a revision whose exact bytes are ``revision``."""
        return cls(coordinate, journal_version, hashlib.sha256(revision).digest())

    @classmethod
    def parse(cls, data: bytes) -> JournalLeaf:
        """Read leaf data back; anything but the exact leaf line is refused."""
        match = _LEAF.fullmatch(data)
        if match is None:
            raise InvalidLeafError(
                f"not a journal leaf line (<coordinate> <journal-version> "
                f"sha256:<64 lowercase hex>, newline): {data[:200]!r}"
            )
        coordinate, version, digest = match.groups()
        return cls(
            coordinate.decode("ascii"), version.decode("ascii"), bytes.fromhex(digest.decode())
        )

    def data(self) -> bytes:
        """The leaf data: the UTF-8 leaf line, newline included."""
        return f"{self.coordinate} {self.journal_version} sha256:{self.digest.hex()}\n".encode()


def journal_leaf_data(coordinate: str, journal_version: str, revision: bytes) -> bytes:
    """The leaf data of revision ``revision`` (exact bytes) of ``coordinate`` at a version."""
    return JournalLeaf.of_revision(coordinate, journal_version, revision).data()


def check_leaf_lines(entries: Sequence[bytes]) -> None:
    """Refuse entries unless each is exactly one leaf line (what ``JournalLeaf.parse`` accepts).

    A verifier checks every entry of a log: one match over all of them at once
    costs a fraction of parsing each. The joined bytes are a run of leaf lines,
    each entry ends with a newline and there are as many newlines as entries,
    so no entry holds two lines or part of one. Raises the ``InvalidLeafError``
    of the first entry that is not a leaf line.
    """
    joined = b"".join(entries)
    if (
        _LEAF_LINES.fullmatch(joined) is None
        or joined.count(b"\n") != len(entries)
        or not all(map(bytes.endswith, entries, repeat(b"\n")))
    ):
        # One of them is not a leaf line: parsing each names the first.
        for entry in entries:
            JournalLeaf.parse(entry)
