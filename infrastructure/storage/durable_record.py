"""``DurableRecord``: the opaque envelope a driver stores and never reads into."""

from __future__ import annotations

import re
from typing import Any

from nenjim.immutable import immutable
from nenjim.infrastructure.storage import canonical_json
from nenjim.infrastructure.storage.errors import SerializationError
from nenjim.infrastructure.storage.scalars import validate_name

_FORMAT_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


@immutable
class DurableRecord:
    """``record_type``, ``format_version`` (``"<int>.<int>"``) and a Canonical-JSON payload.

    The record type is text without NUL; the payload is a JSON object that
    Canonical JSON v1 can write (no NUL in any string, nested at most 100
    deep). Anything else is a ``SerializationError``.

    Immutable: the payload is kept as its canonical text, and ``payload``
    returns a fresh copy on every access, so no caller can change what is
    stored.
    """

    __slots__ = ("_payload_json", "format_version", "record_type")
    record_type: str
    format_version: str
    _payload_json: str

    def __init__(self, record_type: Any, format_version: Any, payload: Any) -> None:
        try:
            validate_name(record_type, "record_type")
        except (TypeError, ValueError) as error:
            raise SerializationError(str(error)) from None
        if not isinstance(format_version, str) or not _FORMAT_VERSION.fullmatch(format_version):
            raise SerializationError(
                f"format_version must look like '0.1' (no leading zeros), got {format_version!r}"
            )
        # A subclass (a str-valued Enum) is stored as the text it holds.
        record_type, format_version = str.__str__(record_type), str.__str__(format_version)
        if not isinstance(payload, dict):
            raise SerializationError(f"payload must be a dict, got {type(payload).__name__}")
        try:
            text = canonical_json.dumps(payload)
        except (TypeError, ValueError) as error:
            raise SerializationError(f"payload is not Canonical JSON: {error}") from error
        object.__setattr__(self, "record_type", record_type)
        object.__setattr__(self, "format_version", format_version)
        object.__setattr__(self, "_payload_json", text)

    @classmethod
    def from_json(cls, record_type: str, format_version: str, payload_json: str) -> DurableRecord:
        """Rebuild a stored envelope from its canonical payload text.

        The text is parsed to prove it is a JSON object, then re-rendered and
        compared (not trusted): a stored payload that is not in canonical form
        is a ``SerializationError``.
        """
        try:
            payload = canonical_json.loads(payload_json)
        except ValueError as error:
            raise SerializationError(f"stored payload is not JSON: {error}") from error
        record = cls(record_type, format_version, payload)
        if record._payload_json != payload_json:
            raise SerializationError("stored payload is not in Canonical JSON form")
        return record

    @property
    def payload(self) -> dict[str, Any]:
        """A fresh copy of the payload."""
        # The text is canonical: this envelope wrote it, or compared it with what it writes.
        value: dict[str, Any] = canonical_json.loads_canonical(self._payload_json)
        return value

    @property
    def payload_json(self) -> str:
        """The payload's Canonical JSON text."""
        return self._payload_json

    def copy(self) -> DurableRecord:
        """An equal, independent instance."""
        clone = _new(DurableRecord)
        _set_record_type(clone, self.record_type)
        _set_format_version(clone, self.format_version)
        _set_payload_json(clone, self._payload_json)
        return clone

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DurableRecord):
            return NotImplemented
        return (self.record_type, self.format_version, self._payload_json) == (
            other.record_type,
            other.format_version,
            other._payload_json,
        )

    def __hash__(self) -> int:
        return hash((self.record_type, self.format_version, self._payload_json))

    def __repr__(self) -> str:
        return f"DurableRecord({self.record_type!r}, {self.format_version!r}, {self._payload_json})"


# The slots' own setters, for copy(): past the immutability guard, and without the name
# lookup of object.__setattr__ (a store copies the record of every entry it returns).
_new = object.__new__
_set_record_type = DurableRecord.__dict__["record_type"].__set__
_set_format_version = DurableRecord.__dict__["format_version"].__set__
_set_payload_json = DurableRecord.__dict__["_payload_json"].__set__
