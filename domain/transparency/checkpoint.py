"""C2SP tlog-checkpoint: the signed head of a transparency log.

A checkpoint body is a note text of at least three non-empty lines, each
ending in a newline: the origin (the log's name), the tree size in decimal
without leading zeros, the root hash in standard base64 with padding, then
optional extension lines. The body is signed as a signed note.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass

from nenjim.domain.transparency.errors import InvalidCheckpointError
from nenjim.domain.transparency.merkle import HASH_SIZE
from nenjim.domain.transparency.note import SignerKey, VerifierKey, open_note, sign_note

MAX_TREE_SIZE = (1 << 63) - 1
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def _line_problem(line: str) -> str | None:
    if not line:
        return "is empty"
    if "\n" in line:
        return "contains a newline"
    if any(character < " " for character in line):
        return "contains a control character"
    return None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A log's origin, tree size and root hash, plus optional extension lines."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problem = _line_problem(self.origin)
        if problem is not None:
            raise InvalidCheckpointError(f"checkpoint origin {self.origin!r} {problem}")
        if not 0 <= self.size <= MAX_TREE_SIZE:
            raise InvalidCheckpointError(
                f"checkpoint tree size {self.size} is not in [0, {MAX_TREE_SIZE}]"
            )
        if len(self.root_hash) != HASH_SIZE:
            raise InvalidCheckpointError(
                f"checkpoint root hash is {len(self.root_hash)} bytes, not {HASH_SIZE}"
            )
        for position, extension in enumerate(self.extensions):
            problem = _line_problem(extension)
            if problem is not None:
                raise InvalidCheckpointError(
                    f"checkpoint extension line {position + 1} ({extension!r}) {problem}"
                )

    def body(self) -> str:
        """The note text: origin, size, base64 root hash and extensions, one per line."""
        root = base64.b64encode(self.root_hash).decode("ascii")
        return "".join(
            f"{line}\n" for line in (self.origin, str(self.size), root, *self.extensions)
        )

    @classmethod
    def parse(cls, body: str | bytes) -> Checkpoint:
        """Read a checkpoint body strictly; any deviation raises ``InvalidCheckpointError``."""
        if isinstance(body, bytes):
            try:
                body = body.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidCheckpointError(
                    f"checkpoint is not valid UTF-8 at byte {error.start}"
                ) from error
        if not body.endswith("\n"):
            raise InvalidCheckpointError("checkpoint body does not end with a newline")
        lines = body[:-1].split("\n")
        if len(lines) < 3:
            raise InvalidCheckpointError(
                f"checkpoint body has {len(lines)} lines; origin, tree size and root hash "
                "are required"
            )
        for number, line in enumerate(lines, start=1):
            problem = _line_problem(line)
            if problem is not None:
                raise InvalidCheckpointError(f"checkpoint line {number} {problem}")
        origin, size_text, root_text, *extensions = lines
        if not _DECIMAL.fullmatch(size_text) or int(size_text) > MAX_TREE_SIZE:
            raise InvalidCheckpointError(
                f"checkpoint line 2: tree size {size_text!r} is not a decimal number in "
                f"[0, {MAX_TREE_SIZE}] without leading zeros"
            )
        try:
            root = base64.b64decode(root_text, validate=True)
        except (binascii.Error, ValueError):
            root = b""
        if len(root) != HASH_SIZE or base64.b64encode(root).decode("ascii") != root_text:
            raise InvalidCheckpointError(
                f"checkpoint line 3: root hash {root_text!r} is not the standard base64 "
                f"of {HASH_SIZE} bytes"
            )
        return cls(origin, int(size_text), root, tuple(extensions))


def sign_checkpoint(checkpoint: Checkpoint, *signers: SignerKey) -> str:
    """The checkpoint as a signed note."""
    return sign_note(checkpoint.body(), *signers)


def open_checkpoint(
    message: str | bytes, verifiers: Iterable[VerifierKey], *, origin: str | None = None
) -> Checkpoint:
    """Verify a signed checkpoint note and read its body.

    With ``origin``, a checkpoint of another log (another origin line) is
    refused, even when a known key signed it.
    """
    checkpoint = Checkpoint.parse(open_note(message, verifiers).text)
    if origin is not None and checkpoint.origin != origin:
        raise InvalidCheckpointError(
            f"checkpoint is for origin {checkpoint.origin!r}, expected {origin!r}"
        )
    return checkpoint
