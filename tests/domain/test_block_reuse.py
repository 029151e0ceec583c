"""A release block equal to one of an earlier text's is reused, never changing an outcome.

The parser takes a block whose exact text it parsed in the thread's previous
text, or in the text whose blocks it is given (``parse_journal_blocks``), as
already parsed when the artifact and the header policy are the same. Whatever
came before, a text must give the same revision, or the same error on the same
line, as it does parsed on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nenjim.domain.journal.parser import (
    ParsedBlocks,
    forget_shared_values,
    parse_journal,
    parse_journal_blocks,
)
from nenjim.domain.journal.renderer import render_journal
from nenjim.journal.exception import JournalError, JournalFormatError, JournalValidationError
from nenjim.journal.model import JournalRevision
from nenjim.journal.valuetypes import PolicyStatus
from tests.domain.test_format_parser import CONTENT, HEADER, MAGIC, journal
from tests.domain.test_format_properties import (
    PROPERTY_SETTINGS,
    coordinates,
    documents,
    mutated,
)

Outcome = tuple[str, object, str | None] | tuple[str, str, int | None, str]

BLOCK = (
    "RELEASE 1.0.0",
    "  LICENSE MIT",
    f"  CONTENT {CONTENT}",
    "  DEPENDENCY com.example.core 1.0.0",
)
LATER = ("RELEASE 2.0.0", "  LICENSE MIT", f"  CONTENT {CONTENT}")


def outcome(text: str) -> Outcome:
    """What parsing ``text`` gives, comparable across parses."""
    try:
        revision = parse_journal(text)
    except JournalError as error:
        return ("error", type(error).__name__, error.line, str(error))
    return ("revision", revision.document, str(revision.digest))


def in_new_thread(parse: Callable[[], Outcome]) -> Outcome:
    """What ``parse`` gives in a thread of its own: one that has parsed nothing before."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(parse).result()


def alone(text: str) -> Outcome:
    """The outcome of ``text`` parsed with nothing reusable from earlier texts."""
    forget_shared_values()
    return in_new_thread(lambda: outcome(text))


def after(prior: str, text: str) -> Outcome:
    """The outcome of ``text`` parsed right after ``prior`` (which must parse)."""
    forget_shared_values()

    def both() -> Outcome:
        assert isinstance(parse_journal(prior), JournalRevision)
        return outcome(text)

    return in_new_thread(both)


def given_blocks(prior: str, text: str) -> Outcome:
    """The outcome of ``text`` parsed with ``prior``'s blocks given (``prior`` must parse),
    after another artifact's text: the thread's previous blocks are not ``prior``'s."""
    forget_shared_values()

    def both() -> Outcome:
        _, blocks = parse_journal_blocks(prior)
        parse_journal(journal(MAGIC, "ARTIFACT org.other.thing", HEADER[2], *LATER))
        try:
            revision, _ = parse_journal_blocks(text, blocks)
        except JournalError as error:
            return ("error", type(error).__name__, error.line, str(error))
        return ("revision", revision.document, str(revision.digest))

    return in_new_thread(both)


@st.composite
def successors(draw: st.DrawFn) -> tuple[str, str]:
    """A valid text and an edit of it: another artifact, another header policy, a CR
    at the end of a line, then lines deleted, duplicated or swapped and characters
    inserted."""
    prior = render_journal(draw(documents()))
    lines = prior.split("\n")
    if draw(st.booleans()):
        lines = [
            f"ARTIFACT {draw(coordinates)}" if line.startswith("ARTIFACT ") else line
            for line in lines
        ]
    if draw(st.booleans()):
        lines.insert(min(2, len(lines)), f"POLICY {draw(st.sampled_from(PolicyStatus))}")
    if draw(st.booleans()):
        lines[draw(st.integers(0, len(lines) - 1))] += "\r"
    edited = "\n".join(lines)
    return prior, mutated(draw, edited) if draw(st.booleans()) else edited


@PROPERTY_SETTINGS
@given(successors())
def test_a_text_parses_the_same_after_any_valid_text(pair: tuple[str, str]) -> None:
    prior, text = pair
    assert after(prior, text) == alone(text)


@PROPERTY_SETTINGS
@given(successors())
def test_a_text_parses_the_same_with_any_valid_text_s_blocks_given(
    pair: tuple[str, str],
) -> None:
    prior, text = pair
    assert given_blocks(prior, text) == alone(text)


@PROPERTY_SETTINGS
@given(documents())
def test_a_text_parsed_again_is_equal_and_reuses_every_block(document: object) -> None:
    text = render_journal(document)  # type: ignore[arg-type]
    first = parse_journal(text)
    again = parse_journal(text)
    assert again.document == first.document
    # Reused blocks are the very instances parsed before.
    assert all(
        a is b for a, b in zip(again.document.releases, first.document.releases, strict=True)
    )


def test_a_reused_block_takes_the_header_policy_of_its_own_text() -> None:
    prior = journal(*HEADER, *BLOCK)
    text = journal(*HEADER, "POLICY yanked", *BLOCK)
    release = parse_journal(text).document.releases[0]
    assert after(prior, text) == alone(text)
    assert release.policy.status is PolicyStatus.YANKED


def test_a_block_valid_for_one_artifact_is_checked_again_for_another() -> None:
    prior = journal(*HEADER, *BLOCK)
    # The same block depends on com.example.core: for that artifact, a dependency on itself.
    text = journal(MAGIC, "ARTIFACT com.example.core", HEADER[2], *BLOCK)
    result = after(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalValidationError.__name__, 7)


def test_a_reused_block_still_counts_for_duplicate_versions() -> None:
    prior = journal(*HEADER, *BLOCK)
    text = journal(*HEADER, *BLOCK, *BLOCK)
    result = after(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalValidationError.__name__, 8)
    assert "first on line 4" in str(result[3])


def test_errors_after_a_reused_block_name_their_own_line() -> None:
    prior = journal(*HEADER, *BLOCK, "", *LATER)
    text = journal(*HEADER, *BLOCK, "", "# a comment", "", *LATER, "  LICENSE MIT")
    result = after(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalFormatError.__name__, 14)


def test_a_lone_carriage_return_after_a_reused_block_is_refused() -> None:
    prior = journal(*HEADER, *BLOCK, "", *LATER)
    text = journal(*HEADER, *BLOCK, " \r ", *LATER)
    result = after(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalFormatError.__name__, 8)


def test_a_block_is_reused_whatever_line_endings_either_text_has() -> None:
    prior = journal(*HEADER, *BLOCK, "", *LATER)
    text = prior.replace("\n", "\r\n")  # the same lines, ended with CRLF
    assert after(prior, text) == alone(text)
    forget_shared_values()
    first = parse_journal(prior)
    again = parse_journal(text)
    assert all(
        a is b for a, b in zip(again.document.releases, first.document.releases, strict=True)
    )
    assert again.digest != first.digest


def test_a_lone_carriage_return_inside_a_block_is_never_taken_for_the_block() -> None:
    prior = journal(*HEADER, *BLOCK)
    text = journal(*HEADER, BLOCK[0], BLOCK[1] + "\r ", *BLOCK[2:])
    result = after(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalFormatError.__name__, 5)


def test_a_reused_block_needs_the_header_of_its_own_text() -> None:
    prior = journal(*HEADER, *BLOCK)
    text = journal(*HEADER[:2], *BLOCK)
    result = after(prior, text)
    assert result == alone(text)
    assert "missing JOURNAL_VERSION" in str(result[3])


def test_threads_parse_with_their_own_blocks() -> None:
    # Each thread alternates two artifacts sharing block texts: a block reused from
    # another thread's or artifact's text would make some result differ.
    texts = [
        journal(*HEADER, *BLOCK),
        journal(MAGIC, "ARTIFACT com.example.core", HEADER[2], *BLOCK),
    ]
    expected = [alone(text) for text in texts]
    seen: list[list[Outcome]] = []

    def parse_many() -> None:
        seen.append([outcome(texts[i % 2]) for i in range(200)])

    threads = [threading.Thread(target=parse_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4
    assert all(result == expected[i % 2] for results in seen for i, result in enumerate(results))


def test_given_blocks_are_reused_whatever_the_thread_parsed_since() -> None:
    prior = journal(*HEADER, *BLOCK, "", *LATER)
    text = journal(*HEADER[:2], "JOURNAL_VERSION 20261130T120000Z", *BLOCK, "", *LATER)
    first, blocks = parse_journal_blocks(prior)
    parse_journal(journal(MAGIC, "ARTIFACT org.other.thing", HEADER[2], *BLOCK))
    again, _ = parse_journal_blocks(text, blocks)
    assert all(
        a is b for a, b in zip(again.document.releases, first.document.releases, strict=True)
    )
    assert again.document == parse_journal(text).document


def test_given_blocks_take_the_header_policy_of_their_own_text() -> None:
    _, blocks = parse_journal_blocks(journal(*HEADER, *BLOCK))
    text = journal(*HEADER, "POLICY revoked", *BLOCK)
    revision, _ = parse_journal_blocks(text, blocks)
    assert revision.document.releases[0].policy.status is PolicyStatus.REVOKED
    assert given_blocks(journal(*HEADER, *BLOCK), text) == alone(text)


def test_given_blocks_of_another_artifact_are_checked_again() -> None:
    prior = journal(*HEADER, *BLOCK)
    # For com.example.core, the block's dependency on com.example.core names itself.
    text = journal(MAGIC, "ARTIFACT com.example.core", HEADER[2], *BLOCK)
    result = given_blocks(prior, text)
    assert result == alone(text)
    assert result[:3] == ("error", JournalValidationError.__name__, 7)


def test_given_blocks_still_count_for_duplicate_versions_and_later_lines() -> None:
    prior = journal(*HEADER, *BLOCK, "", *LATER)
    duplicated = journal(*HEADER, *BLOCK, *BLOCK)
    assert given_blocks(prior, duplicated) == alone(duplicated)
    later_error = journal(*HEADER, *BLOCK, "", "# a comment", "", *LATER, "  LICENSE MIT")
    result = given_blocks(prior, later_error)
    assert result == alone(later_error)
    assert result[:3] == ("error", JournalFormatError.__name__, 14)


def test_only_a_parse_makes_parsed_blocks() -> None:
    with pytest.raises(TypeError, match="only the Journal parser"):
        ParsedBlocks(None, parse_journal(journal(*HEADER)).policy, {}, object())
