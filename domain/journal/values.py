"""Value types of the Journal: immutable, hashable, built from canonical text.

Each type validates its canonical string on construction and gives it back
from ``str()``. Bad syntax raises :class:`InvalidValueError`.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import total_ordering
from typing import Any, ClassVar, Self

from nenjim.domain.journal.errors import InvalidValueError


class _TextValue:
    """Base of the string-backed value types: compared and hashed by canonical text."""

    __slots__ = ("_text",)
    _text: str
    _what: ClassVar[str]

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"{type(self).__name__} expects a str, got {type(text).__name__}")
        object.__setattr__(self, "_text", self._canonical(text))

    def _canonical(self, text: str) -> str:
        raise NotImplementedError

    @classmethod
    def of(cls, value: Self | str) -> Self:
        """Return ``value`` if it already is this type, else parse it."""
        if isinstance(value, cls):
            return value
        return cls(value)  # type: ignore[arg-type]  # narrowed to str at run time

    def _invalid(self, text: str, expected: str) -> InvalidValueError:
        return InvalidValueError(f"invalid {self._what} {text!r}: expected {expected}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._text!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._text == other._text
        return NotImplemented

    def __hash__(self) -> int:
        # str caches its own hash; equality already separates the types.
        return hash(self._text)

    def __reduce__(self) -> tuple[type[Self], tuple[str]]:
        return (type(self), (self._text,))


_SEGMENT = r"[a-z][a-z0-9_]*"
_COORDINATE = re.compile(rf"{_SEGMENT}(?:\.{_SEGMENT})+")
MAX_COORDINATE_LENGTH = 255


@functools.lru_cache(maxsize=4096)
def _is_coordinate(text: str) -> bool:
    # Cached: a service is asked about the same few coordinates over and over.
    return len(text) <= MAX_COORDINATE_LENGTH and _COORDINATE.fullmatch(text) is not None


@total_ordering
class ArtifactCoordinate(_TextValue):
    """Reverse-DNS artifact name, e.g. ``com.r35157.nenjim.hubd``; also its directory name."""

    __slots__ = ()
    _what = "artifact coordinate"

    def _canonical(self, text: str) -> str:
        if not _is_coordinate(text):
            raise self._invalid(
                text,
                "2 or more dot-separated segments of [a-z][a-z0-9_]*, at most 255 characters",
            )
        return text

    def __lt__(self, other: ArtifactCoordinate) -> bool:
        if not isinstance(other, ArtifactCoordinate):
            return NotImplemented
        return self._text < other._text


# Syntax and field ranges in one match; only days 29-31 need the calendar (see _is_real).
_VERSION = re.compile(
    r"[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3])[0-5][0-9][0-5][0-9]Z"
)


@total_ordering
class JournalVersion(_TextValue):
    """A UTC instant in ISO 8601 basic form ``YYYYMMDDTHHMMSSZ``; ordered chronologically."""

    __slots__ = ("_instant",)
    _instant: datetime
    _what = "journal version"

    def _canonical(self, text: str) -> str:
        # Queries build versions on the hot path: one regex match, and the datetime only
        # when asked for (``instant``), since order and equality need only the text.
        if not (_VERSION.fullmatch(text) and _is_real(text)):
            raise self._invalid(text, "a real UTC date-time YYYYMMDDTHHMMSSZ")
        return text

    @property
    def instant(self) -> datetime:
        """The aware UTC ``datetime`` this version names."""
        try:
            return self._instant
        except AttributeError:
            text = self._text
            instant = datetime(
                int(text[:4]),
                int(text[4:6]),
                int(text[6:8]),
                int(text[9:11]),
                int(text[11:13]),
                int(text[13:15]),
                tzinfo=UTC,
            )
            object.__setattr__(self, "_instant", instant)
            return instant

    @classmethod
    def from_datetime(cls, moment: datetime) -> JournalVersion:
        """The version of an aware ``datetime``, converted to UTC and cut to the second.

        A naive ``datetime``, or one whose UTC form falls outside years
        0001-9999, raises :class:`InvalidValueError`; a non-``datetime``
        raises ``TypeError``.
        """
        if not isinstance(moment, datetime):
            raise TypeError(f"JournalVersion.from_datetime expects a datetime, got {moment!r}")
        if moment.utcoffset() is None:
            raise InvalidValueError(f"journal version needs an aware datetime, got {moment!r}")
        try:
            utc = moment.astimezone(UTC)
        except OverflowError:
            raise InvalidValueError(
                f"journal version needs a UTC year in 0001..9999, got {moment!r}"
            ) from None
        # Explicit zero padding: strftime("%Y") gives "999", not "0999", on some platforms.
        return cls(
            f"{utc.year:04d}{utc.month:02d}{utc.day:02d}"
            f"T{utc.hour:02d}{utc.minute:02d}{utc.second:02d}Z"
        )

    @classmethod
    def text_of(cls, value: JournalVersion | str) -> str:
        """The canonical text of ``value``: ``str(JournalVersion.of(value))``, but a valid
        ``str`` is checked without building a version (a query only compares the text).

        An invalid ``str`` raises the :class:`InvalidValueError` of ``JournalVersion(value)``,
        anything else what :meth:`of` raises.
        """
        if type(value) is str and is_journal_version(value):
            return value
        return cls.of(value)._text

    def __lt__(self, other: JournalVersion) -> bool:
        if not isinstance(other, JournalVersion):
            return NotImplemented
        return self._text < other._text  # fixed width: text order is time order


def is_journal_version(text: str) -> bool:
    """Whether ``text`` is what :class:`JournalVersion` accepts, checked without building
    one (a start checks a file name per revision, and most are only compared as text)."""
    return _VERSION.fullmatch(text) is not None and _is_real(text)


def version_reader(suffix: str) -> Callable[[str], str | None]:
    """A reader of texts ``<journal-version><suffix>``: it returns the version, or ``None``
    for any other text. A version is checked as :func:`is_journal_version` checks it, in
    the same match as the suffix (a start reads a file name per revision)."""
    pattern = re.compile(f"({_VERSION.pattern}){re.escape(suffix)}")

    def read(text: str) -> str | None:
        found = pattern.fullmatch(text)
        if found is None:
            return None
        version = found[1]
        return version if _is_real(version) else None

    return read


# Each month's last day (February's in a leap year), as the two digits a version holds.
_LAST_DAY = {
    "01": "31", "02": "29", "03": "31", "04": "30", "05": "31", "06": "30",
    "07": "31", "08": "31", "09": "30", "10": "31", "11": "30", "12": "31",
}  # fmt: skip


def _is_real(text: str) -> bool:
    """A matched version names a real date: year 0001 or later, day within its month."""
    if text[:4] == "0000":
        return False
    day = text[6:8]
    if day <= "28":
        return True
    # Compared as text (both are two digits), so only February 29th converts a number:
    # three int() calls cost a 29th-31st query three times a plain one.
    month = text[4:6]
    if day > _LAST_DAY[month]:
        return False
    if month != "02" or day != "29":
        return True
    year = int(text[:4])
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class Sha256Digest(_TextValue):
    """``sha256:`` + 64 lowercase hex digits: the identity of exact bytes."""

    __slots__ = ()
    _what = "digest"

    def _canonical(self, text: str) -> str:
        if not _DIGEST.fullmatch(text):
            raise self._invalid(text, "'sha256:' followed by 64 lowercase hex digits")
        return text

    @classmethod
    def of_bytes(cls, data: bytes) -> Sha256Digest:
        """The digest of exact bytes."""
        # Canonical by construction (hexdigest is 64 lowercase hex digits): no re-validation.
        digest = object.__new__(cls)
        object.__setattr__(digest, "_text", "sha256:" + hashlib.sha256(data).hexdigest())
        return digest

    @classmethod
    def of_text(cls, text: str) -> Sha256Digest:
        """The digest of ``text.encode("utf-8")``: whitespace and line endings included."""
        return cls.of_bytes(text.encode("utf-8"))


_NUMERIC = r"0|[1-9][0-9]*"
_PRERELEASE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
_SEMVER = re.compile(
    rf"({_NUMERIC})\.({_NUMERIC})\.({_NUMERIC})(?:-({_PRERELEASE_ID}(?:\.{_PRERELEASE_ID})*))?"
)


@total_ordering
class ReleaseVersion(_TextValue):
    """SemVer 2.0.0 ``MAJOR.MINOR.PATCH[-PRERELEASE]`` without ``+build``; ordered by precedence.

    Without build metadata, equal precedence means equal text, so ordering
    and equality agree (the reason the format forbids ``+build``).
    """

    __slots__ = ("_key",)
    _key: tuple[Any, ...]
    _what = "release version"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        match = _SEMVER.fullmatch(self._text)
        assert match is not None  # _canonical accepted it
        major, minor, patch, pre = match.groups()
        # A release outranks its pre-releases; numeric identifiers rank below alphanumeric.
        pre_key: tuple[Any, ...] = (
            (1,)
            if pre is None
            else (0, *((0, _number_key(p)) if p.isdigit() else (1, p) for p in pre.split(".")))
        )
        key = (_number_key(major), _number_key(minor), _number_key(patch), pre_key)
        object.__setattr__(self, "_key", key)

    def _canonical(self, text: str) -> str:
        if not _SEMVER.fullmatch(text):
            raise self._invalid(
                text, "MAJOR.MINOR.PATCH[-PRERELEASE] without leading zeros or +build metadata"
            )
        return text

    @property
    def precedence(self) -> tuple[Any, ...]:
        """A key that orders versions by SemVer precedence (a sort key compared in C)."""
        return self._key

    def __lt__(self, other: ReleaseVersion) -> bool:
        if not isinstance(other, ReleaseVersion):
            return NotImplemented
        return self._key < other._key


def _number_key(digits: str) -> tuple[int, str]:
    """Orders digit strings without leading zeros numerically, at any length.

    ``int()`` refuses strings over 4300 digits, which a text may still hold.
    """
    return len(digits), digits


class VersionRequirement(_TextValue):
    """An exact version (``1.4.0``) or an interval (``[1.2.0,2.0.0)``, ``(,2.0.0)`` ...).

    Compared by the set of versions it admits: ``[1.4.0]`` equals ``1.4.0``
    and both print as ``1.4.0``.
    """

    __slots__ = ("lower", "lower_inclusive", "upper", "upper_inclusive")
    lower: ReleaseVersion | None
    lower_inclusive: bool
    upper: ReleaseVersion | None
    upper_inclusive: bool
    _what = "version requirement"

    def __init__(self, text: str) -> None:
        super().__init__(text)
        lower, lower_inclusive, upper, upper_inclusive = self._bounds(self._text)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "lower_inclusive", lower_inclusive)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "upper_inclusive", upper_inclusive)

    @staticmethod
    def _bounds(
        canonical: str,
    ) -> tuple[ReleaseVersion | None, bool, ReleaseVersion | None, bool]:
        if canonical[0] not in "[(":
            exact = ReleaseVersion(canonical)
            return exact, True, exact, True
        low, high = canonical[1:-1].split(",")
        return (
            ReleaseVersion(low) if low else None,
            canonical[0] == "[",
            ReleaseVersion(high) if high else None,
            canonical[-1] == "]",
        )

    def _canonical(self, text: str) -> str:
        expected = (
            "an exact version or an interval like [1.2.0,2.0.0), (1.0.0,1.5.0], "
            "[1.0.0,) or (,2.0.0) without spaces"
        )
        if not text or text[0] not in "[(":
            try:
                return str(ReleaseVersion(text))
            except InvalidValueError:
                raise self._invalid(text, expected) from None
        if len(text) < 3 or text[-1] not in "])":
            raise self._invalid(text, expected)
        inner = text[1:-1]
        if "," not in inner:
            if text[0] == "[" and text[-1] == "]":
                try:
                    return str(ReleaseVersion(inner))
                except InvalidValueError:
                    raise self._invalid(text, expected) from None
            raise self._invalid(text, "an exact version in brackets to be written [X.Y.Z]")
        if inner.count(",") != 1:
            raise self._invalid(text, expected)
        low_text, high_text = inner.split(",")
        try:
            low = ReleaseVersion(low_text) if low_text else None
            high = ReleaseVersion(high_text) if high_text else None
        except InvalidValueError:
            raise self._invalid(text, expected) from None
        if low is None and high is None:
            raise self._invalid(text, "at least one bound; (,) admits everything")
        if (low is None and text[0] == "[") or (high is None and text[-1] == "]"):
            raise self._invalid(text, "an open side written with ( or )")
        if low is not None and high is not None:
            if high < low:
                raise self._invalid(text, "a lower bound not above the upper bound")
            if low == high:
                if text[0] == "[" and text[-1] == "]":
                    return str(low)
                raise self._invalid(text, "equal bounds to be both inclusive (else it is empty)")
        return text

    @property
    def is_exact(self) -> bool:
        """True if the requirement admits exactly one version."""
        return self.lower is not None and self.lower is self.upper

    def contains(self, version: ReleaseVersion | str) -> bool:
        """Whether ``version`` satisfies this requirement."""
        v = ReleaseVersion.of(version)
        if self.lower is not None and (
            v < self.lower or (v == self.lower and not self.lower_inclusive)
        ):
            return False
        return not (
            self.upper is not None
            and (v > self.upper or (v == self.upper and not self.upper_inclusive))
        )


class PolicyStatus(enum.Enum):
    """The publication status of an artifact or release."""

    ACTIVE = "active"
    DEPRECATED = "deprecated"
    YANKED = "yanked"
    REVOKED = "revoked"

    def __str__(self) -> str:
        return self.value


# What a quoted string cannot carry: C0 controls other than TAB and LF (which
# are escaped), and lone surrogates (not encodable as UTF-8).
_UNQUOTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\ud800-\udfff]")


def quote(text: str) -> str:
    """``text`` as a quoted string with the format's four escapes ``\\" \\\\ \\n \\t``.

    Raises ``TypeError`` for a non-``str`` and :class:`InvalidValueError` for
    an empty text or one with a character no Journal text can hold.
    """
    if not isinstance(text, str):
        raise TypeError(f"a quoted string needs a str, got {type(text).__name__}")
    if not text:
        raise InvalidValueError("invalid quoted string '': expected non-empty text")
    bad = _UNQUOTABLE.search(text)
    if bad is not None:
        raise InvalidValueError(
            f"invalid quoted string {text!r}: character U+{ord(bad.group()):04X} "
            "cannot be written in a Journal text"
        )
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


@dataclass(frozen=True, slots=True)
class Policy:
    """A status with an optional reason; a release's effective policy inherits the header's.

    The reason must be a non-empty text a quoted string can carry;
    ``str()`` gives the directive's argument text, e.g. ``yanked "broken"``.
    """

    status: PolicyStatus
    reason: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.status, PolicyStatus):
            raise TypeError(f"Policy status must be a PolicyStatus, got {self.status!r}")
        if self.reason is not None:
            quote(self.reason)  # raises for a reason no Journal text could carry

    def __str__(self) -> str:
        return (
            self.status.value
            if self.reason is None
            else f"{self.status.value} {quote(self.reason)}"
        )


ACTIVE_POLICY = Policy(PolicyStatus.ACTIVE)
