"""Parser and validator of the Journal text format, version 1.

``parse_journal(text)`` checks every syntax and semantic rule of one text and
returns a :class:`JournalRevision` whose digest is over the exact UTF-8 bytes.
Anything it rejects raises a :class:`JournalError` subclass that names the
artifact (once known) and the 1-based line.

One pass over the lines, in the order the rules are stated: first every
line-level rule of every line (the first broken one is reported), then the
rules of whole release blocks (a missing ``LICENSE``, semantic rules 2-4), then
the document. Where no line could be at fault the check runs on the whole text
at once (control characters, lone carriage returns), so a clean text pays for
each rule once rather than once per line.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from nenjim.domain.journal.document import (
    Dependency,
    JournalDocument,
    JournalRevision,
    Preference,
    Release,
    release_rule_violations,
)
from nenjim.domain.journal.errors import (
    InvalidValueError,
    JournalError,
    JournalFormatError,
    JournalValidationError,
)
from nenjim.domain.journal.spdx import validate_license_expression
from nenjim.domain.journal.values import (
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
# The control characters the per-line checks reject (all but TAB, LF and CR): in
# UTF-8 each is its own byte, and no byte of a longer sequence is below 0x80. One
# pass over the text's bytes (which the digest needs anyway) lets clean texts (nearly
# all of them) skip the per-line checks; a lone surrogate has no bytes at all.
_CONTROL_BYTES = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
_ARGUMENT_SPLIT = re.compile(r"[ \t]+")
# Values repeat across a root (coordinates, requirements, licences); value
# objects are immutable, so equal texts share one validated instance.
_VALUE_CACHE_LIMIT = 65536
# A successor repeats most of its predecessor's releases: equal releases share
# one instance, so a long chain holds each release once, not once per revision.
# Looked up by content digest and version (equal releases have equal ones), which
# hash in two calls; hashing a whole release hashes every value it holds.
_RELEASE_CACHE: dict[tuple[Sha256Digest, ReleaseVersion], Release] = {}

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
_RELEASE = "RELEASE"

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
    return parse_journal_blocks(text)[0]


def parse_journal_blocks(
    text: str, reuse: ParsedBlocks | None = None
) -> tuple[JournalRevision, ParsedBlocks]:
    """Parse ``text`` as :func:`parse_journal` does; also return its release blocks, which
    a later text of the same artifact may take as parsed (``reuse``).

    A block of ``text`` whose exact text equals one of ``reuse``'s is taken as
    parsed when ``text`` has the artifact and the header policy ``reuse`` was
    read with; without ``reuse``, the blocks of the last text this thread parsed
    are. Either way the result, or the error and its line, is the one ``text``
    gives parsed on its own: what a block means depends only on its lines, its
    artifact and the header policy, and its line still counts for duplicate
    versions and later line numbers.
    """
    if not isinstance(text, str):
        raise TypeError(f"a Journal text must be a str, got {type(text).__name__}")
    try:
        data: bytes | None = text.encode("utf-8")
    except UnicodeEncodeError:
        data = None  # a lone surrogate, which the per-line checks report
    parser = _Parser(text, data, _RECENT.blocks if reuse is None else reuse)
    document = parser.parse()
    # The text passed the character checks, so it has its bytes.
    assert data is not None
    revision = JournalRevision(document=document, text=text, digest=Sha256Digest.of_bytes(data))
    return revision, parser.parsed_blocks


def iter_lines(text: str) -> list[str]:
    """Split on LF/CRLF (the last line may lack one); a lone CR is an error."""
    lines, lone_cr = _split_lines(text)
    if lone_cr < len(lines):
        raise _lone_cr(lone_cr + 1)
    return lines


def _split_lines(text: str) -> tuple[list[str], int]:
    """The lines of ``text`` without their LF or CRLF, and the index of the first that
    holds a lone CR (``len(lines)`` if none): it is reported when its turn comes, after
    the errors of the lines before it."""
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # the text ended with an LF: nothing follows the last line
        last_has_lf = True
    else:
        last_has_lf = False
    if "\r" not in text:
        return lines, len(lines)
    # Without an LF after it, a trailing CR is a lone CR, not half a CRLF.
    ended = len(lines) if last_has_lf else len(lines) - 1
    lone_cr = len(lines)
    for index, raw in enumerate(lines):
        line = raw[:-1] if index < ended and raw.endswith("\r") else raw
        lines[index] = line
        if "\r" in line and index < lone_cr:
            lone_cr = index
    return lines, lone_cr


def _lone_cr(number: int) -> JournalFormatError:
    return JournalFormatError(
        "lone carriage return: expected lines ending in LF or CRLF", line=number
    )


def _block_starts(lines: list[str]) -> list[int]:
    """The indexes of the lines whose first word is ``RELEASE``: each opens a block.

    Most lines do not hold the word at all: a substring test, in C, passes over them.
    """
    return [
        index
        for index, line in enumerate(lines)
        if _RELEASE in line and _opens_block(line.lstrip(" \t"))
    ]


def _opens_block(word: str) -> bool:
    return word.startswith(_RELEASE) and (len(word) == 7 or word[7] in " \t")


class _Block:
    """What the lines of one release block said, checked line by line; finished into a
    :class:`Release` once every line of the text has passed."""

    __slots__ = (
        "content",
        "content_line",
        "dependencies",
        "description",
        "description_line",
        "exclusions",
        "license",
        "license_line",
        "line",
        "policy",
        "policy_line",
        "preferences",
        "version",
    )

    def __init__(self, line: int, version: ReleaseVersion) -> None:
        self.line = line
        self.version = version
        self.license: str | None = None
        self.license_line = 0
        self.content: Sha256Digest | None = None
        self.content_line = 0
        self.description: str | None = None
        self.description_line = 0
        self.policy: Policy | None = None
        self.policy_line = 0
        # coordinate -> (value, line)
        self.dependencies: dict[ArtifactCoordinate, tuple[VersionRequirement, int]] = {}
        self.exclusions: dict[ArtifactCoordinate, int] = {}
        self.preferences: dict[ArtifactCoordinate, tuple[ReleaseVersion, int]] = {}


class _Parser:
    """One text's parse; ``parse()`` once."""

    def __init__(self, text: str, data: bytes | None, reuse: ParsedBlocks | None) -> None:
        self._text = text
        self._data = data
        self._reuse = reuse
        self.parsed_blocks = _NO_BLOCKS  # this text's, once it parsed
        self._lines: list[str] = []
        self._lone_cr = 0
        self._clean = True
        self._number = 0  # the line being read, 1-based; 0 once past the lines
        self.started = False
        self.artifact: ArtifactCoordinate | None = None
        self.version: JournalVersion | None = None
        self.predecessor: Sha256Digest | None = None
        self.description: str | None = None
        self.information: str | None = None
        self.policy: Policy | None = None
        self.header: dict[str, int] = {}  # keyword -> its line
        # Each block in text order: its lines read (to finish), or the release reused;
        # and its text (see _block_key).
        self.blocks: list[_Block | Release] = []
        self.keys: list[str] = []
        # Release versions by text (without +build, equal precedence is equal text): line.
        self._versions: dict[str, int] = {}

    def parse(self) -> JournalDocument:
        text = self._text
        if _BLANK_TEXT.fullmatch(text):
            raise JournalFormatError(
                "empty or blank text: expected a Journal starting with 'NENJIM-JOURNAL 1'"
            )
        if text.startswith("\ufeff"):
            raise JournalFormatError("byte-order mark: expected UTF-8 without a BOM", line=1)
        data = self._data
        self._clean = data is not None and len(data.translate(None, _CONTROL_BYTES)) == len(data)
        self._lines, self._lone_cr = _split_lines(text)
        try:
            self._read_lines()
            self._number = 0
            releases = self._releases()
        except JournalError as error:
            error.locate(
                artifact=None if self.artifact is None else str(self.artifact),
                line=self._number or None,
            )
            raise
        assert self.artifact is not None
        assert self.version is not None
        policy = self.policy or ACTIVE_POLICY
        self.parsed_blocks = ParsedBlocks(
            self.artifact, policy, dict(zip(self.keys, releases, strict=True)), _MADE_BY_PARSER
        )
        # Read here, per thread, by the artifact's next text (see _RecentBlocks).
        _RECENT.blocks = self.parsed_blocks
        return JournalDocument(
            coordinate=self.artifact,
            version=self.version,
            predecessor=self.predecessor,
            description=self.description,
            information=self.information,
            policy=policy,
            releases=tuple(releases),
        )

    def _read_lines(self) -> None:
        """Every line-level rule of every line, block by block: a block equal to one of
        the artifact's previous text (a successor repeats most of them) is taken as
        parsed then, so only new or changed blocks are read line by line."""
        count = len(self._lines)
        starts = _block_starts(self._lines)
        for index in range(starts[0] if starts else count):
            self._header_line(index)
        # A block means the same in another text of the same artifact and header policy.
        reuse = self._reuse
        reusable = (
            reuse.releases
            if reuse is not None
            and reuse.artifact == self.artifact
            and reuse.policy == (self.policy or ACTIVE_POLICY)
            else {}
        )
        for start, end in itertools.pairwise([*starts, count]):
            self._release_block(start, end, reusable)

    def _directive(self, index: int) -> tuple[str, str] | None:
        """The keyword and arguments of line ``index``, ``None`` for a blank or comment;
        checks its characters and the keyword's form (before the magic line, too)."""
        self._number = index + 1
        if index == self._lone_cr:
            raise _lone_cr(index + 1)
        line = self._lines[index]
        if not self._clean:
            _check_characters(line)
        stripped = line.strip(" \t")
        if not stripped or stripped[0] == "#":
            return None
        if "\t" in stripped:
            parts = _ARGUMENT_SPLIT.split(stripped, maxsplit=1)
            keyword = parts[0]
            arguments = parts[1] if len(parts) > 1 else ""
        else:
            keyword, _, arguments = stripped.partition(" ")
            arguments = arguments.lstrip(" ")
        # Known keywords are valid by construction; the pattern only decides the error.
        if keyword not in _KNOWN:
            if not _KEYWORD.fullmatch(keyword):
                raise JournalFormatError(f"expected an upper-case KEYWORD, got {keyword!r}")
            if self.started:
                raise JournalFormatError(f"unknown keyword {keyword}")
        if not self.started:
            self._magic(keyword, arguments)
            return None
        if keyword == MAGIC:
            raise JournalFormatError(f"repeated {MAGIC}: expected it only as the first directive")
        return keyword, arguments

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

    def _header_line(self, index: int) -> None:
        directive = self._directive(index)
        if directive is None:
            return
        keyword, arguments = directive
        if keyword in _RELEASE_ONLY:
            raise JournalFormatError(f"release keyword {keyword} before the first RELEASE")
        first = self.header.get(keyword)
        if first is not None:
            raise JournalFormatError(
                f"repeated {keyword}: expected at most one in the header (first on line {first})"
            )
        if keyword == "ARTIFACT":
            self.artifact = _one_shared(keyword, arguments, _COORDINATES, "a coordinate")
        elif keyword == "JOURNAL_VERSION":
            self.version = _one_new(keyword, arguments, JournalVersion, "a journal version")
        elif keyword == "PREDECESSOR":
            self.predecessor = _one_new(keyword, arguments, Sha256Digest, "a digest")
        elif keyword == "DESCRIPTION":
            self.description = _quoted(keyword, arguments)
        elif keyword == "INFORMATION":
            self.information = _one_shared(keyword, arguments, _URIS, "an absolute URI")
        else:
            self.policy = _value(keyword, arguments, _POLICIES)
        self.header[keyword] = index + 1

    def _release_block(self, start: int, end: int, reusable: dict[str, Release]) -> None:
        """Lines ``start`` (its RELEASE line) to ``end`` (excluded) of one release block;
        ``reusable``: the releases of blocks that may be taken as they are, by their text."""
        directive = self._directive(start)
        assert directive is not None  # before the magic line, _directive raised
        if not self.blocks:
            self._require_header()
        key = _block_key(self._lines, start, end)
        self.keys.append(key)
        reused = reusable.get(key)
        if reused is not None:
            self._new_version(directive[1], reused.version, start + 1)
            self.blocks.append(reused)
            return
        version = _one_shared(_RELEASE, directive[1], _VERSIONS, "a release version")
        self._new_version(directive[1], version, start + 1)
        block = _Block(start + 1, version)
        self.blocks.append(block)
        for index in range(start + 1, end):
            directive = self._directive(index)
            if directive is not None:
                self._release_line(block, directive[0], directive[1], index + 1)

    def _new_version(self, text: str, version: ReleaseVersion, line: int) -> None:
        first = self._versions.get(text)
        if first is not None:
            raise JournalValidationError(
                f"duplicate RELEASE {version}: release versions must be unique "
                f"(first on line {first})"
            )
        self._versions[text] = line

    def _release_line(self, block: _Block, keyword: str, arguments: str, line: int) -> None:
        if keyword in _HEADER_ONLY:
            raise JournalFormatError(
                f"header keyword {keyword} inside RELEASE {block.version}: "
                "expected it before the first RELEASE"
            )
        if keyword == "LICENSE":
            _not_repeated(block, keyword, block.license_line)
            block.license_line = line
            if not arguments:
                raise JournalFormatError("LICENSE expects an SPDX license expression")
            block.license = _value(keyword, arguments, _LICENSES)
        elif keyword == "CONTENT":
            _not_repeated(block, keyword, block.content_line)
            block.content_line = line
            block.content = _one_new(keyword, arguments, Sha256Digest, "a digest")
        elif keyword == "DEPENDENCY":
            coordinate, requirement = _pair(keyword, arguments, "a coordinate and a requirement")
            target = _value(keyword, coordinate, _COORDINATES)
            _unique(block.dependencies, keyword, target, block)
            block.dependencies[target] = (_value(keyword, requirement, _REQUIREMENTS), line)
        elif keyword == "EXCLUDE":
            target = _one_shared(keyword, arguments, _COORDINATES, "a coordinate")
            _unique(block.exclusions, keyword, target, block)
            block.exclusions[target] = line
        elif keyword == "PREFER":
            coordinate, version = _pair(keyword, arguments, "a coordinate and a version")
            target = _value(keyword, coordinate, _COORDINATES)
            _unique(block.preferences, keyword, target, block)
            block.preferences[target] = (_value(keyword, version, _VERSIONS), line)
        elif keyword == "DESCRIPTION":
            _not_repeated(block, keyword, block.description_line)
            block.description_line = line
            block.description = _quoted(keyword, arguments)
        else:  # POLICY: RELEASE lines open blocks, the other keywords were refused
            _not_repeated(block, keyword, block.policy_line)
            block.policy_line = line
            block.policy = _value(keyword, arguments, _POLICIES)

    def _require_header(self) -> None:
        for keyword in ("ARTIFACT", "JOURNAL_VERSION"):
            if keyword not in self.header:
                raise JournalFormatError(f"missing {keyword}: expected it in the header")

    def _releases(self) -> list[Release]:
        """The rules of whole blocks, once every line passed; the releases in text order."""
        if not self.started:
            raise JournalFormatError("no directive: expected 'NENJIM-JOURNAL 1'")
        self._require_header()
        assert self.artifact is not None
        header_policy = self.policy or ACTIVE_POLICY
        return [
            block if isinstance(block, Release) else _finish(block, self.artifact, header_policy)
            for block in self.blocks
        ]


def _not_repeated(block: _Block, keyword: str, first: int) -> None:
    if first:
        raise JournalFormatError(
            f"repeated {keyword} in RELEASE {block.version}: expected at most one "
            f"(first on line {first})"
        )


def _unique(
    seen: dict[ArtifactCoordinate, _V], keyword: str, target: ArtifactCoordinate, block: _Block
) -> None:
    if target in seen:
        raise JournalFormatError(
            f"repeated {keyword} {target} in RELEASE {block.version}: expected one per coordinate"
        )


def _finish(block: _Block, artifact: ArtifactCoordinate, header_policy: Policy) -> Release:
    """The release of a block whose every line passed: its required keywords, then rules 2-4."""
    for keyword, line in (("LICENSE", block.license_line), ("CONTENT", block.content_line)):
        if not line:
            raise JournalFormatError(
                f"missing {keyword} in RELEASE {block.version}: expected exactly one",
                line=block.line,
            )
    assert block.license is not None
    assert block.content is not None
    dependencies = block.dependencies
    exclusions = block.exclusions
    preferences = block.preferences
    release = Release(
        version=block.version,
        license=block.license,
        content=block.content,
        description=block.description,
        policy=block.policy or header_policy,
        dependencies=tuple(Dependency(c, r) for c, (r, _) in dependencies.items()),
        exclusions=frozenset(exclusions),
        preferences=tuple(Preference(c, v) for c, (v, _) in preferences.items()),
    )
    if _may_break_rules(artifact, dependencies, exclusions, preferences):
        for keyword, coordinate, problem in release_rule_violations(artifact, release):
            lines = {
                "DEPENDENCY": {c: n for c, (_, n) in dependencies.items()},
                "EXCLUDE": exclusions,
                "PREFER": {c: n for c, (_, n) in preferences.items()},
            }[keyword]
            raise JournalValidationError(
                f"{problem} in RELEASE {block.version}", line=lines[coordinate]
            )
    return _shared(release)


def _may_break_rules(
    artifact: ArtifactCoordinate,
    dependencies: dict[ArtifactCoordinate, tuple[VersionRequirement, int]],
    exclusions: dict[ArtifactCoordinate, int],
    preferences: dict[ArtifactCoordinate, tuple[ReleaseVersion, int]],
) -> bool:
    """Whether rules 2-4 need checking in full: ``False`` only where no rule can apply
    (no coordinate is the artifact or named twice across the kinds)."""
    if artifact in dependencies or artifact in exclusions or artifact in preferences:
        return True
    if exclusions and not exclusions.keys().isdisjoint(dependencies):
        return True
    return bool(preferences) and not (
        preferences.keys().isdisjoint(exclusions) and preferences.keys().isdisjoint(dependencies)
    )


def forget_shared_values() -> None:
    """Empty the caches that share equal values and releases between parsed texts,
    and forget the release blocks of the last text this thread parsed.

    A bulk load calls it when done: what it parsed keeps the instances it
    shares, and the caches would otherwise hold every distinct value of the
    load for the life of the process (~1.5x the texts of a 10,000-file root).
    """
    for cache in _VALUE_CACHES:
        cache.clear()
    _RELEASE_CACHE.clear()
    _RECENT.blocks = None


def forget_shared_releases() -> None:
    """Empty the cache that shares equal releases between parsed texts (a bulk load
    calls it as it goes: each release holds its own content digest, so that cache
    grows with the load, while the values it shares repeat)."""
    _RELEASE_CACHE.clear()


_MADE_BY_PARSER = object()


class ParsedBlocks:
    """The release blocks of one text that parsed, by their lines' exact text (see
    :func:`_block_key`), with the artifact and the header policy they were read for.

    Only a parse makes them (:func:`parse_journal_blocks`): a block found here is taken
    as checked, so blocks that did not pass every rule must never be offered.
    """

    __slots__ = ("artifact", "policy", "releases")

    def __init__(
        self,
        artifact: ArtifactCoordinate | None,
        policy: Policy,
        releases: dict[str, Release],
        made_by: object,
    ) -> None:
        if made_by is not _MADE_BY_PARSER:
            raise TypeError("only the Journal parser makes ParsedBlocks")
        self.artifact = artifact
        self.policy = policy
        self.releases = releases


_NO_BLOCKS = ParsedBlocks(None, ACTIVE_POLICY, {}, _MADE_BY_PARSER)


class _RecentBlocks(threading.local):
    """Per thread, the release blocks of the last text parsed.

    Per thread, so concurrent parsers never share one; one text's worth, since
    a successor is parsed right after its predecessor in a load.
    """

    blocks: ParsedBlocks | None = None


_RECENT = _RecentBlocks()


def _block_key(lines: list[str], start: int, end: int) -> str:
    """A block's lines as text, without the blank lines after it (the separator before
    the next block, absent after the last one). Lines keep a lone CR (the only CR left
    after splitting), so a block holding one never equals a block that parsed."""
    return "\n".join(lines[start:end]).rstrip(" \t\n")


def _shared(release: Release) -> Release:
    """The instance already held for a release equal to ``release``, else ``release``."""
    key = (release.content, release.version)
    held = _RELEASE_CACHE.get(key)
    if held is not None and held == release:
        return held
    if len(_RELEASE_CACHE) >= _VALUE_CACHE_LIMIT:
        _RELEASE_CACHE.clear()
    _RELEASE_CACHE[key] = release
    return release


class _ValueCache(dict[str, _V]):
    """Validated values of one kind by their text, and how to build one."""

    __slots__ = ("build",)

    def __init__(self, build: Callable[[str], _V]) -> None:
        super().__init__()
        self.build = build


def _value(keyword: str, text: str, cache: _ValueCache[_V]) -> _V:
    """The value ``text`` names, shared with every earlier equal text."""
    value = cache.get(text)
    if value is None:
        value = _build(keyword, text, cache.build)
        if len(cache) >= _VALUE_CACHE_LIMIT:
            cache.clear()
        cache[text] = value
    return value


def _build(keyword: str, text: str, build: Callable[[str], _V]) -> _V:
    try:
        return build(text)
    except InvalidValueError as error:
        raise JournalFormatError(f"{keyword}: {error.detail}") from None


def _only_argument(keyword: str, arguments: str, expected: str) -> str:
    # Arguments come stripped: exactly one iff non-empty without a blank inside.
    if not arguments or " " in arguments or "\t" in arguments:
        raise JournalFormatError(f"{keyword} expects exactly one argument: {expected}")
    return arguments


def _one_shared(keyword: str, arguments: str, cache: _ValueCache[_V], expected: str) -> _V:
    """The one argument's value, shared (values that repeat across texts)."""
    return _value(keyword, _only_argument(keyword, arguments, expected), cache)


def _one_new(keyword: str, arguments: str, build: Callable[[str], _V], expected: str) -> _V:
    """The one argument's value, built afresh (values unique to their text)."""
    return _build(keyword, _only_argument(keyword, arguments, expected), build)


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


_COORDINATES = _ValueCache(ArtifactCoordinate)
_REQUIREMENTS = _ValueCache(VersionRequirement)
_VERSIONS = _ValueCache(ReleaseVersion)
_LICENSES = _ValueCache(validate_license_expression)
_POLICIES = _ValueCache(_policy)
_URIS = _ValueCache(_absolute_uri)
_VALUE_CACHES: tuple[_ValueCache[Any], ...] = (
    _COORDINATES,
    _REQUIREMENTS,
    _VERSIONS,
    _LICENSES,
    _POLICIES,
    _URIS,
)
