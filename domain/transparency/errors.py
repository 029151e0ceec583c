"""The transparency log's exception family.

Every error is one line: it says what was wrong and where (which proof, tile
path, key, note line), and quotes untrusted input with ``repr`` so that a
newline in the input can never split the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nenjim.domain.transparency.note import Note


class TransparencyError(Exception):
    """Base of every error raised by ``nenjim.domain.transparency``."""


class InvalidProofRequestError(TransparencyError, ValueError):
    """A proof or tree head was asked for impossible sizes or indexes."""


class InvalidProofError(TransparencyError):
    """An inclusion or consistency proof does not prove what it claims."""


class InvalidHashError(TransparencyError, ValueError):
    """A value given as a SHA-256 hash is not 32 bytes."""


class HashSourceError(TransparencyError):
    """A hash source answered a node request with the wrong number or size of hashes."""


class InvalidTilePathError(TransparencyError, ValueError):
    """A tile or entry bundle path is not in the canonical C2SP tlog-tiles form."""


class InvalidTileError(TransparencyError, ValueError):
    """Tile bytes or tile coordinates do not fit each other or the tree."""


class InvalidEntryBundleError(TransparencyError, ValueError):
    """Entry bundle bytes are malformed, or an entry is too long to bundle."""


class InvalidCheckpointError(TransparencyError, ValueError):
    """A checkpoint body is not in the strict C2SP tlog-checkpoint form."""


class InvalidKeyError(TransparencyError, ValueError):
    """A signer or verifier key string, or a key name, is malformed."""


class InvalidNoteError(TransparencyError, ValueError):
    """A signed note is malformed (encoding, layout, signature line syntax)."""


class InvalidSignatureError(InvalidNoteError):
    """A signature by a known key does not verify: the whole note is rejected."""


class UnverifiedNoteError(InvalidNoteError):
    """A well-formed note carries no valid signature by any known key.

    ``note`` holds the parsed note, every signature in ``unverified``, so a
    caller can tell the user which keys did sign it.
    """

    def __init__(self, message: str, note: Note) -> None:
        super().__init__(message)
        self.note = note


class AmbiguousKeyError(InvalidNoteError):
    """Two different known keys share one key name and key ID."""


class InvalidLeafError(TransparencyError, ValueError):
    """Journal leaf fields or leaf data are not in the leaf line format."""


class WitnessRefusalError(TransparencyError):
    """A witness refuses to cosign a checkpoint (C2SP tlog-witness ``add-checkpoint``)."""


class InvalidWitnessRequestError(WitnessRefusalError, ValueError):
    """An ``add-checkpoint`` request is malformed, or asks from an old size above its own."""


class UnknownLogError(WitnessRefusalError):
    """The checkpoint's origin is not a log the witness knows."""


class UntrustedCheckpointError(WitnessRefusalError):
    """No signature on the checkpoint verifies with a key the witness trusts for its log."""


class OldSizeMismatchError(WitnessRefusalError):
    """The request's old size is not the size the witness last cosigned (``size``), or that
    size again with another root hash."""

    def __init__(self, size: int, origin: str) -> None:
        super().__init__(f"{origin}: the witness last cosigned tree size {size}")
        self.size = size


class InconsistentCheckpointError(WitnessRefusalError):
    """The consistency proof does not prove the checkpoint extends the last one cosigned."""
