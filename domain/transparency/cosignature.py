"""C2SP tlog-cosignature v1 (Ed25519): a witness's timestamped signature on a checkpoint.

A cosignature is a note signature line ``— <witness name> base64(key ID ||
timestamp || signature)``: the timestamp is 8 bytes, big-endian, the POSIX
time it was made (at most 2^63 - 1); the signature is Ed25519 over
``cosignature/v1\\n`` + ``time <timestamp>\\n`` + the checkpoint body. The key
ID is the first four bytes of ``SHA-256(name || "\\n" || 0x04 || public key)``.

Keys are strings in the signed-note form with signature type 0x04: a verifier
key ``<name>+<key ID>+<base64(0x04 || public key)>`` and a signer key
``PRIVATE+KEY+<name>+<key ID>+<base64(0x04 || 32-byte seed)>``. The signer
key form is this package's own (the specifications define none for a
cosigner), kept parallel to the note signer key so that one cannot be
mistaken for the other: each refuses the other's type byte.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from nenjim.domain.transparency.errors import InvalidSignatureError
from nenjim.domain.transparency.note import (
    Note,
    NoteSignature,
    SignerKey,
    VerifierKey,
    _decode_base64,
    _encode_base64,
    key_from_text,
    key_id,
)

COSIGNATURE_ALGORITHM = 0x04
COSIGNATURE_HEADER = "cosignature/v1\n"
MAX_TIMESTAMP = (1 << 63) - 1
_SIGNATURE_SIZE = 64
_COSIGNATURE_SIZE = 4 + 8 + _SIGNATURE_SIZE


def cosigned_message(body: str, timestamp: int) -> bytes:
    """What a v1 cosignature signs: the header line, the time line, the checkpoint body."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise InvalidSignatureError(f"cosignature timestamp {timestamp} is not in [0, 2^63-1]")
    return f"{COSIGNATURE_HEADER}time {timestamp}\n{body}".encode()


@dataclass(frozen=True, slots=True)
class Cosignature:
    """A verified cosignature: who made it and when (POSIX seconds)."""

    name: str
    key_id: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class CosignerVerifier:
    """A witness's Ed25519 public key, checking its v1 cosignatures."""

    name: str
    public_key: bytes

    def __post_init__(self) -> None:
        VerifierKey(self.name, self.public_key)  # the same name and length rules

    @classmethod
    def parse(cls, text: str) -> CosignerVerifier:
        """Read a ``<name>+<key ID>+<base64(0x04 || key)>`` cosigner verifier key."""
        return key_from_text(
            text,
            "witness verifier key",
            cls,
            lambda key: key.key_id,
            secret=False,
            algorithm=COSIGNATURE_ALGORITHM,
        )

    @property
    def key_id(self) -> int:
        """The key ID of type 0x04 that the witness's signature lines carry."""
        return key_id(self.name, self.public_key, COSIGNATURE_ALGORITHM)

    def encode(self) -> str:
        """The verifier key string, ``<name>+<key ID>+<base64(0x04 || key)>``."""
        payload = bytes([COSIGNATURE_ALGORITHM]) + self.public_key
        return f"{self.name}+{self.key_id:08x}+{_encode_base64(payload)}"

    def __str__(self) -> str:
        return self.encode()

    def check(self, body: str, signature: NoteSignature) -> Cosignature | None:
        """The cosignature ``signature`` makes on the checkpoint ``body`` if it is this
        witness's (name and key ID) and verifies; ``None`` if another key's.
        Raises :class:`InvalidSignatureError` when it is this witness's and does not verify."""
        if (signature.name, signature.key_id) != (self.name, self.key_id):
            return None
        raw = _decode_base64(signature.encoded)
        what = f"cosignature by witness {self.name}+{self.key_id:08x}"
        if raw is None or len(raw) != _COSIGNATURE_SIZE:
            raise InvalidSignatureError(f"{what} is not {_COSIGNATURE_SIZE} bytes")
        timestamp = int.from_bytes(raw[4:12], "big")
        message = cosigned_message(body, timestamp)
        if not VerifierKey(self.name, self.public_key).verify(message, raw[12:]):
            raise InvalidSignatureError(f"{what} does not verify")
        return Cosignature(self.name, self.key_id, timestamp)


class Cosigner:
    """A witness's Ed25519 private key, making v1 cosignatures. Its ``repr`` hides the secret."""

    __slots__ = ("_key", "_seed")

    def __init__(self, name: str, seed: bytes) -> None:
        self._key = SignerKey(name, seed)  # the same name and seed rules
        self._seed = bytes(seed)

    @classmethod
    def generate(cls, name: str) -> Cosigner:
        """A new witness key with a random seed from the operating system."""
        return cls(name, Ed25519PrivateKey.generate().private_bytes_raw())

    @classmethod
    def parse(cls, text: str) -> Cosigner:
        """Read a ``PRIVATE+KEY+<name>+<key ID>+<base64(0x04 || seed)>`` witness signer key.

        Error messages never quote the string: it is a secret.
        """
        return key_from_text(
            text,
            "witness signer key",
            cls,
            lambda key: key.verifier.key_id,
            secret=True,
            algorithm=COSIGNATURE_ALGORITHM,
        )

    @property
    def name(self) -> str:
        """The witness's name, which its signature lines carry."""
        return self._key.name

    @property
    def verifier(self) -> CosignerVerifier:
        """The public half, for whoever checks this witness's cosignatures."""
        return CosignerVerifier(self.name, self._key.verifier.public_key)

    def encode(self) -> str:
        """The signer key string (a secret), ``PRIVATE+KEY+<name>+<key ID>+<base64>``."""
        payload = bytes([COSIGNATURE_ALGORITHM]) + self._seed
        return f"PRIVATE+KEY+{self.name}+{self.verifier.key_id:08x}+{_encode_base64(payload)}"

    def cosign(self, body: str, timestamp: int) -> NoteSignature:
        """The v1 cosignature line of the checkpoint ``body`` made at ``timestamp``."""
        signature = self._key.sign(cosigned_message(body, timestamp))
        identifier = self.verifier.key_id
        raw = identifier.to_bytes(4, "big") + timestamp.to_bytes(8, "big") + signature
        return NoteSignature(self.name, identifier, _encode_base64(raw))

    def __repr__(self) -> str:
        return f"Cosigner(name={self.name!r}, key_id={self.verifier.key_id:08x})"


def check_cosignatures(
    note: Note, witnesses: Iterable[CosignerVerifier]
) -> tuple[Cosignature, ...]:
    """The valid cosignatures on an opened checkpoint ``note`` by the known ``witnesses``,
    one per witness at most. Lines by other keys are ignored; a line by a known witness
    that does not verify rejects the note (:class:`InvalidSignatureError`)."""
    known = list(witnesses)
    found: dict[tuple[str, int], Cosignature] = {}
    for signature in (*note.signatures, *note.unverified):
        for witness in known:
            cosignature = witness.check(note.text, signature)
            if cosignature is not None:
                found.setdefault((cosignature.name, cosignature.key_id), cosignature)
    return tuple(found.values())
