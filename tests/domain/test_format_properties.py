"""Property tests: valid documents round-trip; no input makes the parser fail untidily."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nenjim.domain.journal.parser import decode_journal_bytes, parse_journal
from nenjim.domain.journal.renderer import render_journal
from nenjim.journal.exception import JournalError, JournalFormatError
from nenjim.journal.model import (
    Dependency,
    JournalDocument,
    JournalRevision,
    Policy,
    Preference,
    Release,
)
from nenjim.journal.valuetypes import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

PROPERTY_SETTINGS = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

LICENSES = [
    "MIT",
    "Apache-2.0",
    "Apache-2.0 OR MIT",
    "GPL-2.0-only WITH Classpath-exception-2.0",
    "LicenseRef-Acme",
    "(MIT OR Apache-2.0) AND BSD-3-Clause",
    "mit and lgpl-2.1-or-later",
]
URIS = [
    "https://widgets.example.com/docs",
    "git+ssh://git@example.com/widget.git",
    "urn:isbn:0451450523",
    "mailto:dev@example.com",
    "https://example.com/a?b=c#d",
]

# --- strategies for valid documents ------------------------------------------------------

segments = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
coordinates = st.lists(segments, min_size=2, max_size=4).map(".".join).map(ArtifactCoordinate)
journal_versions = st.datetimes(
    min_value=datetime(1, 1, 1),
    max_value=datetime(9999, 12, 31, 23, 59, 59),
    timezones=st.just(UTC),
).map(JournalVersion.from_datetime)
digests = st.binary(max_size=16).map(Sha256Digest.of_bytes)
prerelease_identifiers = st.one_of(
    st.integers(0, 10**20).map(str),
    st.from_regex(r"[0-9]{0,2}[a-zA-Z-][0-9a-zA-Z-]{0,4}", fullmatch=True),
)
release_versions = st.builds(
    lambda major, minor, patch, pre: ReleaseVersion(
        f"{major}.{minor}.{patch}" + (f"-{'.'.join(pre)}" if pre else "")
    ),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 12),
    st.lists(prerelease_identifiers, max_size=3),
)
# Text a quoted string can carry: anything encodable but the C0 controls, plus the
# characters escaping must get right; TAB and LF are drawn explicitly.
C0_EXCEPT_TAB_LF = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"]
texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(['"', "\\", "\t", "\n", " ", "#", "é", "世", "😀", "\x85", "\u2028"]),
        st.characters(codec="utf-8", exclude_characters=C0_EXCEPT_TAB_LF),
    ),
    min_size=1,
    max_size=20,
)
policies = st.builds(Policy, st.sampled_from(PolicyStatus), st.none() | texts)


@st.composite
def requirements_containing(draw: st.DrawFn, version: ReleaseVersion) -> VersionRequirement:
    """A requirement of any form that admits ``version``."""
    if draw(st.booleans()):
        return VersionRequirement(str(version))
    low = draw(st.none() | release_versions.filter(lambda v: v <= version))
    high = draw(st.none() | release_versions.filter(lambda v: v >= version))
    if low is None and high is None:
        low = version
    if low == high:
        return VersionRequirement(f"[{low}]")
    # A bound equal to the version must include it.
    opening = "[" if low == version or (low is not None and draw(st.booleans())) else "("
    closing = "]" if high == version or (high is not None and draw(st.booleans())) else ")"
    return VersionRequirement(f"{opening}{low or ''},{high or ''}{closing}")


@st.composite
def releases(draw: st.DrawFn, artifact: ArtifactCoordinate, version: ReleaseVersion) -> Release:
    """A release obeying semantic rules 2-4 for ``artifact``."""
    others = draw(st.lists(coordinates.filter(lambda c: c != artifact), unique=True, max_size=6))
    roles = [
        draw(st.sampled_from(["dependency", "preferred", "excluded", "transitive"])) for _ in others
    ]
    dependencies: list[Dependency] = []
    preferences: list[Preference] = []
    exclusions: set[ArtifactCoordinate] = set()
    for other, role in zip(others, roles, strict=True):
        if role == "excluded":
            exclusions.add(other)
            continue
        preferred = draw(release_versions)
        if role in ("dependency", "preferred"):
            dependencies.append(Dependency(other, draw(requirements_containing(preferred))))
        if role in ("preferred", "transitive"):
            preferences.append(Preference(other, preferred))
    return Release(
        version=version,
        license=draw(st.sampled_from(LICENSES)),
        content=draw(digests),
        description=draw(st.none() | texts),
        policy=draw(policies),
        dependencies=tuple(draw(st.permutations(dependencies))),
        exclusions=frozenset(exclusions),
        preferences=tuple(draw(st.permutations(preferences))),
    )


@st.composite
def documents(draw: st.DrawFn) -> JournalDocument:
    """A valid document: unique release versions, rules 2-4 respected."""
    artifact = draw(coordinates)
    versions = draw(st.lists(release_versions, unique=True, max_size=4))
    return JournalDocument(
        coordinate=artifact,
        version=draw(journal_versions),
        predecessor=draw(st.none() | digests),
        description=draw(st.none() | texts),
        information=draw(st.none() | st.sampled_from(URIS)),
        policy=draw(policies),
        releases=tuple(draw(releases(artifact, v)) for v in versions),
    )


# --- (a) valid documents round-trip ------------------------------------------------------


@PROPERTY_SETTINGS
@given(documents())
def test_rendered_valid_documents_parse_back_equal(document: JournalDocument) -> None:
    text = render_journal(document)
    revision = parse_journal(text)
    assert revision.document == document
    assert revision.text == text
    assert revision.digest == Sha256Digest.of_text(text)
    assert render_journal(revision.document) == text


@PROPERTY_SETTINGS
@given(documents())
def test_crlf_and_missing_final_newline_keep_the_meaning_not_the_digest(
    document: JournalDocument,
) -> None:
    text = render_journal(document)
    crlf = text.replace("\n", "\r\n")
    cut = text.removesuffix("\n")
    for variant in (crlf, cut):
        revision = parse_journal(variant)
        assert revision.document == document
        assert revision.digest == Sha256Digest.of_bytes(variant.encode("utf-8"))
        assert revision.digest != Sha256Digest.of_text(text)


@PROPERTY_SETTINGS
@given(release_versions, release_versions, release_versions)
def test_release_version_order_is_a_total_order_consistent_with_equality(
    a: ReleaseVersion, b: ReleaseVersion, c: ReleaseVersion
) -> None:
    assert (a == b) is (str(a) == str(b))
    assert [a < b, a == b, a > b].count(True) == 1
    if a <= b <= c:
        assert a <= c
    assert ReleaseVersion(str(a)) == a


# --- (b) any text: a revision or a JournalError, nothing else ----------------------------


def parse_or_journal_error(text: str) -> None:
    """Parse ``text``; anything but a revision or a :class:`JournalError` fails the test."""
    outcome: JournalRevision | JournalError
    try:
        outcome = parse_journal(text)
    except JournalError as error:
        outcome = error
    if isinstance(outcome, JournalError):
        assert "\n" not in str(outcome)
        assert outcome.line is None or outcome.line >= 1
    else:
        assert outcome.text == text


@PROPERTY_SETTINGS
@given(st.text())
def test_arbitrary_text_gives_a_revision_or_a_journal_error(text: str) -> None:
    parse_or_journal_error(text)


TOKENS = [
    "NENJIM-JOURNAL 1\n",
    "ARTIFACT com.example.widget\n",
    "JOURNAL_VERSION 20261129T120000Z\n",
    "RELEASE ",
    "LICENSE ",
    "CONTENT ",
    "DEPENDENCY ",
    "EXCLUDE ",
    "PREFER ",
    "POLICY ",
    "DESCRIPTION ",
    "INFORMATION ",
    "PREDECESSOR ",
    "com.example.core",
    "1.0.0",
    "[1.0.0,2.0.0)",
    "(,",
    ")",
    "sha256:" + "0" * 64,
    "MIT",
    " OR ",
    " WITH ",
    "(",
    '"',
    "\\",
    "#",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\x00",
    "\ufeff",
    "\ud800",
    "yanked",
    "https://x.example/",
]


@PROPERTY_SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_journal_like_token_soup_gives_a_revision_or_a_journal_error(text: str) -> None:
    parse_or_journal_error(text)


@st.composite
def mutated_journals(draw: st.DrawFn) -> str:
    """A valid journal with lines deleted, duplicated or swapped and characters inserted."""
    return mutated(draw, render_journal(draw(documents())))


def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` with lines deleted, duplicated or swapped and characters inserted."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        operation = draw(st.sampled_from(["delete", "duplicate", "swap", "insert"]))
        i = draw(st.integers(0, len(lines) - 1))
        if operation == "delete" and len(lines) > 1:
            del lines[i]
        elif operation == "duplicate":
            lines.insert(i, lines[i])
        elif operation == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            position = draw(st.integers(0, len(lines[i])))
            char = draw(
                st.sampled_from(["\r", "\x00", '"', "\\", "\t", " ", "(", ","]) | st.characters()
            )
            lines[i] = lines[i][:position] + char + lines[i][position:]
    return "\n".join(lines)


@PROPERTY_SETTINGS
@given(mutated_journals())
def test_mutated_valid_journals_give_a_revision_or_a_journal_error(text: str) -> None:
    parse_or_journal_error(text)


# --- (c) any bytes: text or a JournalFormatError -----------------------------------------


@PROPERTY_SETTINGS
@given(st.binary() | st.text().map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_decoding_arbitrary_bytes_gives_exact_text_or_a_format_error(data: bytes) -> None:
    outcome: str | JournalFormatError
    try:
        outcome = decode_journal_bytes(data)
    except JournalFormatError as error:
        outcome = error
    if isinstance(outcome, JournalFormatError):
        assert outcome.line is not None
        assert 1 <= outcome.line <= data.count(b"\n") + 1
    else:
        assert outcome.encode("utf-8") == data
        assert not outcome.startswith("\ufeff")
