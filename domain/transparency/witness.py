"""C2SP tlog-witness: the ``add-checkpoint`` request, and the checks a witness makes on it.

A request body is ``old <size>\\n``, zero to 63 lines of one base64 hash each
(a consistency proof from the old size), an empty line, then a signed
checkpoint note. :func:`witness_checkpoint` decides, with nothing but the
request, the log's keys and the last checkpoint the witness cosigned for the
origin, whether the checkpoint may be cosigned; each refusal is its own
error, which the protocol answers with its own HTTP status (see
:data:`REFUSAL_STATUS`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nenjim.domain.transparency.checkpoint import Checkpoint
from nenjim.domain.transparency.errors import (
    InconsistentCheckpointError,
    InvalidCheckpointError,
    InvalidNoteError,
    InvalidProofError,
    InvalidWitnessRequestError,
    OldSizeMismatchError,
    UnknownLogError,
    UntrustedCheckpointError,
    WitnessRefusalError,
)
from nenjim.domain.transparency.merkle import EMPTY_ROOT, HASH_SIZE, verify_consistency
from nenjim.domain.transparency.note import VerifierKey, open_note

MAX_PROOF_LINES = 63
SIZE_MEDIA_TYPE = "text/x.tlog.size"
_OLD_LINE = re.compile(r"old (0|[1-9][0-9]*)")

REFUSAL_STATUS: Mapping[type[WitnessRefusalError], int] = {
    InvalidWitnessRequestError: 400,
    UntrustedCheckpointError: 403,
    UnknownLogError: 404,
    OldSizeMismatchError: 409,
    InconsistentCheckpointError: 422,
}
"""The HTTP status of each refusal, as the protocol prescribes."""


@dataclass(frozen=True, slots=True)
class AddCheckpoint:
    """An ``add-checkpoint`` request: the old size, the consistency proof, the signed note."""

    old_size: int
    proof: tuple[bytes, ...]
    note: str

    def encode(self) -> bytes:
        """The request body."""
        lines = [f"old {self.old_size}\n"]
        lines += [base64.b64encode(node).decode("ascii") + "\n" for node in self.proof]
        return ("".join(lines) + "\n" + self.note).encode("utf-8")

    @classmethod
    def parse(cls, body: bytes) -> AddCheckpoint:
        """Read a request body strictly (:class:`InvalidWitnessRequestError` if malformed)."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidWitnessRequestError(
                f"add-checkpoint body is not UTF-8 at byte {error.start}"
            ) from None
        head, blank, note = text.partition("\n\n")
        if not blank:
            raise InvalidWitnessRequestError(
                "add-checkpoint body has no empty line before the checkpoint"
            )
        old_line, *proof_lines = head.split("\n")
        matched = _OLD_LINE.fullmatch(old_line)
        if matched is None:
            raise InvalidWitnessRequestError(
                f"add-checkpoint line 1 {old_line[:40]!r} is not 'old <size>' "
                "(decimal, no leading zeros)"
            )
        if len(proof_lines) > MAX_PROOF_LINES:
            raise InvalidWitnessRequestError(
                f"add-checkpoint has {len(proof_lines)} proof lines, more than {MAX_PROOF_LINES}"
            )
        proof = tuple(_proof_hash(line, number) for number, line in enumerate(proof_lines, start=2))
        return cls(int(matched.group(1)), proof, note)


def _proof_hash(line: str, number: int) -> bytes:
    try:
        node = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError):
        node = b""
    if len(node) != HASH_SIZE or base64.b64encode(node).decode("ascii") != line:
        raise InvalidWitnessRequestError(
            f"add-checkpoint line {number} is not the base64 of a {HASH_SIZE}-byte hash"
        )
    return node


@dataclass(frozen=True, slots=True)
class TreeHead:
    """A log's size and root hash, as a witness records the last one it cosigned."""

    size: int
    root_hash: bytes


def witness_checkpoint(
    request: AddCheckpoint,
    logs: Mapping[str, Sequence[VerifierKey]],
    latest: Mapping[str, TreeHead],
) -> Checkpoint:
    """The checkpoint of ``request`` if a witness may cosign it, else the refusal.

    ``logs``: the verifier keys the witness trusts, by origin; ``latest``: the
    last checkpoint it cosigned, by origin (none: never cosigned, old size 0).
    The caller must record the answer's size and root for its origin atomically
    with reading ``latest``, so that two requests cannot both advance it.
    """
    checkpoint = _checkpoint(request.note, logs)
    if request.old_size > checkpoint.size:
        raise InvalidWitnessRequestError(
            f"old size {request.old_size} is above the checkpoint's size {checkpoint.size}"
        )
    if request.old_size == 0 and request.proof:
        raise InvalidWitnessRequestError("a consistency proof from old size 0 must be empty")
    recorded = latest.get(checkpoint.origin, TreeHead(0, EMPTY_ROOT))
    if request.old_size != recorded.size:
        raise OldSizeMismatchError(recorded.size, checkpoint.origin)
    if recorded.size == checkpoint.size and recorded.root_hash != checkpoint.root_hash:
        raise OldSizeMismatchError(recorded.size, checkpoint.origin)
    try:
        verify_consistency(
            recorded.size, checkpoint.size, recorded.root_hash, checkpoint.root_hash, request.proof
        )
    except InvalidProofError as error:
        raise InconsistentCheckpointError(f"{checkpoint.origin}: {error}") from None
    return checkpoint


def _checkpoint(note: str, logs: Mapping[str, Sequence[VerifierKey]]) -> Checkpoint:
    first_line = note.partition("\n")[0]
    if first_line not in logs:
        raise UnknownLogError(f"unknown log origin {first_line[:80]!r}")
    try:
        opened = open_note(note, logs[first_line])
    except InvalidNoteError as error:
        if type(error) is InvalidNoteError:
            raise InvalidWitnessRequestError(f"checkpoint note: {error}") from None
        raise UntrustedCheckpointError(
            f"checkpoint of {first_line!r} has no valid signature by its log's key: {error}"
        ) from None
    try:
        return Checkpoint.parse(opened.text)
    except InvalidCheckpointError as error:
        raise InvalidWitnessRequestError(str(error)) from None


def size_answer(size: int) -> str:
    """The 409 answer's body (``text/x.tlog.size``): the recorded size and a newline."""
    return f"{size}\n"


def parse_size_answer(text: str) -> int:
    """The size in a 409 answer's body (:class:`InvalidWitnessRequestError` if malformed)."""
    matched = re.fullmatch(r"(0|[1-9][0-9]*)\n", text)
    if matched is None:
        raise InvalidWitnessRequestError(f"witness size answer {text[:40]!r} is not a size line")
    return int(matched.group(1))
