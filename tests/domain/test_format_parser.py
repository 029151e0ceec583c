"""The parser against journal-format.md, one test (or parametrized family) per rule."""

from __future__ import annotations

import hashlib

import pytest

from nenjim.domain.journal.parser import decode_journal_bytes, iter_lines, parse_journal
from nenjim.journal.exception import JournalError, JournalFormatError, JournalValidationError
from nenjim.journal.model import Dependency, JournalRevision, Policy, Preference
from nenjim.journal.valuetypes import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

ARTIFACT = "com.example.widget"
CONTENT = "sha256:" + "2c" * 32
PREDECESSOR = "sha256:" + "9f" * 32
MAGIC = "NENJIM-JOURNAL 1"
HEADER = (MAGIC, f"ARTIFACT {ARTIFACT}", "JOURNAL_VERSION 20261129T120000Z")
# Line numbers: HEADER is lines 1-3; a release opened right after it starts on line 4.
RELEASE = ("RELEASE 1.0.0", "  LICENSE MIT", f"  CONTENT {CONTENT}")


def journal(*lines: str) -> str:
    """The LF-joined, LF-terminated text of ``lines``."""
    return "\n".join(lines) + "\n"


def rejected(
    text: str,
    kind: type[JournalError],
    line: int | None,
    fragment: str,
    *,
    artifact: str | None = ARTIFACT,
) -> JournalError:
    """Assert ``text`` fails as exactly ``kind`` at ``line``, naming ``artifact``, ``fragment``."""
    with pytest.raises(JournalError) as info:
        parse_journal(text)
    error = info.value
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    assert error.line == line, str(error)
    assert error.artifact == artifact, str(error)
    assert fragment in error.detail, str(error)
    message = str(error)
    assert "\n" not in message
    if line is not None:
        assert f"line {line}" in message
    if artifact is not None:
        assert f"artifact {artifact}" in message
    return error


def test_the_example_of_the_format_document_parses() -> None:
    text = journal(
        MAGIC,
        "# comments are allowed anywhere and are part of the digest",
        f"ARTIFACT {ARTIFACT}",
        "JOURNAL_VERSION 20261129T120000Z",
        f"PREDECESSOR {PREDECESSOR}",
        'DESCRIPTION "Widgets for \\"everyone\\""',
        "INFORMATION https://widgets.example.com/docs",
        "POLICY active",
        "",
        "RELEASE 1.0.0",
        "  LICENSE Apache-2.0",
        f"  CONTENT {CONTENT}",
        '  POLICY yanked "broken build, use 1.0.1"',
        "",
        "RELEASE 1.0.1",
        '  DESCRIPTION "Fixes the build"',
        "  LICENSE Apache-2.0 OR MIT",
        "  CONTENT sha256:" + "fc" * 32,
        "  DEPENDENCY com.example.core [1.2.0,2.0.0)",
        "  DEPENDENCY com.example.log 0.9.3",
        "  PREFER com.example.core 1.4.0",
        "  EXCLUDE com.example.legacy",
    )
    revision = parse_journal(text)
    assert isinstance(revision, JournalRevision)
    assert revision.text == text
    assert revision.digest == Sha256Digest.of_text(text)
    assert revision.coordinate == ArtifactCoordinate(ARTIFACT)
    assert revision.version == JournalVersion("20261129T120000Z")
    assert revision.predecessor == Sha256Digest(PREDECESSOR)
    assert not revision.is_genesis
    assert revision.description == 'Widgets for "everyone"'
    assert revision.information == "https://widgets.example.com/docs"
    assert revision.policy == Policy(PolicyStatus.ACTIVE)
    first, second = revision.releases
    assert first.version == ReleaseVersion("1.0.0")
    assert first.license == "Apache-2.0"
    assert first.content == Sha256Digest(CONTENT)
    assert first.description is None
    assert first.policy == Policy(PolicyStatus.YANKED, "broken build, use 1.0.1")
    assert (first.dependencies, first.exclusions, first.preferences) == ((), frozenset(), ())
    assert second.description == "Fixes the build"
    assert second.license == "Apache-2.0 OR MIT"
    assert second.policy == Policy(PolicyStatus.ACTIVE)
    assert second.dependencies == (
        Dependency(ArtifactCoordinate("com.example.core"), VersionRequirement("[1.2.0,2.0.0)")),
        Dependency(ArtifactCoordinate("com.example.log"), VersionRequirement("0.9.3")),
    )
    assert second.exclusions == frozenset({ArtifactCoordinate("com.example.legacy")})
    assert second.preferences == (
        Preference(ArtifactCoordinate("com.example.core"), ReleaseVersion("1.4.0")),
    )
    assert revision.release("1.0.1") is second
    assert revision.release(ReleaseVersion("2.0.0")) is None


# --- input types, empty and blank text ---------------------------------------------------


@pytest.mark.parametrize("not_text", [None, journal(*HEADER).encode(), bytearray(b"x"), 1])
def test_a_non_str_text_is_a_type_error(not_text: object) -> None:
    with pytest.raises(TypeError):
        parse_journal(not_text)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", " ", "\n", "\t \n  \n", "\r\n", " \r\n\t"])
def test_empty_or_blank_text_is_a_format_error(text: str) -> None:
    rejected(text, JournalFormatError, None, "empty or blank", artifact=None)


def test_text_of_only_comments_is_a_format_error() -> None:
    rejected(
        journal("# nothing", "  # here"),
        JournalFormatError,
        None,
        "NENJIM-JOURNAL 1",
        artifact=None,
    )


# --- encoding ----------------------------------------------------------------------------


def test_a_byte_order_mark_is_a_format_error() -> None:
    rejected("\ufeff" + journal(*HEADER), JournalFormatError, 1, "byte-order mark", artifact=None)


def test_decode_rejects_a_byte_order_mark() -> None:
    with pytest.raises(JournalFormatError) as info:
        decode_journal_bytes(b"\xef\xbb\xbf" + journal(*HEADER).encode())
    assert info.value.line == 1


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"\xff", 1),
        (b"NENJIM-JOURNAL 1\nARTIFACT com.example.widget\n# \xc3\x28\n", 3),  # bad continuation
        (b"a\nb\nc\nd\n\x80", 5),  # lone continuation byte
        (b"a\r\nb\r\n\xc0\xaf", 3),  # overlong encoding; CRLF lines count once
        (b"a\n\xed\xa0\x80", 2),  # an encoded surrogate
        (b"a\n\xf4\x90\x80\x80", 2),  # above U+10FFFF
        (b"a\nb\n\xe2\x82", 3),  # truncated at the end
    ],
)
def test_decode_names_the_line_of_invalid_utf8(data: bytes, line: int) -> None:
    with pytest.raises(JournalFormatError) as info:
        decode_journal_bytes(data)
    assert info.value.line == line
    assert f"line {line}" in str(info.value)
    assert "UTF-8" in str(info.value)


def test_decode_returns_the_exact_text() -> None:
    data = "NENJIM-JOURNAL 1\r\n# Grüße 😀\n".encode()
    assert decode_journal_bytes(data) == data.decode("utf-8")


@pytest.mark.parametrize("not_bytes", [None, "text", bytearray(b"text"), memoryview(b"text")])
def test_decode_rejects_anything_but_bytes(not_bytes: object) -> None:
    with pytest.raises(TypeError):
        decode_journal_bytes(not_bytes)  # type: ignore[arg-type]


C0_EXCEPT_TAB_LF_CR = [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"]


@pytest.mark.parametrize("char", C0_EXCEPT_TAB_LF_CR, ids=lambda c: f"U+{ord(c):04X}")
@pytest.mark.parametrize("where", ["comment", "quoted", "keyword"])
def test_c0_controls_other_than_tab_are_format_errors(char: str, where: str) -> None:
    line = {
        "comment": f"# a comment with {char}",
        "quoted": f'DESCRIPTION "with {char}"',
        "keyword": f'DESCRIPTION{char} "x"',
    }[where]
    error = rejected(journal(*HEADER, line), JournalFormatError, 4, f"U+{ord(char):04X}")
    assert "TAB" in error.detail


def test_a_lone_surrogate_is_a_format_error() -> None:
    rejected(journal(*HEADER, 'DESCRIPTION "\ud800"'), JournalFormatError, 4, "surrogate")


def test_del_and_c1_controls_are_accepted() -> None:
    # Only C0 controls are forbidden; DEL and C1 (incl. U+0085 NEL) are text, not line breaks.
    revision = parse_journal(journal(*HEADER, 'DESCRIPTION "a\x7fb\x85c\u2028d"'))
    assert revision.description == "a\x7fb\x85c\u2028d"


def test_tab_is_allowed_anywhere() -> None:
    revision = parse_journal(journal(*HEADER, 'DESCRIPTION\t"a\tb"\t', "\t# tab comment"))
    assert revision.description == "a\tb"


# --- lines -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "artifact"),
    [
        (journal(MAGIC, f"ARTIFACT {ARTIFACT}\rJOURNAL_VERSION 20261129T120000Z"), 2, None),
        (journal(*HEADER, "# com\rment"), 4, ARTIFACT),
        (journal(*HEADER, "\r\r"), 4, ARTIFACT),  # one CR of a CRLF is fine, the other is not
        (journal(*HEADER).replace("\n", "\r\r\n"), 1, None),
        (journal(*HEADER).replace("\n", "\r"), 1, None),  # old Mac line endings
        (journal(*HEADER) + "# last line\r", 4, ARTIFACT),  # a final CR without LF is no CRLF
    ],
)
def test_a_lone_carriage_return_is_a_format_error(
    text: str, line: int, artifact: str | None
) -> None:
    rejected(text, JournalFormatError, line, "lone carriage return", artifact=artifact)


def test_a_lone_cr_is_reported_after_the_lines_before_it_were_read() -> None:
    # A NUL on line 4 comes before the CR on line 5, and the artifact of line 2 is known.
    text = journal(*HEADER, "# \x00", "# \r")
    rejected(text, JournalFormatError, 4, "U+0000")


def test_crlf_lines_parse_like_lf_lines_but_digest_the_crlf_bytes() -> None:
    lf = journal(*HEADER, 'DESCRIPTION "x"', *RELEASE)
    crlf = lf.replace("\n", "\r\n")
    mixed = lf.replace("\n", "\r\n", 3)
    assert parse_journal(crlf).document == parse_journal(lf).document
    assert parse_journal(mixed).document == parse_journal(lf).document
    assert parse_journal(crlf).text == crlf
    assert str(parse_journal(crlf).digest) == (
        "sha256:" + hashlib.sha256(crlf.encode("utf-8")).hexdigest()
    )
    assert parse_journal(crlf).digest != parse_journal(lf).digest
    assert parse_journal(crlf).release("1.0.0") == parse_journal(lf).release("1.0.0")


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_the_last_line_may_lack_its_line_ending(ending: str) -> None:
    full = journal(*HEADER, *RELEASE).replace("\n", ending)
    cut = full.removesuffix(ending)
    assert parse_journal(cut).document == parse_journal(full).document
    assert parse_journal(cut).digest == Sha256Digest.of_text(cut) != parse_journal(full).digest


def test_iter_lines_splits_lf_and_crlf() -> None:
    assert iter_lines("a\nb\r\nc") == ["a", "b", "c"]
    assert iter_lines("a\n\n") == ["a", ""]
    assert iter_lines("") == []
    with pytest.raises(JournalFormatError) as info:
        iter_lines("a\nb\rc\n")
    assert info.value.line == 2


def test_blank_and_comment_lines_are_ignored_anywhere() -> None:
    plain = journal(*HEADER, 'DESCRIPTION "x"', *RELEASE)
    noisy = journal(
        "# before the magic",
        "",
        "   ",
        MAGIC,
        "\t",
        "# RELEASE 9.9.9 is only a comment",
        HEADER[1],
        "  # indented comment",
        "#no space after the hash",
        HEADER[2],
        'DESCRIPTION "x"',
        " \t ",
        RELEASE[0],
        "# ARTIFACT com.other.thing",
        "",
        *RELEASE[1:],
        "# after the last directive",
        "",
    )
    assert parse_journal(noisy).document == parse_journal(plain).document
    assert parse_journal(noisy).digest != parse_journal(plain).digest


def test_indentation_is_cosmetic() -> None:
    flat = journal(*HEADER, *[line.strip() for line in RELEASE])
    indented = journal(*(f"\t {line}" for line in HEADER), *(f"    {line}" for line in RELEASE))
    assert parse_journal(indented).document == parse_journal(flat).document


def test_trailing_blanks_are_ignored() -> None:
    plain = journal(*HEADER, 'DESCRIPTION "x"', "POLICY yanked", *RELEASE)
    trailing = journal(
        *(f"{line} \t " for line in (*HEADER, 'DESCRIPTION "x"', "POLICY yanked", *RELEASE))
    )
    assert parse_journal(trailing).document == parse_journal(plain).document


def test_spaces_and_tabs_separate_arguments() -> None:
    text = journal(
        "NENJIM-JOURNAL\t1",
        f"ARTIFACT\t \t{ARTIFACT}",
        "JOURNAL_VERSION  20261129T120000Z",
        'POLICY\tdeprecated \t"old"',
        "RELEASE\t1.0.0",
        "LICENSE\tMIT\tOR  Apache-2.0",
        f"CONTENT\t{CONTENT}",
        "DEPENDENCY\tcom.example.core  \t[1.0.0,2.0.0)",
        "PREFER  com.example.core\t1.5.0",
    )
    release = parse_journal(text).releases[0]
    assert parse_journal(text).policy == Policy(PolicyStatus.DEPRECATED, "old")
    assert release.dependencies == (
        Dependency(ArtifactCoordinate("com.example.core"), VersionRequirement("[1.0.0,2.0.0)")),
    )
    assert release.preferences[0].version == ReleaseVersion("1.5.0")


@pytest.mark.parametrize("blank", ["\u00a0", "\u3000", "\u2003", "\x85", "\u200b"])
def test_other_unicode_blanks_do_not_separate(blank: str) -> None:
    # Only spaces/tabs separate: any other blank is part of the word it touches (strict).
    rejected(
        journal(MAGIC, f"ARTIFACT{blank}{ARTIFACT}"),
        JournalFormatError,
        2,
        "KEYWORD",
        artifact=None,
    )
    rejected(
        journal(*HEADER, *RELEASE, f"DEPENDENCY com.example.core{blank}1.0.0"),
        JournalFormatError,
        7,
        "DEPENDENCY",
    )


def test_a_line_of_only_a_unicode_blank_is_not_blank() -> None:
    rejected(journal(*HEADER, "\u00a0"), JournalFormatError, 4, "KEYWORD")


def test_no_trailing_comment_after_a_directive() -> None:
    # '#' starts a comment only as a line's first non-blank character.
    rejected(journal(*HEADER, "RELEASE 1.0.0 # first"), JournalFormatError, 4, "RELEASE")


# --- the first directive ------------------------------------------------------------------


def test_the_magic_line_may_follow_comments_and_be_indented() -> None:
    text = journal("# leading comment", "", "  NENJIM-JOURNAL 1", *HEADER[1:])
    assert parse_journal(text).coordinate == ArtifactCoordinate(ARTIFACT)


@pytest.mark.parametrize(
    ("lines", "line"),
    [
        ((f"ARTIFACT {ARTIFACT}", MAGIC), 1),
        (("# comment", "", "JOURNAL_VERSION 20261129T120000Z"), 3),
        (("RELEASE 1.0.0",), 1),
        (("NENJIM_JOURNAL 1",), 1),
        (("NENJIM-JOURNAL-1",), 1),
    ],
)
def test_the_first_directive_must_be_the_magic_line(lines: tuple[str, ...], line: int) -> None:
    rejected(journal(*lines), JournalFormatError, line, "NENJIM-JOURNAL 1", artifact=None)


@pytest.mark.parametrize("number", ["2", "0", "10", "01", "999999999999999999999"])
def test_another_format_number_is_an_unsupported_format_version(number: str) -> None:
    rejected(
        journal(f"NENJIM-JOURNAL {number}", *HEADER[1:]),
        JournalFormatError,
        1,
        f"unsupported format version {number}",
        artifact=None,
    )


@pytest.mark.parametrize("arguments", ["", "x", "1 1", "1.0", "v1", "-1", '"1"'])
def test_a_magic_line_without_a_single_number_is_a_format_error(arguments: str) -> None:
    # Not a number at all: a malformed magic line, not an "unsupported format version".
    error = rejected(
        journal(f"NENJIM-JOURNAL {arguments}", *HEADER[1:]),
        JournalFormatError,
        1,
        "NENJIM-JOURNAL",
        artifact=None,
    )
    assert "unsupported" not in error.detail


def test_lower_case_magic_is_a_format_error() -> None:
    rejected(
        journal("nenjim-journal 1"), JournalFormatError, 1, "upper-case KEYWORD", artifact=None
    )


def test_a_repeated_magic_line_is_a_format_error() -> None:
    rejected(journal(*HEADER, MAGIC), JournalFormatError, 4, "repeated NENJIM-JOURNAL")
    rejected(journal(*HEADER, *RELEASE, MAGIC), JournalFormatError, 7, "repeated NENJIM-JOURNAL")


# --- keywords ----------------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["artifact", "Artifact", "aRTIFACT", "1ARTIFACT", "_ARTIFACT"])
def test_a_keyword_must_be_upper_case(keyword: str) -> None:
    rejected(
        journal(MAGIC, f"{keyword} {ARTIFACT}"),
        JournalFormatError,
        2,
        "upper-case KEYWORD",
        artifact=None,
    )


@pytest.mark.parametrize("keyword", ["VERSION", "AUTHOR", "LICENCE", "RELEASES", "DEPENDS"])
def test_an_unknown_keyword_is_a_format_error(keyword: str) -> None:
    rejected(journal(*HEADER, f"{keyword} x"), JournalFormatError, 4, f"unknown keyword {keyword}")
    rejected(
        journal(*HEADER, *RELEASE, f"{keyword} x"),
        JournalFormatError,
        7,
        f"unknown keyword {keyword}",
    )


@pytest.mark.parametrize(
    "line",
    [
        f"ARTIFACT {ARTIFACT}",
        "JOURNAL_VERSION 20261129T120000Z",
        f"PREDECESSOR {PREDECESSOR}",
        "INFORMATION https://example.com",
    ],
)
def test_a_header_keyword_inside_a_release_block_is_a_format_error(line: str) -> None:
    keyword = line.split(maxsplit=1)[0]
    rejected(journal(*HEADER, *RELEASE, line), JournalFormatError, 7, f"header keyword {keyword}")


@pytest.mark.parametrize(
    "line",
    [
        "LICENSE MIT",
        f"CONTENT {CONTENT}",
        "DEPENDENCY com.example.core 1.0.0",
        "EXCLUDE com.example.core",
        "PREFER com.example.core 1.0.0",
    ],
)
def test_a_release_keyword_before_the_first_release_is_a_format_error(line: str) -> None:
    keyword = line.split(maxsplit=1)[0]
    rejected(journal(*HEADER, line, *RELEASE), JournalFormatError, 4, f"release keyword {keyword}")


@pytest.mark.parametrize(
    "line",
    [
        f"ARTIFACT {ARTIFACT}",
        "JOURNAL_VERSION 20261129T120000Z",
        f"PREDECESSOR {PREDECESSOR}",
        'DESCRIPTION "x"',
        "INFORMATION https://example.com",
        "POLICY active",
    ],
)
def test_a_repeated_header_keyword_is_a_format_error(line: str) -> None:
    keyword = line.split(maxsplit=1)[0]
    lines = (*HEADER, line) if line in HEADER else (*HEADER, line, line)
    rejected(journal(*lines), JournalFormatError, len(lines), f"repeated {keyword}")
    # The repetition is an error even when the two values differ.
    other = line.replace("x", "y").replace("active", "yanked").replace("9f", "8f")
    other = other.replace("widget", "gadget").replace("1129", "1130")
    assert other != line
    lines = (*lines[:-1], other)
    rejected(journal(*lines), JournalFormatError, len(lines), f"repeated {keyword}")


@pytest.mark.parametrize(
    ("line", "again"),
    [
        ("LICENSE MIT", "LICENSE Apache-2.0"),
        (f"CONTENT {CONTENT}", f"CONTENT {CONTENT}"),
        ('DESCRIPTION "x"', 'DESCRIPTION "y"'),
        ("POLICY yanked", "POLICY yanked"),
    ],
)
def test_a_repeated_release_keyword_is_a_format_error(line: str, again: str) -> None:
    keyword = line.split(maxsplit=1)[0]
    lines = [*RELEASE, line] if keyword not in ("LICENSE", "CONTENT") else list(RELEASE)
    lines.append(again)
    rejected(
        journal(*HEADER, *lines), JournalFormatError, 4 + len(lines) - 1, f"repeated {keyword}"
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("DEPENDENCY com.example.core 1.0.0", "DEPENDENCY com.example.core [2.0.0,)"),
        ("EXCLUDE com.example.legacy", "EXCLUDE com.example.legacy"),
        ("PREFER com.example.core 1.0.0", "PREFER com.example.core 1.0.0"),
    ],
)
def test_dependency_exclude_prefer_allow_one_line_per_coordinate(first: str, second: str) -> None:
    keyword = first.split(maxsplit=1)[0]
    rejected(
        journal(*HEADER, *RELEASE, first, second), JournalFormatError, 8, f"repeated {keyword}"
    )
    # The same coordinate in another release is fine.
    other = ("RELEASE 2.0.0", "LICENSE MIT", f"CONTENT {CONTENT}")
    revision = parse_journal(journal(*HEADER, *RELEASE, first, *other, first))
    assert len(revision.releases) == 2


def test_several_coordinates_per_keyword_are_fine_and_sorted() -> None:
    revision = parse_journal(
        journal(
            *HEADER,
            *RELEASE,
            "DEPENDENCY org.z.core 1.0.0",
            "DEPENDENCY com.a.core 2.0.0",
            "EXCLUDE org.old.one",
            "EXCLUDE com.old.two",
            "PREFER org.y.lib 1.0.0",
            "PREFER com.b.lib 3.0.0",
        )
    )
    (release,) = revision.releases
    assert [str(d.coordinate) for d in release.dependencies] == ["com.a.core", "org.z.core"]
    assert release.exclusions == {
        ArtifactCoordinate("org.old.one"),
        ArtifactCoordinate("com.old.two"),
    }
    assert [str(p.coordinate) for p in release.preferences] == ["com.b.lib", "org.y.lib"]


@pytest.mark.parametrize(
    ("lines", "line", "fragment"),
    [
        ((MAGIC, "JOURNAL_VERSION 20261129T120000Z"), None, "missing ARTIFACT"),
        ((MAGIC, f"ARTIFACT {ARTIFACT}"), None, "missing JOURNAL_VERSION"),
        ((MAGIC,), None, "missing ARTIFACT"),
        # The header ends at the first RELEASE, so that is where a missing keyword is noticed.
        ((MAGIC, "JOURNAL_VERSION 20261129T120000Z", *RELEASE), 3, "missing ARTIFACT"),
        ((MAGIC, f"ARTIFACT {ARTIFACT}", "", *RELEASE), 4, "missing JOURNAL_VERSION"),
    ],
)
def test_a_missing_header_keyword_is_a_format_error(
    lines: tuple[str, ...], line: int | None, fragment: str
) -> None:
    artifact = ARTIFACT if f"ARTIFACT {ARTIFACT}" in lines else None
    rejected(journal(*lines), JournalFormatError, line, fragment, artifact=artifact)


@pytest.mark.parametrize("missing", ["LICENSE", "CONTENT"])
def test_a_missing_release_keyword_is_a_format_error_at_its_release(missing: str) -> None:
    block = [line for line in RELEASE if missing not in line]
    other = ("RELEASE 2.0.0", "LICENSE MIT", f"CONTENT {CONTENT}")
    # Reported at the RELEASE line of the incomplete block (line 7), not at the end.
    text = journal(*HEADER, *other, *block, "# end")
    rejected(text, JournalFormatError, 7, f"missing {missing} in RELEASE 1.0.0")


def test_zero_releases_are_allowed() -> None:
    revision = parse_journal(journal(*HEADER))
    assert revision.releases == ()
    assert revision.is_genesis
    assert revision.predecessor is None
    assert revision.description is None
    assert revision.information is None


def test_header_policy_defaults_to_active_without_a_reason() -> None:
    revision = parse_journal(journal(*HEADER, *RELEASE))
    assert revision.policy == Policy(PolicyStatus.ACTIVE, None)
    assert revision.releases[0].policy == Policy(PolicyStatus.ACTIVE, None)


def test_releases_inherit_the_header_policy_unless_they_have_their_own() -> None:
    revision = parse_journal(
        journal(
            *HEADER,
            'POLICY deprecated "use com.example.gadget"',
            *RELEASE,
            "RELEASE 2.0.0",
            "LICENSE MIT",
            f"CONTENT {CONTENT}",
            "POLICY active",
            "RELEASE 3.0.0",
            "LICENSE MIT",
            f"CONTENT {CONTENT}",
            "POLICY revoked",
        )
    )
    inherited = Policy(PolicyStatus.DEPRECATED, "use com.example.gadget")
    assert revision.policy == inherited
    assert [r.policy for r in revision.releases] == [
        inherited,
        Policy(PolicyStatus.ACTIVE),
        Policy(PolicyStatus.REVOKED),
    ]


def test_releases_are_ordered_by_precedence_not_text_order() -> None:
    blocks = [
        line
        for version in ("2.0.0", "1.0.0", "1.0.0-rc.1", "1.10.0", "1.9.0")
        for line in (f"RELEASE {version}", "LICENSE MIT", f"CONTENT {CONTENT}")
    ]
    revision = parse_journal(journal(*HEADER, *blocks))
    assert [str(r.version) for r in revision.releases] == [
        "1.0.0-rc.1",
        "1.0.0",
        "1.9.0",
        "1.10.0",
        "2.0.0",
    ]


@pytest.mark.parametrize(
    "line",
    ["ARTIFACT", "JOURNAL_VERSION", "PREDECESSOR", "DESCRIPTION", "INFORMATION", "POLICY"],
)
def test_a_header_keyword_without_arguments_is_a_format_error(line: str) -> None:
    artifact = None if line == "ARTIFACT" else ARTIFACT
    lines = HEADER if line != "ARTIFACT" else (MAGIC,)
    rejected(journal(*lines, line), JournalFormatError, len(lines) + 1, line, artifact=artifact)


@pytest.mark.parametrize(
    "line",
    ["RELEASE", "LICENSE", "CONTENT", "DESCRIPTION", "POLICY", "DEPENDENCY", "EXCLUDE", "PREFER"],
)
def test_a_release_keyword_without_arguments_is_a_format_error(line: str) -> None:
    lines = (*HEADER, *RELEASE, line) if line != "RELEASE" else (*HEADER, line)
    rejected(journal(*lines), JournalFormatError, len(lines), line)


# --- value syntax inside a text ----------------------------------------------------------
# A value with bad syntax is a format error: it is the text's syntax, not a semantic rule.


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("ARTIFACT Com.Example.Widget", "artifact coordinate"),
        ("ARTIFACT widget", "artifact coordinate"),
        ("ARTIFACT com.example.widget com.example.gadget", "exactly one argument"),
    ],
)
def test_a_bad_artifact_is_a_format_error_without_an_artifact(line: str, fragment: str) -> None:
    rejected(journal(MAGIC, line), JournalFormatError, 2, fragment, artifact=None)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("JOURNAL_VERSION 20260230T120000Z", "journal version"),
        ("JOURNAL_VERSION 2026-11-29T12:00:00Z", "journal version"),
        ("PREDECESSOR sha256:" + "9F" * 32, "digest"),
        ("PREDECESSOR " + "9f" * 32, "digest"),
        ("INFORMATION widgets.example.com", "URI"),
    ],
)
def test_a_bad_header_value_is_a_format_error(line: str, fragment: str) -> None:
    lines = (*HEADER, line) if not line.startswith("JOURNAL_VERSION") else (*HEADER[:2], line)
    rejected(journal(*lines), JournalFormatError, len(lines), fragment)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("DEPENDENCY com.example.core", "two arguments"),
        ("DEPENDENCY com.example.core 1.0.0 2.0.0", "two arguments"),
        ("DEPENDENCY com.example.core [1.0.0, 2.0.0)", "two arguments"),  # no spaces inside
        ("DEPENDENCY com.example.core (,)", "version requirement"),
        ("DEPENDENCY com.example.core [2.0.0,1.0.0]", "version requirement"),
        ("DEPENDENCY Com.example.core 1.0.0", "artifact coordinate"),
        ("DEPENDENCY com.example.core 1.0.0+build", "version requirement"),
        ("EXCLUDE com.example.core com.example.log", "exactly one argument"),
        ("EXCLUDE core", "artifact coordinate"),
        ("PREFER com.example.core", "two arguments"),
        ("PREFER com.example.core [1.0.0,2.0.0)", "release version"),
        ("PREFER com.example.core 01.0.0", "release version"),
    ],
)
def test_a_bad_release_value_is_a_format_error(line: str, fragment: str) -> None:
    rejected(journal(*HEADER, *RELEASE, line), JournalFormatError, 7, fragment)


def test_a_bad_content_digest_is_a_format_error() -> None:
    text = journal(*HEADER, "RELEASE 1.0.0", "LICENSE MIT", "CONTENT sha256:abc")
    rejected(text, JournalFormatError, 6, "digest")


@pytest.mark.parametrize("version", ["1.0", "1.0.0+build", "01.0.0", "v1.0.0", "1.0.0 1.0.1"])
def test_a_bad_release_version_is_a_format_error(version: str) -> None:
    rejected(journal(*HEADER, f"RELEASE {version}"), JournalFormatError, 4, "RELEASE")


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ("1.4.0", "1.4.0"),
        ("[1.4.0]", "1.4.0"),
        ("[1.2.0,2.0.0)", "[1.2.0,2.0.0)"),
        ("(1.0.0,1.5.0]", "(1.0.0,1.5.0]"),
        ("[1.0.0,)", "[1.0.0,)"),
        ("(,2.0.0)", "(,2.0.0)"),
    ],
)
def test_every_requirement_form_is_accepted(requirement: str, expected: str) -> None:
    revision = parse_journal(
        journal(*HEADER, *RELEASE, f"DEPENDENCY com.example.core {requirement}")
    )
    assert revision.releases[0].dependencies[0].requirement == VersionRequirement(expected)
    assert str(revision.releases[0].dependencies[0].requirement) == expected


# --- quoted strings ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quoted", "value"),
    [
        ('"x"', "x"),
        ('"say \\"hi\\""', 'say "hi"'),
        ('"back\\\\slash"', "back\\slash"),
        ('"two\\nlines"', "two\nlines"),
        ('"a\\tb"', "a\tb"),
        ('"raw\ttab"', "raw\ttab"),
        ('"\\\\n is not a newline"', "\\n is not a newline"),
        ('"Grüße, 世界 😀"', "Grüße, 世界 😀"),
        ('"# not a comment"', "# not a comment"),
        ('"  spaces kept  "', "  spaces kept  "),
        ('" "', " "),  # only a space is still non-empty
        ('"it\'s"', "it's"),
        ('"x"  \t', "x"),  # blanks may follow the closing quote
    ],
)
def test_quoted_strings_accept(quoted: str, value: str) -> None:
    assert parse_journal(journal(*HEADER, f"DESCRIPTION {quoted}")).description == value
    release = parse_journal(journal(*HEADER, *RELEASE, f"DESCRIPTION {quoted}")).releases[0]
    assert release.description == value
    policy = parse_journal(journal(*HEADER, f"POLICY yanked {quoted}")).policy
    assert policy == Policy(PolicyStatus.YANKED, value)


@pytest.mark.parametrize(
    ("quoted", "fragment"),
    [
        ('""', "empty quoted string"),
        ("x", "quoted string"),
        ("'single'", "quoted string"),
        ("\u201ccurly\u201d", "quoted string"),
        ('"unterminated', "unterminated"),
        ('"escaped end\\"', "unterminated"),
        ('"backslash at the end\\', "unterminated"),
        ('"\\r"', "unknown escape"),
        ('"\\u0041"', "unknown escape"),
        ('"\\x41"', "unknown escape"),
        ('"\\\'"', "unknown escape"),
        ('"\\ "', "unknown escape"),
        ('"a" b', "after the closing quote"),
        ('"a""b"', "after the closing quote"),
        ('"a" # comment', "after the closing quote"),
        ('"a" "b"', "after the closing quote"),
        ('x"a"', "quoted string"),
    ],
)
def test_quoted_strings_reject(quoted: str, fragment: str) -> None:
    rejected(journal(*HEADER, f"DESCRIPTION {quoted}"), JournalFormatError, 4, fragment)
    rejected(journal(*HEADER, *RELEASE, f"DESCRIPTION {quoted}"), JournalFormatError, 7, fragment)
    if not quoted.startswith(("x", "'", "\u201c")):
        rejected(journal(*HEADER, f"POLICY yanked {quoted}"), JournalFormatError, 4, fragment)


# --- policies ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", list(PolicyStatus))
def test_every_policy_status_is_accepted_with_and_without_reason(status: PolicyStatus) -> None:
    assert parse_journal(journal(*HEADER, f"POLICY {status.value}")).policy == Policy(status)
    with_reason = parse_journal(journal(*HEADER, f'POLICY {status.value} "why"'))
    assert with_reason.policy == Policy(status, "why")


@pytest.mark.parametrize(
    "arguments", ["ACTIVE", "Active", "retired", "active,", '"reason only"', "yanked reason"]
)
def test_bad_policies_are_format_errors(arguments: str) -> None:
    rejected(journal(*HEADER, f"POLICY {arguments}"), JournalFormatError, 4, "POLICY")
    rejected(journal(*HEADER, *RELEASE, f"POLICY {arguments}"), JournalFormatError, 7, "POLICY")


# --- absolute URIs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri",
    [
        "https://widgets.example.com/docs",
        "http://example.com",
        "https://example.com:8443/a/b?x=1&y=%20#intro",  # a fragment after a full URI is fine
        "git+ssh://git@example.com/widget.git",
        "urn:isbn:0451450523",
        "mailto:dev@example.com",
        "file:///srv/docs/widget",
        "https://[2001:db8::1]:8443/x",
        "tag:example.com,2026:widget",
        "news:comp.lang.python",
        "HTTPS://EXAMPLE.COM/",
    ],
)
def test_absolute_uris_of_any_scheme_are_accepted(uri: str) -> None:
    assert parse_journal(journal(*HEADER, f"INFORMATION {uri}")).information == uri


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("https://example.com/a b", "exactly one argument"),  # a space splits it
        ("example.com/docs", "URI"),
        ("#x", "URI"),
        ("#", "URI"),
        ("/docs/widget", "URI"),
        ("docs/widget", "URI"),
        ("./docs", "URI"),
        ("../docs", "URI"),
        ("//example.com/docs", "URI"),  # a network-path reference has no scheme
        ("1https://example.com", "URI"),
        (":no-scheme", "URI"),
        ("https://example.com/%zz", "URI"),
        ("https://example.com/<x>", "URI"),
        ('https://example.com/"x"', "URI"),
        ("https://example.com/ü", "URI"),  # RFC 3986 is ASCII; an IRI must be percent-encoded
        ("https://example.com/a\\b", "URI"),
        ("https://exa mple.com", "exactly one argument"),
        ('"https://example.com"', "URI"),
    ],
)
def test_bad_uris_are_format_errors(uri: str, fragment: str) -> None:
    rejected(journal(*HEADER, f"INFORMATION {uri}"), JournalFormatError, 4, fragment)


# --- SPDX license expressions ------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "MIT",
        "Apache-2.0 OR MIT",
        "GPL-2.0-only WITH Classpath-exception-2.0",
        "LicenseRef-Acme",
        "LicenseRef-Acme.Internal-1",
        "DocumentRef-spdx-tool-1.2:LicenseRef-MIT-Style-2",
        "(MIT OR Apache-2.0) AND BSD-3-Clause",
        "((MIT))",
        "(GPL-2.0-only WITH Classpath-exception-2.0) OR (MIT AND LicenseRef-Acme)",
        "GPL-2.0+",
        "mit",  # SPDX ids match case-insensitively
        "mit or apache-2.0",  # SPDX 2.3 also allows all-lower-case operators
        "MIT\tOR\tApache-2.0",
        "(" * 2000 + "MIT" + ")" * 2000,  # no nesting limit
    ],
)
def test_spdx_expressions_are_accepted_as_written(expression: str) -> None:
    release = parse_journal(
        journal(*HEADER, "RELEASE 1.0.0", f"LICENSE {expression}", f"CONTENT {CONTENT}")
    ).releases[0]
    assert release.license == expression


@pytest.mark.parametrize(
    "expression",
    [
        "NotALicense",
        "Apache",
        "MIT OR",
        "OR MIT",
        "MIT AND",
        "MIT AND AND Apache-2.0",
        "MIT Apache-2.0",
        "Classpath-exception-2.0",  # an exception without WITH
        "MIT OR Classpath-exception-2.0",
        "MIT WITH",
        "MIT WITH MIT",  # a license after WITH
        "MIT WITH NotAnException",
        "MIT WITH Classpath-exception-2.0 WITH Classpath-exception-2.0",
        "(MIT OR Apache-2.0) WITH Classpath-exception-2.0",  # WITH applies to one license
        "(MIT",
        "MIT)",
        "()",
        "(MIT OR)",
        "MIT Or Apache-2.0",  # operators are all upper or all lower case
        "MIT / Apache-2.0",
        "MIT,Apache-2.0",
        "LicenseRef-",
        "LicenseRef-Acme+",
        "MIT\u00a0OR Apache-2.0",
    ],
)
def test_bad_spdx_expressions_are_format_errors(expression: str) -> None:
    text = journal(*HEADER, "RELEASE 1.0.0", f"LICENSE {expression}", f"CONTENT {CONTENT}")
    rejected(text, JournalFormatError, 5, "SPDX")


# --- semantic rules (JournalValidationError) ---------------------------------------------


def test_rule_1_release_versions_are_unique() -> None:
    text = journal(
        *HEADER, *RELEASE, "RELEASE 2.0.0", "LICENSE MIT", f"CONTENT {CONTENT}", *RELEASE
    )
    rejected(text, JournalValidationError, 10, "duplicate RELEASE 1.0.0")


@pytest.mark.parametrize(
    "line",
    [
        f"DEPENDENCY {ARTIFACT} 1.0.0",
        f"EXCLUDE {ARTIFACT}",
        f"PREFER {ARTIFACT} 1.0.0",
    ],
)
def test_rule_2_no_reference_to_the_own_artifact(line: str) -> None:
    keyword = line.split(maxsplit=1)[0]
    text = journal(*HEADER, *RELEASE, "DEPENDENCY com.example.core 1.0.0", line, "# end")
    rejected(text, JournalValidationError, 8, f"{keyword} may not name the journal's own artifact")


def test_rule_3_exclude_may_not_name_a_direct_dependency() -> None:
    text = journal(
        *HEADER, *RELEASE, "EXCLUDE com.example.core", "DEPENDENCY com.example.core [1.0.0,2.0.0)"
    )
    rejected(text, JournalValidationError, 7, "EXCLUDE com.example.core names a direct DEPENDENCY")


def test_rule_3_applies_per_release() -> None:
    text = journal(
        *HEADER,
        *RELEASE,
        "DEPENDENCY com.example.core 1.0.0",
        "RELEASE 2.0.0",
        "LICENSE MIT",
        f"CONTENT {CONTENT}",
        "EXCLUDE com.example.core",
    )
    assert len(parse_journal(text).releases) == 2


def test_rule_4_prefer_may_not_name_an_excluded_coordinate() -> None:
    text = journal(
        *HEADER, *RELEASE, "PREFER com.example.legacy 1.0.0", "EXCLUDE com.example.legacy"
    )
    rejected(text, JournalValidationError, 7, "PREFER com.example.legacy names an excluded")


@pytest.mark.parametrize(
    ("requirement", "preferred"),
    [
        ("[1.2.0,2.0.0)", "2.0.0"),
        ("[1.2.0,2.0.0)", "1.1.9"),
        ("(1.2.0,2.0.0)", "1.2.0"),
        ("1.4.0", "1.4.1"),
        ("[1.4.0]", "1.4.0-rc.1"),
        ("(,1.0.0)", "1.0.0"),
    ],
)
def test_rule_4_a_preferred_direct_dependency_must_satisfy_its_requirement(
    requirement: str, preferred: str
) -> None:
    text = journal(
        *HEADER,
        *RELEASE,
        f"DEPENDENCY com.example.core {requirement}",
        f"PREFER com.example.core {preferred}",
    )
    rejected(text, JournalValidationError, 8, f"preferred version {preferred} does not satisfy")


@pytest.mark.parametrize(
    ("requirement", "preferred"),
    [
        ("[1.2.0,2.0.0)", "1.2.0"),
        ("[1.2.0,2.0.0)", "1.9.9"),
        ("1.4.0", "1.4.0"),
        ("[1.0.0,)", "9.0.0"),
    ],
)
def test_rule_4_a_satisfying_preference_is_accepted(requirement: str, preferred: str) -> None:
    text = journal(
        *HEADER,
        *RELEASE,
        f"DEPENDENCY com.example.core {requirement}",
        f"PREFER com.example.core {preferred}",
        "PREFER com.example.transitive 0.0.1",  # not a direct dependency: any version
    )
    preferences = parse_journal(text).releases[0].preferences
    assert [str(p.version) for p in preferences] == [preferred, "0.0.1"]


def test_validation_errors_name_the_release() -> None:
    text = journal(*HEADER, *RELEASE, f"EXCLUDE {ARTIFACT}")
    error = rejected(text, JournalValidationError, 7, "in RELEASE 1.0.0")
    assert isinstance(error, JournalError)
    assert not isinstance(error, JournalFormatError)


def test_a_format_error_is_not_a_validation_error() -> None:
    error = rejected(journal(*HEADER, "BOGUS"), JournalFormatError, 4, "unknown keyword")
    assert not isinstance(error, JournalValidationError)
    assert not isinstance(error, ValueError)


# --- where an error says it happened -----------------------------------------------------


def test_errors_before_the_artifact_line_have_no_artifact() -> None:
    error = rejected(
        journal(MAGIC, "BOGUS", f"ARTIFACT {ARTIFACT}"),
        JournalFormatError,
        2,
        "unknown",
        artifact=None,
    )
    assert error.path is None


def test_a_lone_cr_after_the_artifact_line_names_the_artifact() -> None:
    rejected(
        journal(*HEADER, "# ok") + "# bad\rline\n", JournalFormatError, 5, "lone carriage return"
    )


def test_error_message_is_one_line_with_detail_artifact_and_line() -> None:
    with pytest.raises(JournalFormatError) as info:
        parse_journal(journal(*HEADER, "", "", "POLICY nope"))
    assert str(info.value) == (f"{info.value.detail} (artifact {ARTIFACT}, line 6)")
    assert info.value.detail.startswith("POLICY: unknown status 'nope'")


def test_a_release_repeated_by_a_successor_is_held_once() -> None:
    first = parse_journal(journal(*HEADER, *RELEASE))
    successor = parse_journal(
        journal(
            MAGIC,
            f"ARTIFACT {ARTIFACT}",
            "JOURNAL_VERSION 20261130T120000Z",
            f"PREDECESSOR {first.digest}",
            *RELEASE,
            "RELEASE 1.1.0",
            "  LICENSE Apache-2.0",
            f"  CONTENT {CONTENT}",
        )
    )
    assert successor.document.releases[0] is first.document.releases[0]
    other = parse_journal(
        journal(*HEADER, "RELEASE 1.0.0", "  LICENSE MIT", f"  CONTENT {PREDECESSOR}")
    )
    assert other.document.releases[0] != first.document.releases[0]


def test_an_equal_release_written_another_way_is_held_once() -> None:
    """Not the same block text (so not taken from the previous text as it is), an equal
    release all the same: one instance. Same content and version, another licence: not
    equal, not shared."""
    first = parse_journal(journal(*HEADER, *RELEASE))
    parse_journal(journal(*HEADER, "RELEASE 2.0.0", "  LICENSE MIT", f"  CONTENT {PREDECESSOR}"))
    reordered = parse_journal(
        journal(*HEADER, "RELEASE 1.0.0", f"  CONTENT {CONTENT}", "# reviewed", "  LICENSE MIT")
    )
    assert reordered.document.releases[0] is first.document.releases[0]
    relicensed = parse_journal(
        journal(*HEADER, "RELEASE 1.0.0", "  LICENSE Apache-2.0", f"  CONTENT {CONTENT}")
    )
    assert relicensed.document.releases[0].license == "Apache-2.0"
    assert relicensed.document.releases[0] is not first.document.releases[0]
    again = parse_journal(
        journal(*HEADER, "RELEASE 1.0.0", f"  CONTENT {CONTENT}", "  LICENSE MIT")
    )
    assert again.document.releases[0] == first.document.releases[0]
