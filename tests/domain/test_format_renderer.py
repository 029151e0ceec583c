"""The renderer: canonical text that parses back to an equal document."""

from __future__ import annotations

import pytest

from nenjim.domain.journal.parser import parse_journal
from nenjim.domain.journal.renderer import quote, render_journal
from nenjim.journal.exception import InvalidValueError
from nenjim.journal.model import Dependency, JournalDocument, Policy, Preference, Release
from nenjim.journal.valuetypes import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

CONTENT_A = Sha256Digest("sha256:" + "2c" * 32)
CONTENT_B = Sha256Digest("sha256:" + "fc" * 32)
PREDECESSOR = Sha256Digest("sha256:" + "9f" * 32)

CANONICAL = """\
NENJIM-JOURNAL 1
ARTIFACT com.example.widget
JOURNAL_VERSION 20261129T120000Z
PREDECESSOR sha256:9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f
DESCRIPTION "Widgets for \\"everyone\\""
INFORMATION https://widgets.example.com/docs

RELEASE 1.0.0
  LICENSE Apache-2.0
  CONTENT sha256:2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c
  POLICY yanked "broken build, use 1.0.1"

RELEASE 1.0.1
  DESCRIPTION "Fixes the build"
  LICENSE Apache-2.0 OR MIT
  CONTENT sha256:fcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfcfc
  DEPENDENCY com.example.core [1.2.0,2.0.0)
  DEPENDENCY com.example.log 0.9.3
  EXCLUDE com.example.legacy
  PREFER com.example.core 1.4.0
"""


def coordinate(text: str) -> ArtifactCoordinate:
    """Shorthand."""
    return ArtifactCoordinate(text)


def example_document() -> JournalDocument:
    """The format document's example, built directly, with its parts given out of order."""
    return JournalDocument(
        coordinate=coordinate("com.example.widget"),
        version=JournalVersion("20261129T120000Z"),
        predecessor=PREDECESSOR,
        description='Widgets for "everyone"',
        information="https://widgets.example.com/docs",
        releases=(
            Release(
                version=ReleaseVersion("1.0.1"),
                license="Apache-2.0 OR MIT",
                content=CONTENT_B,
                description="Fixes the build",
                dependencies=(
                    Dependency(coordinate("com.example.log"), VersionRequirement("0.9.3")),
                    Dependency(coordinate("com.example.core"), VersionRequirement("[1.2.0,2.0.0)")),
                ),
                exclusions=frozenset({coordinate("com.example.legacy")}),
                preferences=(Preference(coordinate("com.example.core"), ReleaseVersion("1.4.0")),),
            ),
            Release(
                version=ReleaseVersion("1.0.0"),
                license="Apache-2.0",
                content=CONTENT_A,
                policy=Policy(PolicyStatus.YANKED, "broken build, use 1.0.1"),
            ),
        ),
    )


def test_render_gives_the_canonical_text() -> None:
    assert render_journal(example_document()) == CANONICAL


def test_canonical_text_parses_back_to_an_equal_document() -> None:
    document = example_document()
    revision = parse_journal(render_journal(document))
    assert revision.document == document
    assert revision.text == CANONICAL
    assert revision.digest == Sha256Digest.of_text(CANONICAL)


def test_rendering_a_parsed_document_is_a_fixed_point() -> None:
    noisy = CANONICAL.replace("\n", "\r\n").replace("RELEASE 1.0.1", "# c\n\tRELEASE   1.0.1")
    document = parse_journal(noisy).document
    assert render_journal(document) == CANONICAL
    assert render_journal(parse_journal(CANONICAL).document) == CANONICAL


def test_construction_orders_releases_and_collections_so_order_carries_no_meaning() -> None:
    document = example_document()
    assert [str(r.version) for r in document.releases] == ["1.0.0", "1.0.1"]
    deps = document.releases[1].dependencies
    assert [str(d.coordinate) for d in deps] == ["com.example.core", "com.example.log"]
    assert isinstance(deps, tuple)
    reordered = Release(
        version=ReleaseVersion("1.0.0"),
        license="MIT",
        content=CONTENT_A,
        dependencies=tuple(reversed(deps)),
    )
    assert reordered == Release(
        version=ReleaseVersion("1.0.0"), license="MIT", content=CONTENT_A, dependencies=deps
    )


def test_minimal_document_renders_only_the_required_header() -> None:
    document = JournalDocument(coordinate("a.b"), JournalVersion("20260101T000000Z"))
    text = render_journal(document)
    assert text == "NENJIM-JOURNAL 1\nARTIFACT a.b\nJOURNAL_VERSION 20260101T000000Z\n"
    assert parse_journal(text).document == document


def test_policies_are_written_only_where_they_change_the_meaning() -> None:
    deprecated = Policy(PolicyStatus.DEPRECATED, "use com.example.gadget")
    document = JournalDocument(
        coordinate("com.example.widget"),
        JournalVersion("20260101T000000Z"),
        policy=deprecated,
        releases=(
            Release(ReleaseVersion("1.0.0"), "MIT", CONTENT_A, policy=deprecated),
            Release(ReleaseVersion("2.0.0"), "MIT", CONTENT_A, policy=Policy(PolicyStatus.ACTIVE)),
            Release(
                ReleaseVersion("3.0.0"), "MIT", CONTENT_A, policy=Policy(PolicyStatus.DEPRECATED)
            ),
        ),
    )
    text = render_journal(document)
    assert text.count("POLICY") == 3
    assert 'POLICY deprecated "use com.example.gadget"\n' in text
    # An active release under a deprecated header must say so, else it would inherit.
    assert "  POLICY active\n" in text
    assert "  POLICY deprecated\n" in text
    assert parse_journal(text).document == document


def test_an_active_header_policy_with_a_reason_is_written() -> None:
    document = JournalDocument(
        coordinate("a.b"),
        JournalVersion("20260101T000000Z"),
        policy=Policy(PolicyStatus.ACTIVE, "maintained"),
    )
    assert 'POLICY active "maintained"\n' in render_journal(document)
    assert parse_journal(render_journal(document)).document == document


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("two\nlines", '"two\\nlines"'),
        ("a\tb", '"a\\tb"'),
        ('\\"', '"\\\\\\""'),
        ("\\n", '"\\\\n"'),
        ("Grüße 😀 \x7f \x85", '"Grüße 😀 \x7f \x85"'),
        (" ", '" "'),
    ],
)
def test_quote_escapes_and_round_trips(text: str, quoted: str) -> None:
    assert quote(text) == quoted
    document = JournalDocument(
        coordinate("a.b"),
        JournalVersion("20260101T000000Z"),
        description=text,
        policy=Policy(PolicyStatus.YANKED, text),
        releases=(Release(ReleaseVersion("1.0.0"), "MIT", CONTENT_A, description=text),),
    )
    revision = parse_journal(render_journal(document))
    assert revision.document == document
    assert revision.description == text


@pytest.mark.parametrize("text", ["", "nul\x00", "cr\r", "crlf\r\n", "esc\x1b", "\x1f", "\udc80"])
def test_quote_refuses_text_no_journal_can_hold(text: str) -> None:
    with pytest.raises(InvalidValueError):
        quote(text)


def test_render_refuses_a_description_no_journal_can_hold() -> None:
    document = JournalDocument(
        coordinate("a.b"), JournalVersion("20260101T000000Z"), description="a\rb"
    )
    with pytest.raises(InvalidValueError):
        render_journal(document)
    release = Release(ReleaseVersion("1.0.0"), "MIT", CONTENT_A, description="")
    with pytest.raises(InvalidValueError):
        render_journal(
            JournalDocument(
                coordinate("a.b"), JournalVersion("20260101T000000Z"), releases=(release,)
            )
        )


def test_quote_rejects_a_non_str() -> None:
    with pytest.raises(TypeError):
        quote(b"bytes")  # type: ignore[arg-type]
