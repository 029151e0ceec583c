"""Parser and validator of the Journal text format, version 1.

``parse_journal(text)`` checks every syntax and semantic rule of one text and
returns a :class:`JournalRevision` whose digest is over the exact UTF-8 bytes.
Anything it rejects raises a :class:`JournalError` subclass that names the
artifact (once known) and the 1-based line.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from domain.journal.document import (
    Dependency,
    JournalDocument,
    JournalRevision,
    Preference,
    Release,
    release_rule_violations,
)
from domain.journal.errors import (
    InvalidValueError,
    JournalError,
    JournalFormatError,
    JournalValidationError,
)
from domain.journal.spdx import validate_license_expression
from domain.journal.values import (
    ACTIVE_POLICY,
    ArtifactCoordinate,
    JournalVersion,
    Policy,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

FORMAT_VERSION = "1"
MAGIC = "NENJIM-JOURNAL"

# Only spaces/tabs separate: other Unicode blanks belong to the word they touch.
_KEYWORD = re.compile(r"[A-Z][A-Z0-9_-]*")
_FORMAT_NUMBER = re.compile(r"[0-9]+")
_BLANK_TEXT = re.compile(r"(?:[ \t]*\r?\n)*[ \t]*")
_CONTROL_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Everything the per-line checks reject, minus the line endings: one scan of the
# whole text lets clean texts (nearly all of them) skip the per-line checks.
_SUSPECT_CHAR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
# Values repeat across a root (coordinates, requirements, licences); value
# objects are immutable, so equal texts can share one validated instance.
_VALUE_CACHE: dict[tuple[Callable[[str], object], str], object] = {}
_VALUE_CACHE_LIMIT = 65536
# A successor repeats most of its predecessor's releases: equal releases share
# one instance, so a long chain holds each release once, not once per revision.
_RELEASE_CACHE: dict[Release, Release] = {}
_ARGUMENT_SPLIT = re.compile(r"[ \t]+")
# Where a release block starts: a line whose first word is RELEASE.
_RELEASE_LINE = re.compile(r"^[ \t]*RELEASE(?![^ \t\r\n])", re.MULTILINE)

_UNRESERVED = r"A-Za-z0-9\-._~"
_SUB_DELIMS = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = rf"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_AUTHORITY = (
    rf"(?:(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?"
    rf"(?:\[(?:[0-9A-Fa-f:.]+|v[0-9A-Fa-f]+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
    rf"|(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*)"
    r"(?::[0-9]*)?"
)
_ABSOLUTE_URI = re.compile(
    r"[A-Za-z][A-Za-z0-9+.\-]*:"
    rf"(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?|{_PCHAR}+(?:/{_PCHAR}*)*)?"
    rf"(?:\?(?:{_PCHAR}|[/?])*)?"
    rf"(?:#(?:{_PCHAR}|[/?])*)?"
)

_HEADER_ONLY = frozenset({"ARTIFACT", "JOURNAL_VERSION", "PREDECESSOR", "INFORMATION"})
_RELEASE_ONLY = frozenset({"LICENSE", "CONTENT", "DEPENDENCY", "EXCLUDE", "PREFER"})
_KNOWN = _HEADER_ONLY | _RELEASE_ONLY | {"DESCRIPTION", "POLICY", "RELEASE", MAGIC}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}

_V = TypeVar("_V")


def decode_journal_bytes(data: bytes) -> str:
    """Decode exact file bytes as UTF-8 without a BOM; errors name the line.

    Raises ``TypeError`` for anything but ``bytes`` and
    :class:`JournalFormatError` for a BOM or invalid UTF-8.
    """
    if not isinstance(data, bytes):
        raise TypeError(f"Journal bytes must be bytes, got {type(data).__name__}")
    if data.startswith(b"\xef\xbb\xbf"):
        raise JournalFormatError("byte-order mark: expected UTF-8 without a BOM", line=1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise JournalFormatError(
            f"invalid UTF-8 byte 0x{data[error.start]:02x}: expected UTF-8 text", line=line
        ) from None


def parse_journal(text: str) -> JournalRevision:
    """Parse and validate one complete Journal text.

    Raises ``TypeError`` for a non-``str``; every rejected text raises a
    :class:`JournalError` subclass.
    """
    if not isinstance(text, str):
        raise TypeError(f"a Journal text must be a str, got {type(text).__name__}")
    document = _Parser().parse(text)
    # Every character passed the per-line checks, so no surrogate is left to fail encoding.
    return JournalRevision(document=document, text=text, digest=Sha256Digest.of_text(text))


def iter_lines(text: str) -> list[str]:
    """Split on LF/CRLF (the last line may lack one); a lone CR is an error."""
    return list(_lines(text))


def _lines(text: str, first: int = 1) -> Iterator[str]:
    """Lazily, so an error on a late line is raised after the earlier lines were read;
    ``first`` is the number of the text's first line."""
    lines = text.split("\n")
    last = lines.pop()  # the text after the final LF: a line without its own LF, or ""
    for number, line in enumerate(lines, start=first):
        yield _without_cr(line.removesuffix("\r"), number)
    if last:
        # Without an LF after it, a trailing CR is a lone CR, not half a CRLF.
        yield _without_cr(last, first + len(lines))


def _without_cr(content: str, number: int) -> str:
    if "\r" in content:
        raise JournalFormatError(
            "lone carriage return: expected lines ending in LF or CRLF", line=number
        )
    return content


@dataclass
class _ReleaseBlock:
    line: int
    version: ReleaseVersion
    source: str
    # Set when an identical block of the artifact's previous text was reused.
    parsed: Release | None = None
    seen: dict[str, int] = field(default_factory=dict)
    license: str | None = None
    content: Sha256Digest | None = None
    description: str | None = None
    policy: Policy | None = None
    dependencies: dict[ArtifactCoordinate, tuple[VersionRequirement, int]] = field(
        default_factory=dict
    )
    exclusions: dict[ArtifactCoordinate, int] = field(default_factory=dict)
    preferences: dict[ArtifactCoordinate, tuple[ReleaseVersion, int]] = field(default_factory=dict)


class _Parser:
    def __init__(self) -> None:
        self.artifact: ArtifactCoordinate | None = None
        self.header: dict[str, tuple[object, int]] = {}
        self.blocks: list[_ReleaseBlock] = []
        self.started = False
        self._line_number = 0
        self._clean = False
        self._segment = ""

    def parse(self, text: str) -> JournalDocument:
        if _BLANK_TEXT.fullmatch(text):
            raise JournalFormatError(
                "empty or blank text: expected a Journal starting with 'NENJIM-JOURNAL 1'"
            )
        if text.startswith("\ufeff"):
            raise JournalFormatError("byte-order mark: expected UTF-8 without a BOM", line=1)
        self._clean = _SUSPECT_CHAR.search(text) is None
        starts = [match.start() for match in _RELEASE_LINE.finditer(text)]
        ends = [*starts, len(text)]
        try:
            # The header, then one segment per release block: a block equal to one of
            # the artifact's previous text (a successor repeats most of them) is
            # taken as parsed then, so only new or changed blocks are parsed.
            for start, end in zip([0, *starts], ends, strict=True):
                segment = text[start:end]
                if start and self._reuse(segment):
                    continue
                self._segment = segment
                for line in _lines(segment, self._line_number + 1):
                    self._line_number += 1
                    self._line(line)
            self._line_number = 0
            document = self._document()
        except JournalError as error:
            error.locate(
                artifact=None if self.artifact is None else str(self.artifact),
                line=self._line_number or None,
            )
            raise
        _remember_blocks(document, self.blocks)
        return document

    def _reuse(self, segment: str) -> bool:
        """Take ``segment`` as the block parsed from the same text in the artifact's
        previous text, if there is one: same artifact, same header policy, so the same
        release and the same rule checks."""
        recent = _RECENT.blocks
        if recent is None or not self.started or recent[0] != self._block_context():
            return False
        release = recent[1].get(_block_text(segment))
        if release is None:
            return False
        self._line_number += 1
        self._require_header()
        self._check_new_version(release.version)
        self.blocks.append(
            _ReleaseBlock(self._line_number, release.version, segment, parsed=release)
        )
        # Every line of the segment but the RELEASE line just counted.
        self._line_number += segment.count("\n") - (1 if segment.endswith("\n") else 0)
        return True

    def _block_context(self) -> tuple[ArtifactCoordinate | None, Policy]:
        """What a release block's meaning depends on besides its own text."""
        return self.artifact, self._header_value("POLICY", Policy) or ACTIVE_POLICY

    def _line(self, line: str) -> None:
        if not self._clean:
            _check_characters(line)
        stripped = line.strip(" \t")
        if not stripped or stripped[0] == "#":
            return
        parts = _ARGUMENT_SPLIT.split(stripped, maxsplit=1)
        keyword = parts[0]
        arguments = parts[1] if len(parts) > 1 else ""
        # Known keywords are valid by construction; the pattern only decides the error.
        if keyword not in _KNOWN and not _KEYWORD.fullmatch(keyword):
            raise JournalFormatError(f"expected an upper-case KEYWORD, got {keyword!r}")
        if not self.started:
            self._magic(keyword, arguments)
            return
        if keyword not in _KNOWN:
            raise JournalFormatError(f"unknown keyword {keyword}")
        if keyword == MAGIC:
            raise JournalFormatError(f"repeated {MAGIC}: expected it only as the first directive")
        if keyword == "RELEASE":
            self._release(arguments)
        elif self.blocks:
            self._release_directive(self.blocks[-1], keyword, arguments)
        else:
            self._header_directive(keyword, arguments)

    def _magic(self, keyword: str, arguments: str) -> None:
        if keyword != MAGIC:
            raise JournalFormatError(
                f"expected 'NENJIM-JOURNAL 1' as the first directive, got {keyword}"
            )
        if arguments == FORMAT_VERSION:
            self.started = True
            return
        if _FORMAT_NUMBER.fullmatch(arguments):
            raise JournalFormatError(
                f"unsupported format version {arguments}: expected 'NENJIM-JOURNAL 1'"
            )
        raise JournalFormatError(f"{MAGIC} expects the format number 1, got {arguments!r}")

    def _header_directive(self, keyword: str, arguments: str) -> None:
        if keyword in _RELEASE_ONLY:
            raise JournalFormatError(f"release keyword {keyword} before the first RELEASE")
        if keyword in self.header:
            raise JournalFormatError(
                f"repeated {keyword}: expected at most one in the header "
                f"(first on line {self.header[keyword][1]})"
            )
        value: object
        if keyword == "ARTIFACT":
            value = self.artifact = _one(keyword, arguments, ArtifactCoordinate, "a coordinate")
        elif keyword == "JOURNAL_VERSION":
            value = _one(keyword, arguments, JournalVersion, "a journal version")
        elif keyword == "PREDECESSOR":
            value = _one(keyword, arguments, Sha256Digest, "a digest")
        elif keyword == "DESCRIPTION":
            value = _quoted(keyword, arguments)
        elif keyword == "INFORMATION":
            value = _one(keyword, arguments, _absolute_uri, "an absolute URI")
        else:
            value = _policy(arguments)
        self.header[keyword] = (value, self._line_number)

    def _release(self, arguments: str) -> None:
        self._require_header()
        version = _one("RELEASE", arguments, ReleaseVersion, "a release version")
        self._check_new_version(version)
        self.blocks.append(_ReleaseBlock(self._line_number, version, self._segment))

    def _check_new_version(self, version: ReleaseVersion) -> None:
        for block in self.blocks:
            if block.version == version:
                raise JournalValidationError(
                    f"duplicate RELEASE {version}: release versions must be unique "
                    f"(first on line {block.line})"
                )

    def _release_directive(self, block: _ReleaseBlock, keyword: str, arguments: str) -> None:
        if keyword in _HEADER_ONLY:
            raise JournalFormatError(
                f"header keyword {keyword} inside RELEASE {block.version}: "
                "expected it before the first RELEASE"
            )
        single = keyword in {"LICENSE", "CONTENT", "DESCRIPTION", "POLICY"}
        if single and keyword in block.seen:
            raise JournalFormatError(
                f"repeated {keyword} in RELEASE {block.version}: expected at most one "
                f"(first on line {block.seen[keyword]})"
            )
        block.seen.setdefault(keyword, self._line_number)
        if keyword == "LICENSE":
            if not arguments:
                raise JournalFormatError("LICENSE expects an SPDX license expression")
            block.license = _value(keyword, arguments, validate_license_expression)
        elif keyword == "CONTENT":
            block.content = _one(keyword, arguments, Sha256Digest, "a digest")
        elif keyword == "DESCRIPTION":
            block.description = _quoted(keyword, arguments)
        elif keyword == "POLICY":
            block.policy = _policy(arguments)
        elif keyword == "DEPENDENCY":
            coordinate, requirement = _pair(keyword, arguments, "a coordinate and a requirement")
            target = _value(keyword, coordinate, ArtifactCoordinate)
            self._unique(block.dependencies, keyword, target, block)
            block.dependencies[target] = (
                _value(keyword, requirement, VersionRequirement),
                self._line_number,
            )
        elif keyword == "EXCLUDE":
            target = _one(keyword, arguments, ArtifactCoordinate, "a coordinate")
            self._unique(block.exclusions, keyword, target, block)
            block.exclusions[target] = self._line_number
        else:
            coordinate, version = _pair(keyword, arguments, "a coordinate and a version")
            target = _value(keyword, coordinate, ArtifactCoordinate)
            self._unique(block.preferences, keyword, target, block)
            block.preferences[target] = (
                _value(keyword, version, ReleaseVersion),
                self._line_number,
            )

    def _unique(
        self, seen: Mapping[ArtifactCoordinate, object], keyword: str,
        target: ArtifactCoordinate, block: _ReleaseBlock,
    ) -> None:  # fmt: skip
        if target in seen:
            raise JournalFormatError(
                f"repeated {keyword} {target} in RELEASE {block.version}: "
                "expected one per coordinate"
            )

    def _require_header(self) -> None:
        for keyword in ("ARTIFACT", "JOURNAL_VERSION"):
            if keyword not in self.header:
                raise JournalFormatError(f"missing {keyword}: expected it in the header")

    def _document(self) -> JournalDocument:
        if not self.started:
            raise JournalFormatError("no directive: expected 'NENJIM-JOURNAL 1'")
        self._require_header()
        assert self.artifact is not None
        header_policy = self._header_value("POLICY", Policy) or ACTIVE_POLICY
        releases = [self._finish(block, header_policy) for block in self.blocks]
        return JournalDocument(
            coordinate=self.artifact,
            version=self._header_value("JOURNAL_VERSION", JournalVersion),
            predecessor=self._header_value("PREDECESSOR", Sha256Digest),
            description=self._header_value("DESCRIPTION", str),
            information=self._header_value("INFORMATION", str),
            policy=header_policy,
            releases=tuple(releases),
        )

    def _header_value(self, keyword: str, kind: type[_V]) -> _V:
        value = self.header.get(keyword, (None, 0))[0]
        assert value is None or isinstance(value, kind)
        return value  # type: ignore[return-value]

    def _finish(self, block: _ReleaseBlock, header_policy: Policy) -> Release:
        if block.parsed is not None:
            return block.parsed
        for keyword in ("LICENSE", "CONTENT"):
            if keyword not in block.seen:
                raise JournalFormatError(
                    f"missing {keyword} in RELEASE {block.version}: expected exactly one",
                    line=block.line,
                )
        assert block.license is not None
        assert block.content is not None
        release = Release(
            version=block.version,
            license=block.license,
            content=block.content,
            description=block.description,
            policy=block.policy or header_policy,
            dependencies=tuple(Dependency(c, r) for c, (r, _) in block.dependencies.items()),
            exclusions=frozenset(block.exclusions),
            preferences=tuple(Preference(c, v) for c, (v, _) in block.preferences.items()),
        )
        assert self.artifact is not None
        for keyword, coordinate, problem in release_rule_violations(self.artifact, release):
            lines = {
                "DEPENDENCY": {c: n for c, (_, n) in block.dependencies.items()},
                "EXCLUDE": block.exclusions,
                "PREFER": {c: n for c, (_, n) in block.preferences.items()},
            }[keyword]
            raise JournalValidationError(
                f"{problem} in RELEASE {block.version}", line=lines[coordinate]
            )
        return _shared(release)


def forget_shared_values() -> None:
    """Empty the caches that share equal values and releases between parsed texts,
    and forget the release blocks of the last text this thread parsed.

    A bulk load calls it when done: what it parsed keeps the instances it
    shares, and the caches would otherwise hold every distinct value of the
    load for the life of the process (~1.5x the texts of a 10,000-file root).
    """
    _VALUE_CACHE.clear()
    _RELEASE_CACHE.clear()
    _RECENT.blocks = None


class _RecentBlocks(threading.local):
    """Per thread, the release blocks of the last text parsed, by their exact text.

    Per thread, so concurrent parsers never share one; one text's worth, since
    a successor is parsed right after its predecessor in a load.
    """

    blocks: tuple[tuple[ArtifactCoordinate | None, Policy], dict[str, Release]] | None = None


_RECENT = _RecentBlocks()


def _remember_blocks(document: JournalDocument, blocks: list[_ReleaseBlock]) -> None:
    context = (document.coordinate, document.policy)
    _RECENT.blocks = (
        context,
        {
            _block_text(block.source): release
            for block, release in zip(blocks, document.releases, strict=True)
        },
    )


def _block_text(segment: str) -> str:
    """A block's text without the blank lines after it (the separator before the next
    block, absent after the last one); ``""`` if those hold a lone CR (never reused)."""
    text = segment.rstrip(" \t\r\n")
    tail = segment[len(text) :]
    if "\r" in tail and "\r" in tail.replace("\r\n", ""):
        return ""
    return text


def _shared(release: Release) -> Release:
    """The instance already held for a release equal to ``release``, else ``release``."""
    held = _RELEASE_CACHE.get(release)
    if held is not None:
        return held
    if len(_RELEASE_CACHE) >= _VALUE_CACHE_LIMIT:
        _RELEASE_CACHE.clear()
    _RELEASE_CACHE[release] = release
    return release


def _value(keyword: str, text: str, build: Callable[[str], _V]) -> _V:
    slot = (build, text)
    cached = _VALUE_CACHE.get(slot)
    if cached is not None:
        return cached  # type: ignore[return-value]  # stored by this same builder
    try:
        value = build(text)
    except InvalidValueError as error:
        raise JournalFormatError(f"{keyword}: {error.detail}") from None
    if len(_VALUE_CACHE) >= _VALUE_CACHE_LIMIT:
        _VALUE_CACHE.clear()
    _VALUE_CACHE[slot] = value
    return value


def _one(keyword: str, arguments: str, build: Callable[[str], _V], expected: str) -> _V:
    parts = _ARGUMENT_SPLIT.split(arguments) if arguments else []
    if len(parts) != 1:
        raise JournalFormatError(f"{keyword} expects exactly one argument: {expected}")
    return _value(keyword, parts[0], build)


def _pair(keyword: str, arguments: str, expected: str) -> tuple[str, str]:
    parts = _ARGUMENT_SPLIT.split(arguments) if arguments else []
    if len(parts) != 2:
        raise JournalFormatError(f"{keyword} expects two arguments: {expected}")
    return parts[0], parts[1]


def _quoted(keyword: str, arguments: str) -> str:
    """A non-empty ``"..."`` with escapes ``\\" \\\\ \\n \\t``, nothing after it but blanks."""
    if not arguments.startswith('"'):
        raise JournalFormatError(f'{keyword} expects a quoted string "..."')
    closing = arguments.find('"', 1)
    if closing > 0 and "\\" not in arguments[1:closing]:
        # No escape before the first closing quote: the text is the characters between.
        return _closed(keyword, arguments, closing, arguments[1:closing])
    out: list[str] = []
    i = 1
    while i < len(arguments):
        char = arguments[i]
        if char == "\\":
            escaped = arguments[i + 1 : i + 2]
            if not escaped:
                break  # a backslash at the end escapes nothing: unterminated
            if escaped not in _ESCAPES:
                raise JournalFormatError(
                    f"{keyword}: unknown escape '\\{escaped}': expected \\\" \\\\ \\n or \\t"
                )
            out.append(_ESCAPES[escaped])
            i += 2
        elif char == '"':
            return _closed(keyword, arguments, i, "".join(out))
        else:
            out.append(char)
            i += 1
    raise JournalFormatError(f"{keyword}: unterminated quoted string: expected a closing quote")


def _closed(keyword: str, arguments: str, closing: int, text: str) -> str:
    """``text``, the quoted string closed at ``closing``, if nothing but blanks follows."""
    if arguments[closing + 1 :].strip(" \t"):
        raise JournalFormatError(
            f"{keyword}: text after the closing quote: expected the end of the line"
        )
    if not text:
        raise JournalFormatError(f"{keyword}: empty quoted string: expected text")
    return text


def _policy(arguments: str) -> Policy:
    status_text, reason_text = _split_first(arguments)
    try:
        status = PolicyStatus(status_text)
    except ValueError:
        raise JournalFormatError(
            f"POLICY: unknown status {status_text!r}: expected active, deprecated, yanked "
            "or revoked, optionally followed by a quoted reason"
        ) from None
    reason = _quoted("POLICY", reason_text) if reason_text else None
    return Policy(status, reason)


def _split_first(arguments: str) -> tuple[str, str]:
    parts = _ARGUMENT_SPLIT.split(arguments, maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def _absolute_uri(text: str) -> str:
    if not _ABSOLUTE_URI.fullmatch(text):
        raise InvalidValueError(
            f"invalid URI {text!r}: expected an RFC 3986 absolute URI with a scheme"
        )
    return text


def _check_characters(line: str) -> None:
    """Reject control characters other than TAB and lone surrogates, naming the column."""
    bad = _CONTROL_CHAR.search(line)
    if bad is not None:
        raise JournalFormatError(
            f"forbidden character U+{ord(bad.group()):04X} at column {bad.start() + 1}: "
            "expected text without control characters other than TAB"
        )
    bad = _SURROGATE.search(line)
    if bad is not None:
        raise JournalFormatError(
            f"lone surrogate U+{ord(bad.group()):04X} at column {bad.start() + 1}: "
            "expected text encodable as UTF-8"
        )
