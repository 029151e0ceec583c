"""The Journal's value types: canonical text in, canonical text out, nothing else accepted."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import pickle
import random
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nenjim.journal.model
import nenjim.journal.valuetypes
from nenjim.domain.journal import values
from nenjim.journal.exception import InvalidValueError, JournalError
from nenjim.journal.model import Policy
from nenjim.journal.valuetypes import (
    ArtifactCoordinate,
    JournalVersion,
    PolicyStatus,
    ReleaseVersion,
    Sha256Digest,
    VersionRequirement,
)

TextValue = type[
    ArtifactCoordinate | JournalVersion | Sha256Digest | ReleaseVersion | VersionRequirement
]

DIGEST = "sha256:" + "0123456789abcdef" * 4

# One valid canonical text and one other valid text per string-backed value type.
SAMPLES: list[tuple[TextValue, str, str]] = [
    (ArtifactCoordinate, "com.example.widget", "com.example.gadget"),
    (JournalVersion, "20261129T120000Z", "20261129T120001Z"),
    (Sha256Digest, DIGEST, "sha256:" + "f" * 64),
    (ReleaseVersion, "1.2.0", "1.2.0-rc.1"),
    (VersionRequirement, "[1.0.0,2.0.0)", "(,2.0.0)"),
]
SAMPLE_IDS = [kind.__name__ for kind, _, _ in SAMPLES]


def test_public_module_re_exports_the_domain_value_types() -> None:
    assert nenjim.journal.valuetypes.ArtifactCoordinate is values.ArtifactCoordinate
    assert nenjim.journal.valuetypes.JournalVersion is values.JournalVersion
    assert nenjim.journal.valuetypes.Sha256Digest is values.Sha256Digest
    assert nenjim.journal.valuetypes.ReleaseVersion is values.ReleaseVersion
    assert nenjim.journal.valuetypes.VersionRequirement is values.VersionRequirement
    assert nenjim.journal.valuetypes.PolicyStatus is values.PolicyStatus
    assert nenjim.journal.model.Policy is values.Policy


# --- behaviour shared by every string-backed value type -----------------------------------


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_str_gives_the_canonical_text_back(kind: TextValue, text: str, other: str) -> None:
    assert str(kind(text)) == text
    assert str(kind(other)) == other
    assert repr(kind(text)) == f"{kind.__name__}({text!r})"


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_equality_and_hash_are_by_value(kind: TextValue, text: str, other: str) -> None:
    first, second = kind(text), kind(text)
    assert first is not second
    assert first == second
    assert hash(first) == hash(second)
    assert first != kind(other)
    assert len({first, second, kind(other)}) == 2
    assert {first: "x"}[second] == "x"


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_a_value_never_equals_its_text_or_another_type(
    kind: TextValue, text: str, other: str
) -> None:
    value = kind(text)
    assert value != text
    assert text != value
    for other_kind, other_text, _ in SAMPLES:
        if other_kind is not kind:
            assert value != other_kind(other_text)


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_values_are_immutable(kind: TextValue, text: str, other: str) -> None:
    value = kind(text)
    for name in ("_text", "anything"):
        with pytest.raises(AttributeError):
            setattr(value, name, other)
    with pytest.raises(AttributeError):
        del value._text
    assert str(value) == text


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_values_survive_pickle_and_copy(kind: TextValue, text: str, other: str) -> None:
    value = kind(text)
    for clone in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
        assert clone == value
        assert type(clone) is kind
        assert str(clone) == text


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
@pytest.mark.parametrize("not_text", [None, b"com.example.widget", 1, ["1.0.0"]])
def test_a_non_str_is_a_type_error(
    kind: TextValue, text: str, other: str, not_text: object
) -> None:
    with pytest.raises(TypeError):
        kind(not_text)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_bad_syntax_is_an_invalid_value_error_and_a_value_error(
    kind: TextValue, text: str, other: str
) -> None:
    with pytest.raises(InvalidValueError) as info:
        kind(text + " x")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, JournalError)
    assert repr(text + " x") in str(info.value)


@pytest.mark.parametrize(("kind", "text", "other"), SAMPLES, ids=SAMPLE_IDS)
def test_of_accepts_the_value_or_its_text(kind: TextValue, text: str, other: str) -> None:
    value = kind(text)
    assert kind.of(value) is value  # type: ignore[arg-type]  # mypy cannot pair kind and value
    assert kind.of(text) == value
    with pytest.raises(InvalidValueError):
        kind.of("")


# --- ArtifactCoordinate -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "com.example.widget",
        "a.b",
        "com.r35157.nenjim.hubd",
        "org.x_1.y__2.z9",
        ".".join(["a" * 127, "b" * 127]),  # exactly 255 characters
    ],
)
def test_coordinate_accepts(text: str) -> None:
    assert str(ArtifactCoordinate(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "com",
        "Com.example",
        "com.Example",
        "com..example",
        ".com.example",
        "com.example.",
        "com.1example",
        "com._example",
        "com.ex-ample",
        "com.example widget",
        " com.example",
        "com.example\n",
        "com.exämple",
        "com/example",
        "com.example.*",
        ".".join(["a" * 127, "b" * 128]),  # 256 characters
    ],
)
def test_coordinate_rejects(text: str) -> None:
    with pytest.raises(InvalidValueError):
        ArtifactCoordinate(text)


def test_coordinates_order_by_text() -> None:
    names = ["org.b", "com.example.widget", "com.example", "com.example.core"]
    ordered = sorted(ArtifactCoordinate(n) for n in names)
    assert [str(c) for c in ordered] == sorted(names)
    assert ArtifactCoordinate("a.b") <= ArtifactCoordinate("a.b")
    with pytest.raises(TypeError):
        _ = ArtifactCoordinate("a.b") < "a.c"  # type: ignore[operator]


# --- JournalVersion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("20261129T120000Z", datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)),
        ("20240229T000000Z", datetime(2024, 2, 29, tzinfo=UTC)),  # leap day
        ("20000229T235959Z", datetime(2000, 2, 29, 23, 59, 59, tzinfo=UTC)),  # 400-year leap
        ("00010101T000000Z", datetime(1, 1, 1, tzinfo=UTC)),
        ("99991231T235959Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ],
)
def test_journal_version_instant_is_an_aware_utc_datetime(text: str, moment: datetime) -> None:
    version = JournalVersion(text)
    assert version.instant == moment
    assert version.instant.tzinfo is UTC
    assert version.instant.utcoffset() == timedelta(0)
    assert JournalVersion.from_datetime(version.instant) == version


@pytest.mark.parametrize(
    "text",
    [
        "20260230T000000Z",  # February 30th
        "20261301T000000Z",  # month 13
        "20260001T000000Z",  # month 0
        "20260100T000000Z",  # day 0
        "20260431T000000Z",  # April 31st
        "20230229T000000Z",  # not a leap year
        "19000229T000000Z",  # century, not a leap year
        "20261129T240000Z",  # 24:00
        "20261129T126000Z",  # minute 60
        "20261129T120060Z",  # leap second :60
        "00000101T000000Z",  # year 0 is outside datetime's range: rejected (doc silent)
        "2026-11-29T12:00:00Z",
        "20261129T120000",
        "20261129T120000z",
        "20261129t120000Z",
        "20261129T120000+0000",
        "20261129T120000.5Z",
        "20261129T1200Z",
        "2026112T120000Z",
        "202611290T120000Z",
        " 20261129T120000Z",
        "20261129T120000Z\n",
        # Arabic-Indic digits are not ASCII digits.
        "\u0662\u0660\u0662\u0666\u0661\u0661\u0662\u0669T120000Z",
        "\uff12\uff10\uff12\uff16\uff11\uff11\uff12\uff19T120000Z",  # full-width digits
        "",
    ],
)
def test_journal_version_rejects(text: str) -> None:
    with pytest.raises(InvalidValueError):
        JournalVersion(text)
    assert not values.is_journal_version(text)


# Year, month, day, hour, minute and second, each from 0 to one past its largest value.
_VERSION_FIELDS = st.tuples(
    st.integers(0, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 24),
    st.integers(0, 60),
    st.integers(0, 60),
)


def _version_text(fields: tuple[int, int, int, int, int, int]) -> str:
    year, month, day, hour, minute, second = fields
    return f"{year:04d}{month:02d}{day:02d}T{hour:02d}{minute:02d}{second:02d}Z"


@settings(max_examples=500)
@given(fields=_VERSION_FIELDS)
def test_a_version_is_accepted_exactly_when_the_calendar_has_it(
    fields: tuple[int, int, int, int, int, int],
) -> None:
    year, month, day, hour, minute, second = fields
    text = _version_text(fields)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        with pytest.raises(InvalidValueError):
            JournalVersion(text)
        assert not values.is_journal_version(text)
        with pytest.raises(InvalidValueError):
            JournalVersion.text_of(text)
    else:
        assert JournalVersion(text).instant == moment
        assert values.is_journal_version(text)
        assert JournalVersion.text_of(text) == text


def test_every_day_of_four_centuries_is_accepted_exactly_when_the_calendar_has_it() -> None:
    # 1900-2299 holds every leap-year rule: every 4th year, not centuries, but every 400th.
    for year in range(1900, 2300):
        for month in range(1, 13):
            for day in range(28, 32):
                text = f"{year:04d}{month:02d}{day:02d}T000000Z"
                try:
                    date(year, month, day)
                except ValueError:
                    with pytest.raises(InvalidValueError):
                        JournalVersion(text)
                    assert not values.is_journal_version(text)
                else:
                    assert str(JournalVersion(text)) == text
                    assert values.is_journal_version(text)


_READ_REVISION_NAME = values.version_reader(".journal")


@settings(max_examples=500)
@given(
    version=st.one_of(_VERSION_FIELDS.map(_version_text), st.text(max_size=18)),
    suffix=st.sampled_from(
        [".journal", ".journal.example", "", ".JOURNAL", "journal", ".journal\n"]
    ),
)
def test_a_version_reader_reads_exactly_a_journal_version_then_its_suffix(
    version: str, suffix: str
) -> None:
    """A file name is read as a revision's version exactly when it is a Journal version
    (as ``is_journal_version`` and ``JournalVersion`` judge it) followed by the suffix."""
    name = version + suffix
    before = name.removesuffix(".journal")
    expected = before if before != name and values.is_journal_version(before) else None
    assert _READ_REVISION_NAME(name) == expected


@pytest.mark.parametrize("text", ["20261129T120000Z", "20240229T235959Z", "00010101T000000Z"])
def test_journal_version_text_of_gives_the_canonical_text(text: str) -> None:
    assert JournalVersion.text_of(text) is text
    assert JournalVersion.text_of(JournalVersion(text)) == text


@pytest.mark.parametrize(
    "value", ["20261129T1200Z", "20250229T000000Z", "20260431T000000Z", "00000101T000000Z", ""]
)
def test_journal_version_text_of_raises_what_the_constructor_raises(value: str) -> None:
    with pytest.raises(InvalidValueError) as expected:
        JournalVersion(value)
    with pytest.raises(InvalidValueError) as raised:
        JournalVersion.text_of(value)
    assert str(raised.value) == str(expected.value)


def test_journal_version_text_of_a_non_str_raises_what_of_raises() -> None:
    for value in (b"20261129T120000Z", 20261129, None):
        with pytest.raises(TypeError) as expected:
            JournalVersion.of(value)  # type: ignore[arg-type]
        with pytest.raises(TypeError) as raised:
            JournalVersion.text_of(value)  # type: ignore[arg-type]
        assert str(raised.value) == str(expected.value)


def test_journal_versions_order_chronologically() -> None:
    texts = ["20261129T120000Z", "20251231T235959Z", "20261129T115959Z", "20270101T000000Z"]
    ordered = sorted(JournalVersion(t) for t in texts)
    assert [v.instant for v in ordered] == sorted(JournalVersion(t).instant for t in texts)
    assert JournalVersion("20251231T235959Z") < JournalVersion("20260101T000000Z")
    assert JournalVersion("20260101T000000Z") >= JournalVersion("20260101T000000Z")
    with pytest.raises(TypeError):
        _ = JournalVersion("20260101T000000Z") < "20270101T000000Z"  # type: ignore[operator]


def test_from_datetime_keeps_utc_and_cuts_to_the_second() -> None:
    moment = datetime(2026, 11, 29, 12, 0, 7, 999_999, tzinfo=UTC)
    assert str(JournalVersion.from_datetime(moment)) == "20261129T120007Z"


def test_from_datetime_converts_other_offsets_to_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert str(JournalVersion.from_datetime(datetime(2026, 11, 29, 14, 0, tzinfo=plus_two))) == (
        "20261129T120000Z"
    )
    # Conversion crosses the year boundary backwards and forwards.
    assert str(JournalVersion.from_datetime(datetime(2027, 1, 1, 1, 30, tzinfo=plus_two))) == (
        "20261231T233000Z"
    )
    minus_five_half = timezone(-timedelta(hours=5, minutes=30))
    assert str(
        JournalVersion.from_datetime(datetime(2026, 12, 31, 20, 0, tzinfo=minus_five_half))
    ) == ("20270101T013000Z")


def test_from_datetime_pads_years_below_1000() -> None:
    assert str(JournalVersion.from_datetime(datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC))) == (
        "09990102T030405Z"
    )


def test_from_datetime_rejects_a_naive_datetime() -> None:
    with pytest.raises(InvalidValueError, match="aware"):
        JournalVersion.from_datetime(datetime(2026, 11, 29, 12, 0))


def test_from_datetime_rejects_an_instant_outside_year_1_to_9999_in_utc() -> None:
    with pytest.raises(InvalidValueError):
        JournalVersion.from_datetime(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    with pytest.raises(InvalidValueError, match=r"UTC year in 0001\.\.9999"):
        JournalVersion.from_datetime(
            datetime(9999, 12, 31, 23, 30, tzinfo=timezone(-timedelta(hours=1)))
        )


def test_from_datetime_reaches_both_ends_of_the_range() -> None:
    assert str(JournalVersion.from_datetime(datetime.max.replace(tzinfo=UTC))) == (
        "99991231T235959Z"
    )
    assert str(JournalVersion.from_datetime(datetime.min.replace(tzinfo=UTC))) == (
        "00010101T000000Z"
    )
    plus_one = timezone(timedelta(hours=1))
    assert str(JournalVersion.from_datetime(datetime(9999, 12, 31, 23, 59, tzinfo=UTC))) == (
        "99991231T235900Z"
    )
    assert str(JournalVersion.from_datetime(datetime(1, 1, 1, 1, 0, tzinfo=plus_one))) == (
        "00010101T000000Z"
    )
    assert JournalVersion("99991231T235959Z").instant == datetime.max.replace(
        microsecond=0, tzinfo=UTC
    )


@pytest.mark.parametrize("not_datetime", ["20261129T120000Z", date(2026, 11, 29), None, 0])
def test_from_datetime_rejects_a_non_datetime(not_datetime: object) -> None:
    with pytest.raises(TypeError):
        JournalVersion.from_datetime(not_datetime)  # type: ignore[arg-type]


# --- Sha256Digest -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "sha256:" + "0" * 63,
        "sha256:" + "0" * 65,
        "sha256:" + "A" * 64,
        "sha256:" + "g" * 64,
        "SHA256:" + "0" * 64,
        "sha512:" + "0" * 64,
        "sha256 " + "0" * 64,
        "0" * 64,
        "sha256:",
        "sha256:" + "0" * 64 + "\n",
        "sha256:" + "\u0660" * 64,  # Arabic-Indic zeros
        "",
    ],
)
def test_digest_rejects(text: str) -> None:
    with pytest.raises(InvalidValueError):
        Sha256Digest(text)


def test_digest_of_bytes_is_sha256_of_exact_bytes() -> None:
    assert str(Sha256Digest.of_bytes(b"")) == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert str(Sha256Digest.of_bytes(b"abc")) == (
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_digest_of_text_digests_the_utf8_encoding() -> None:
    text = "Grüße, 世界 😀\n"
    assert Sha256Digest.of_text(text) == Sha256Digest.of_bytes(text.encode("utf-8"))
    assert str(Sha256Digest.of_text(text)) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert Sha256Digest.of_text("é") != Sha256Digest.of_bytes("é".encode("latin-1"))


def test_digest_of_text_keeps_line_endings() -> None:
    lf = "NENJIM-JOURNAL 1\nARTIFACT a.b\n"
    crlf = lf.replace("\n", "\r\n")
    assert Sha256Digest.of_text(crlf) == Sha256Digest.of_bytes(crlf.encode("utf-8"))
    assert Sha256Digest.of_text(crlf) != Sha256Digest.of_text(lf)
    assert Sha256Digest.of_text(lf) != Sha256Digest.of_text(lf.rstrip("\n"))


# --- ReleaseVersion -----------------------------------------------------------------------

# semver.org section 11, example 4, plus the numeric chain of examples 2 and 3.
SEMVER_CHAIN = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "2.0.0",
    "2.1.0",
    "2.1.1",
]


def test_release_versions_follow_the_semver_precedence_chain() -> None:
    parsed = [ReleaseVersion(t) for t in SEMVER_CHAIN]
    assert sorted(random.Random(7).sample(parsed, len(parsed))) == parsed
    for i, lower in enumerate(parsed):
        for j, upper in enumerate(parsed):
            assert (lower < upper) is (i < j)
            assert (lower <= upper) is (i <= j)
            assert (lower > upper) is (i > j)
            assert (lower == upper) is (i == j)


@pytest.mark.parametrize(
    ("lower", "upper"),
    [
        ("1.9.0", "1.10.0"),  # numerically, not lexically
        ("1.0.9", "1.0.10"),
        ("9.0.0", "10.0.0"),
        ("1.0.0-2", "1.0.0-10"),  # numeric identifiers numerically
        ("1.0.0-10", "1.0.0-1a"),  # numeric below alphanumeric
        ("1.0.0-Z", "1.0.0-a"),  # alphanumeric by ASCII order
        ("1.0.0-a", "1.0.0-a.0"),  # more identifiers rank higher
        ("1.0.0-a.b", "1.0.0-a-b"),  # identifier "a" is a prefix of, so below, "a-b"
        ("1.0.0-rc.1", "1.0.0"),
        ("9" * 5000 + ".0.0", "1" + "0" * 5000 + ".0.0"),  # beyond int()'s 4300-digit limit
    ],
)
def test_release_version_precedence(lower: str, upper: str) -> None:
    assert ReleaseVersion(lower) < ReleaseVersion(upper)
    assert ReleaseVersion(upper) > ReleaseVersion(lower)


@pytest.mark.parametrize(
    "text",
    ["0.0.0", "1.0.0-0", "1.0.0-0a", "1.0.0-x-y-z.--", "1.0.0--", "1.0.0-0.3.7", "10.20.30"],
)
def test_release_version_accepts(text: str) -> None:
    assert str(ReleaseVersion(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "1.0",
        "1.0.0.0",
        "01.0.0",
        "1.01.0",
        "1.0.01",
        "1.0.0-01",
        "1.0.0-alpha.01",
        "1.0.0+build",
        "1.0.0+build.1",
        "1.0.0-alpha+001",
        "v1.0.0",
        "1.0.0-",
        "1.0.0-alpha..1",
        "1.0.0-alpha.",
        "1.0.0-alpha_1",
        "1.0.0-\u03b1",
        "-1.0.0",
        " 1.0.0",
        "1.0.0 ",
        "1.0.0\n",
        "1.\u0662.0",  # Arabic-Indic digit
        "1.0.x",
        "1..0",
    ],
)
def test_release_version_rejects(text: str) -> None:
    with pytest.raises(InvalidValueError):
        ReleaseVersion(text)


def test_release_version_equality_is_text_equality() -> None:
    # Without +build, equal precedence means equal text: no two texts compare equal.
    parsed = [ReleaseVersion(t) for t in [*SEMVER_CHAIN, "1.0.0-0", "1.0.0-00a"]]
    for a in parsed:
        for b in parsed:
            assert (a == b) is (str(a) == str(b))
            assert (a == b) is (not a < b and not b < a)
            if a == b:
                assert hash(a) == hash(b)


def test_release_version_does_not_compare_with_text() -> None:
    with pytest.raises(TypeError):
        _ = ReleaseVersion("1.0.0") < "2.0.0"  # type: ignore[operator]


# --- VersionRequirement -------------------------------------------------------------------


def test_exact_requirement_admits_only_its_version() -> None:
    requirement = VersionRequirement("1.4.0")
    assert str(requirement) == "1.4.0"
    assert requirement.is_exact
    assert requirement.contains("1.4.0")
    assert requirement.contains(ReleaseVersion("1.4.0"))
    for other in ("1.4.1", "1.3.9", "1.4.0-rc.1", "1.4.1-0"):
        assert not requirement.contains(other)


@pytest.mark.parametrize("text", ["[1.4.0]", "[1.4.0,1.4.0]"])
def test_bracketed_exact_forms_equal_the_exact_form(text: str) -> None:
    requirement = VersionRequirement(text)
    assert requirement == VersionRequirement("1.4.0")
    assert hash(requirement) == hash(VersionRequirement("1.4.0"))
    assert str(requirement) == "1.4.0"
    assert requirement.is_exact


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        ("[1.2.0,2.0.0)", ["1.2.0", "1.9.9", "2.0.0-rc.1"], ["1.1.9", "2.0.0", "1.2.0-rc.1"]),
        ("(1.0.0,1.5.0]", ["1.0.1", "1.0.1-0", "1.5.0"], ["1.0.0", "1.5.1", "0.1.0"]),
        ("[1.0.0,)", ["1.0.0", "99.0.0"], ["0.9.9", "1.0.0-rc.1"]),
        ("(1.0.0,)", ["1.0.1", "2.0.0"], ["1.0.0", "0.0.1"]),
        ("(,2.0.0)", ["0.0.0", "1.9.9"], ["2.0.0", "3.0.0"]),
        ("(,2.0.0]", ["0.0.0", "2.0.0"], ["2.0.1", "2.0.1-0"]),
        ("[1.0.0,1.0.1]", ["1.0.0", "1.0.1-alpha", "1.0.1"], ["0.9.9", "1.0.2"]),
    ],
)
def test_interval_contains_at_each_bound(text: str, inside: list[str], outside: list[str]) -> None:
    # Pre-releases are ordered by plain SemVer precedence (the doc names no special case).
    requirement = VersionRequirement(text)
    assert str(requirement) == text
    assert not requirement.is_exact
    for version in inside:
        assert requirement.contains(version), version
    for version in outside:
        assert not requirement.contains(version), version


def test_interval_exposes_its_bounds() -> None:
    closed_open = VersionRequirement("[1.2.0,2.0.0)")
    assert closed_open.lower == ReleaseVersion("1.2.0")
    assert closed_open.lower_inclusive
    assert closed_open.upper == ReleaseVersion("2.0.0")
    assert not closed_open.upper_inclusive
    open_lower = VersionRequirement("(,2.0.0]")
    assert open_lower.lower is None
    assert open_lower.upper_inclusive
    with pytest.raises(AttributeError):
        closed_open.lower = None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "(,)",
        "[,]",
        "[,)",
        "(,]",
        "[,2.0.0)",  # an open side must be written with ( or )
        "(1.0.0,]",
        "[2.0.0,1.0.0]",  # lower above upper
        "[2.0.0,2.0.0-rc.1]",
        "(1.0.0,1.0.0)",  # equal bounds, not both inclusive: empty
        "[1.0.0,1.0.0)",
        "(1.0.0,1.0.0]",
        "(1.4.0)",
        "[1.4.0)",
        "(1.4.0]",
        "[]",
        "()",
        "[1.0.0, 2.0.0)",  # no spaces inside
        "[ 1.0.0,2.0.0)",
        "[1.0.0,2.0.0 )",
        " [1.0.0,2.0.0)",
        "[1.0.0,2.0.0) ",
        "1.4.0 ",
        "[1.0.0,2.0.0",
        "1.0.0,2.0.0)",
        "[1.0.0,2.0.0,3.0.0)",
        "[1.0,2.0.0)",
        "[1.0.0+b,2.0.0)",
        "[01.0.0,2.0.0)",
        "{1.0.0,2.0.0}",
        "]1.0.0,2.0.0[",
        "[1.0.0;2.0.0)",
        ">=1.0.0",
        "^1.0.0",
        "1.0.0+build",
    ],
)
def test_requirement_rejects(text: str) -> None:
    with pytest.raises(InvalidValueError):
        VersionRequirement(text)


def test_requirements_compare_by_canonical_text() -> None:
    assert VersionRequirement("[1.0.0,2.0.0)") == VersionRequirement("[1.0.0,2.0.0)")
    assert VersionRequirement("[1.0.0,2.0.0)") != VersionRequirement("[1.0.0,2.0.0]")
    assert VersionRequirement("1.0.0") != ReleaseVersion("1.0.0")


# --- PolicyStatus and Policy --------------------------------------------------------------


def test_policy_status_has_exactly_the_four_statuses() -> None:
    assert [s.value for s in PolicyStatus] == ["active", "deprecated", "yanked", "revoked"]
    assert [s.name for s in PolicyStatus] == ["ACTIVE", "DEPRECATED", "YANKED", "REVOKED"]
    assert PolicyStatus("yanked") is PolicyStatus.YANKED
    assert str(PolicyStatus.REVOKED) == "revoked"
    for text in ("Active", "ACTIVE", "retired", ""):
        with pytest.raises(ValueError, match="PolicyStatus"):
            PolicyStatus(text)


def test_policy_is_a_frozen_hashable_value() -> None:
    policy = Policy(PolicyStatus.YANKED, "broken build")
    assert policy == Policy(PolicyStatus.YANKED, "broken build")
    assert hash(policy) == hash(Policy(PolicyStatus.YANKED, "broken build"))
    assert policy != Policy(PolicyStatus.YANKED)
    assert policy != Policy(PolicyStatus.REVOKED, "broken build")
    assert Policy(PolicyStatus.ACTIVE).reason is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.reason = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("policy", "text"),
    [
        (Policy(PolicyStatus.ACTIVE), "active"),
        (Policy(PolicyStatus.DEPRECATED, "use 2.x"), 'deprecated "use 2.x"'),
        (Policy(PolicyStatus.YANKED, 'say "hi"\\'), 'yanked "say \\"hi\\"\\\\"'),
        (Policy(PolicyStatus.REVOKED, "line\nand\ttab"), 'revoked "line\\nand\\ttab"'),
    ],
)
def test_policy_str_is_the_directive_argument_text(policy: Policy, text: str) -> None:
    assert str(policy) == text


@pytest.mark.parametrize("reason", ["", "nul\x00", "cr\r", "esc\x1b", "\ud800"])
def test_policy_reason_must_be_writable_as_a_quoted_string(reason: str) -> None:
    # A reason no Journal text could carry is refused when the Policy is made (doc silent).
    with pytest.raises(InvalidValueError):
        Policy(PolicyStatus.YANKED, reason)


def test_policy_rejects_a_status_that_is_not_a_policy_status() -> None:
    with pytest.raises(TypeError):
        Policy("active")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Policy(PolicyStatus.YANKED, b"reason")  # type: ignore[arg-type]
