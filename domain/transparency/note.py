"""Signed notes (C2SP signed-note; Go's ``golang.org/x/mod/sumdb/note``) with Ed25519 keys.

A signed note is a text ending in a newline, a blank line, then one or more
signature lines ``— <key name> <base64(key ID || signature)>``: an em dash
(U+2014) and a space first. The whole note is UTF-8 without ASCII control
characters other than the newline. The key ID is the first four bytes of
``SHA-256(key name || "\\n" || 0x01 || 32-byte Ed25519 public key)``, big-endian;
the signature is Ed25519 over the text, its final newline included.

Keys are strings: a verifier key ``<name>+<key ID as 8 hex digits>+<base64(0x01
|| public key)>`` and a signer key ``PRIVATE+KEY+<name>+<key ID>+<base64(0x01 ||
32-byte seed)>``. The 33-byte payloads encode to 44 base64 characters, which
need no ``=`` padding. Key names are non-empty and hold no ``+``, no Unicode
space and no control character.

Base64 is read strictly: only the one canonical encoding of a value is
accepted (no missing or extra padding, no stray bits), so a signature line
cannot be rewritten into another form that still verifies.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from nenjim.domain.transparency.errors import (
    AmbiguousKeyError,
    InvalidKeyError,
    InvalidNoteError,
    InvalidSignatureError,
    UnverifiedNoteError,
)

ED25519_ALGORITHM = 0x01
MAX_SIGNATURES = 100
SIGNATURE_PREFIX = "\u2014 "
_KEY_SIZE = 32
_SIGNATURE_SIZE = 64
_HEX_KEY_ID = re.compile(r"[0-9a-fA-F]{8}")
K = TypeVar("K")


def _decode_base64(text: str) -> bytes | None:
    """The bytes ``text`` encodes in canonical standard base64, or ``None``."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == text else None


def _encode_base64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _key_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a key, or ``None`` when it can."""
    if not name:
        return "key name is empty"
    for character in name:
        if character == "+":
            return f"key name {name!r} contains '+'"
        if character.isspace() or character < " ":
            return f"key name {name!r} contains a space or control character"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return f"key name {name!r} is not valid Unicode text"
    return None


def key_id(name: str, public_key: bytes, algorithm: int = ED25519_ALGORITHM) -> int:
    """The key ID: the first 4 bytes of SHA-256(name, newline, algorithm, key), big-endian.

    ``algorithm`` is the signature type byte: 0x01 (Ed25519 note signatures) unless told.
    """
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([algorithm]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def _parse_key_fields(
    name: str, hex_id: str, encoded: str, what: str, algorithm: int = ED25519_ALGORITHM
) -> tuple[int, bytes]:
    """Check a key string's name, key ID and payload of signature type ``algorithm``;
    return the ID and the 32 key bytes."""
    problem = _key_name_problem(name)
    if problem is not None:
        raise InvalidKeyError(f"malformed {what}: {problem}")
    if not _HEX_KEY_ID.fullmatch(hex_id):
        raise InvalidKeyError(f"malformed {what}: the key ID is not 8 hexadecimal digits")
    payload = _decode_base64(encoded)
    if not payload:
        raise InvalidKeyError(f"malformed {what}: the key is not canonical standard base64")
    if payload[0] != algorithm:
        raise InvalidKeyError(
            f"{what} for {name!r} uses unknown algorithm 0x{payload[0]:02x}; "
            f"only 0x{algorithm:02x} is supported here"
        )
    if len(payload) != 1 + _KEY_SIZE:
        raise InvalidKeyError(
            f"malformed {what} for {name!r}: the Ed25519 key is {len(payload) - 1} bytes, "
            f"not {_KEY_SIZE}"
        )
    return int(hex_id, 16), payload[1:]


def key_from_text(
    text: str,
    what: str,
    make: Callable[[str, bytes], K],
    key_id_of: Callable[[K], int],
    *,
    secret: bool,
    algorithm: int = ED25519_ALGORITHM,
) -> K:
    """The key ``make(name, key bytes)`` of a key string: ``<name>+<key ID>+<base64 key>``,
    after ``PRIVATE+KEY+`` when ``secret``; its fields checked (:class:`InvalidKeyError`
    naming ``what``) and its key ID (``key_id_of``) matched against the one it claims. A
    secret's errors never quote it."""
    fields = text.split("+", 4 if secret else 2)
    prefix = "PRIVATE+KEY+" if secret else ""
    if secret and (len(fields) != 5 or fields[:2] != ["PRIVATE", "KEY"]):
        fields = []
    if len(fields) != (5 if secret else 3):
        raise InvalidKeyError(
            f"malformed {what}: expected {prefix}<name>+<8 hex digit key ID>+<base64 key>"
        )
    name, hex_id, encoded = fields[-3:]
    claimed, raw = _parse_key_fields(name, hex_id, encoded, what, algorithm)
    key = make(name, raw)
    actual = key_id_of(key)
    if actual == claimed:
        return key
    if secret:
        raise InvalidKeyError(
            f"{what} for {name!r}: the key ID {hex_id} does not match the name and "
            "the public key derived from the seed"
        )
    raise InvalidKeyError(
        f"{what} {name}+{hex_id}: the key ID does not match the name and key (it is {actual:08x})"
    )


@dataclass(frozen=True, slots=True)
class VerifierKey:
    """A named Ed25519 public key that checks note signatures."""

    name: str
    public_key: bytes

    def __post_init__(self) -> None:
        problem = _key_name_problem(self.name)
        if problem is not None:
            raise InvalidKeyError(f"verifier key: {problem}")
        if len(self.public_key) != _KEY_SIZE:
            raise InvalidKeyError(
                f"verifier key {self.name!r}: the Ed25519 public key is "
                f"{len(self.public_key)} bytes, not {_KEY_SIZE}"
            )

    @classmethod
    def parse(cls, text: str) -> VerifierKey:
        """Read a ``<name>+<key ID>+<base64 key>`` verifier key string."""
        return key_from_text(text, "verifier key", cls, lambda key: key.key_id, secret=False)

    @property
    def key_id(self) -> int:
        """The 32-bit key ID that signature lines carry."""
        return key_id(self.name, self.public_key)

    def encode(self) -> str:
        """The verifier key string, ``<name>+<key ID>+<base64(0x01 || key)>``."""
        payload = bytes([ED25519_ALGORITHM]) + self.public_key
        return f"{self.name}+{self.key_id:08x}+{_encode_base64(payload)}"

    def __str__(self) -> str:
        return self.encode()

    def verify(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` is this key's Ed25519 signature of ``message``."""
        if len(signature) != _SIGNATURE_SIZE:
            return False
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True


class SignerKey:
    """A named Ed25519 private key that signs notes. Its ``repr`` hides the secret."""

    __slots__ = ("_name", "_private", "_seed", "_verifier")

    def __init__(self, name: str, seed: bytes) -> None:
        problem = _key_name_problem(name)
        if problem is not None:
            raise InvalidKeyError(f"signer key: {problem}")
        if len(seed) != _KEY_SIZE:
            raise InvalidKeyError(
                f"signer key {name!r}: the Ed25519 seed is {len(seed)} bytes, not {_KEY_SIZE}"
            )
        self._name = name
        self._seed = bytes(seed)
        self._private = Ed25519PrivateKey.from_private_bytes(self._seed)
        self._verifier = VerifierKey(name, self._private.public_key().public_bytes_raw())

    @classmethod
    def generate(cls, name: str) -> SignerKey:
        """A new key with a random seed from the operating system."""
        seed = Ed25519PrivateKey.generate().private_bytes_raw()
        return cls(name, seed)

    @classmethod
    def parse(cls, text: str) -> SignerKey:
        """Read a ``PRIVATE+KEY+<name>+<key ID>+<base64 seed>`` signer key string.

        Error messages never quote the string: it is a secret.
        """
        return key_from_text(text, "signer key", cls, lambda key: key.key_id, secret=True)

    @property
    def name(self) -> str:
        """The key name that signature lines carry."""
        return self._name

    @property
    def key_id(self) -> int:
        """The key ID of the matching verifier key."""
        return self._verifier.key_id

    @property
    def verifier(self) -> VerifierKey:
        """The public half, to hand to whoever checks this key's signatures."""
        return self._verifier

    def encode(self) -> str:
        """The signer key string (a secret), ``PRIVATE+KEY+<name>+<key ID>+<base64>``."""
        payload = bytes([ED25519_ALGORITHM]) + self._seed
        return f"PRIVATE+KEY+{self._name}+{self.key_id:08x}+{_encode_base64(payload)}"

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def __repr__(self) -> str:
        return f"SignerKey(name={self._name!r}, key_id={self.key_id:08x})"


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: key name, key ID, and ``base64(key ID || signature)``."""

    name: str
    key_id: int
    encoded: str

    def line(self) -> str:
        """The signature line, newline included."""
        return f"{SIGNATURE_PREFIX}{self.name} {self.encoded}\n"


@dataclass(frozen=True, slots=True)
class Note:
    """An opened note: its text, the signatures verified, and those by unknown keys."""

    text: str
    signatures: tuple[NoteSignature, ...] = ()
    unverified: tuple[NoteSignature, ...] = ()


def _check_characters(text: str, what: str) -> bytes:
    """``text`` as UTF-8, refusing control characters other than newline."""
    for position, character in enumerate(text):
        if character < " " and character != "\n":
            line = text.count("\n", 0, position) + 1
            raise InvalidNoteError(
                f"malformed {what}: control character U+{ord(character):04X} on line {line}"
            )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidNoteError(f"malformed {what}: not valid Unicode text") from error


def sign_note(note: str | Note, *signers: SignerKey) -> str:
    """The signed note of ``note`` (a text, or an opened note to sign again).

    Signatures already on an opened :class:`Note` are kept, before the new ones,
    except those by the signers' own keys, which are replaced.
    """
    text = note if isinstance(note, str) else note.text
    kept = () if isinstance(note, str) else (*note.signatures, *note.unverified)
    if not text.endswith("\n"):
        raise InvalidNoteError("cannot sign a note text that does not end with a newline")
    message = _check_characters(text, "note text")
    replaced = {(signer.name, signer.key_id) for signer in signers}
    lines: list[str] = []
    for signature in kept:
        if (signature.name, signature.key_id) in replaced:
            continue
        raw = _decode_base64(signature.encoded)
        if _key_name_problem(signature.name) or raw is None or len(raw) < 5:
            raise InvalidNoteError(f"malformed existing signature by {signature.name!r}")
        if int.from_bytes(raw[:4], "big") != signature.key_id:
            raise InvalidNoteError(
                f"existing signature by {signature.name!r} does not carry key ID "
                f"{signature.key_id:08x}"
            )
        lines.append(signature.line())
    for signer in signers:
        encoded = _encode_base64(signer.key_id.to_bytes(4, "big") + signer.sign(message))
        lines.append(NoteSignature(signer.name, signer.key_id, encoded).line())
    if not lines:
        raise InvalidNoteError("a signed note needs at least one signature; no signer was given")
    return text + "\n" + "".join(lines)


def _index(verifiers: Iterable[VerifierKey]) -> dict[tuple[str, int], VerifierKey | None]:
    """Known keys by (name, key ID); ``None`` marks two different keys sharing both."""
    known: dict[tuple[str, int], VerifierKey | None] = {}
    for verifier in verifiers:
        slot = (verifier.name, verifier.key_id)
        if slot in known and known[slot] != verifier:
            known[slot] = None
        else:
            known.setdefault(slot, verifier)
    return known


def open_note(message: str | bytes, verifiers: Iterable[VerifierKey]) -> Note:
    """Parse a signed note and check its signatures against the known ``verifiers``.

    Signatures by unknown keys are kept unverified and otherwise ignored; a
    known key's signature that fails to verify rejects the whole note
    (:class:`InvalidSignatureError`); a note without one valid signature by a
    known key is refused (:class:`UnverifiedNoteError`). Repeated signatures
    by one key count once.
    """
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidNoteError(
                f"malformed note: not valid UTF-8 at byte {error.start}"
            ) from error
    _check_characters(message, "note")
    split = message.rfind("\n\n")
    if split < 0:
        raise InvalidNoteError("malformed note: no blank line before the signatures")
    text, block = message[: split + 1], message[split + 2 :]
    if not block.endswith("\n"):
        raise InvalidNoteError(
            "malformed note: the last signature line does not end with a newline"
        )
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise InvalidNoteError(
            f"malformed note: {len(lines)} signature lines, more than {MAX_SIGNATURES}"
        )
    known = _index(verifiers)
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    seen_keys: set[tuple[str, int]] = set()
    seen_lines: set[str] = set()
    body = text.encode("utf-8")
    for number, line in enumerate(lines, start=1):
        signature, raw = _parse_signature_line(line, number)
        slot = (signature.name, signature.key_id)
        if slot not in known:
            if line not in seen_lines:
                seen_lines.add(line)
                unverified.append(signature)
            continue
        verifier = known[slot]
        if verifier is None:
            raise AmbiguousKeyError(
                f"two different known keys are named {signature.name}+{signature.key_id:08x}"
            )
        if slot in seen_keys:
            continue
        seen_keys.add(slot)
        if not verifier.verify(body, raw[4:]):
            raise InvalidSignatureError(
                f"signature line {number} by key {signature.name}+{signature.key_id:08x} "
                "does not verify"
            )
        verified.append(signature)
    note = Note(text, tuple(verified), tuple(unverified))
    if not verified:
        signed_by = ", ".join(f"{s.name}+{s.key_id:08x}" for s in unverified)
        raise UnverifiedNoteError(
            f"note has no valid signature by a known key (signed by {signed_by})", note
        )
    return note


def _parse_signature_line(line: str, number: int) -> tuple[NoteSignature, bytes]:
    if not line.startswith(SIGNATURE_PREFIX):
        raise InvalidNoteError(
            f"malformed note: signature line {number} does not start with an em dash and a space"
        )
    name, space, encoded = line[len(SIGNATURE_PREFIX) :].partition(" ")
    problem = _key_name_problem(name)
    if problem is not None or not space:
        reason = problem or "no space between key name and signature"
        raise InvalidNoteError(f"malformed note: signature line {number}: {reason}")
    raw = _decode_base64(encoded)
    if raw is None or len(raw) < 5:
        raise InvalidNoteError(
            f"malformed note: signature line {number} by {name!r}: the signature is not "
            "canonical base64 of a key ID and signature bytes"
        )
    return NoteSignature(name, int.from_bytes(raw[:4], "big"), encoded), raw
