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

from nenjim.domain.transparency.errors import InvalidLeafError

_FIELD = re.compile(r"[\x21-\x7e]+")
_LEAF = re.compile(rb"([\x21-\x7e]+) ([\x21-\x7e]+) sha256:([0-9a-f]{64})\n")
_DIGEST_SIZE = 32

# Checking many leaf lines at once (``check_leaf_lines``): the bytes are first
# mapped to classes (printable ASCII but space to ``x``, space and newline to
# themselves, anything else to ``!``), because the regular expression engine
# matches a literal several times faster than a character set. Possessive
# throughout: each byte is read once, whatever the input (a hostile log's too).
_CLASSES = bytes(
    byte if byte in b" \n" else ord("x") if 0x21 <= byte <= 0x7E else ord("!")
    for byte in range(256)
)
_TAIL = b"sha256:"
_TAIL_SIZE = len(_TAIL) + 2 * _DIGEST_SIZE
_CLASS_LINES = re.compile(rb"(?:x++ x++ x{%d}\n)*+" % _TAIL_SIZE)
_HEX = b"0123456789abcdef"
_TAIL_NOT_HEX = bytes(byte for byte in _TAIL if byte not in _HEX)


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

    A verifier checks every entry of a log, and a few passes over all of them
    at once cost a fraction of parsing each. Each entry ends with a newline and
    there are as many newlines as entries, so each entry is one line; mapped
    to classes, every line is two printable runs, each followed by a space,
    then 71 printable bytes and the newline; and those 71 are ``sha256:`` and
    64 lowercase hex digits. Raises the ``InvalidLeafError`` of the first entry
    that is not a leaf line.
    """
    count = len(entries)
    joined = b"".join(entries)
    if (
        joined.count(b"\n") != count
        or not all(map(bytes.endswith, entries, repeat(b"\n")))
        or _CLASS_LINES.fullmatch(joined.translate(_CLASSES)) is None
        or not _tails_are_digests([entry[-1 - _TAIL_SIZE : -1] for entry in entries])
    ):
        # One of them is not a leaf line: parsing each names the first.
        for entry in entries:
            JournalLeaf.parse(entry)


def _tails_are_digests(tails: list[bytes]) -> bool:
    """Whether every tail (71 bytes) is ``sha256:`` and 64 lowercase hex digits."""
    joined = b"".join(tails)
    count = len(tails)
    # Column k of the tails, read with a stride, is byte k of every tail.
    return (
        len(joined) == count * _TAIL_SIZE
        and all(
            joined[column::_TAIL_SIZE] == bytes((byte,)) * count
            for column, byte in enumerate(_TAIL)
        )
        and joined.translate(None, _HEX) == _TAIL_NOT_HEX * count
    )
