"""The public package boundary and the construction's identity rules."""

from __future__ import annotations

import importlib
import inspect
import typing
from pathlib import Path

import pytest

import journal
import journal.exception
import journal.model
import journal.valuetypes
from journal import JournalService, JournalServiceManager
from journal.component import NenjimComponent, NenjimProcess
from journal.impl.ref import build_journal

FORBIDDEN = {"start", "stop", "refresh", "root", "journal_root", "parse", "ingest", "ingest_text"}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_only_the_two_interfaces_are_directly_in_journal() -> None:
    classes = {
        name
        for name, value in vars(journal).items()
        if inspect.isclass(value) and not name.startswith("_")
    }
    assert set(journal.__all__) == {"JournalService", "JournalServiceManager"}
    # Types imported only for annotations are allowed to be visible, but the
    # package defines exactly the two interfaces.
    defined = {n for n in classes if getattr(journal, n).__module__ == "journal"}
    assert defined == {"JournalService", "JournalServiceManager"}


def test_public_subpackages_hold_models_values_and_exceptions() -> None:
    assert {"JournalRevision", "Release", "Dependency", "Preference", "Policy"} <= set(
        journal.model.__all__
    )
    assert set(journal.valuetypes.__all__) == {
        "ArtifactCoordinate",
        "JournalVersion",
        "Sha256Digest",
        "ReleaseVersion",
        "VersionRequirement",
        "PolicyStatus",
    }
    for name in journal.exception.__all__:
        value = getattr(journal.exception, name)
        if inspect.isclass(value) and issubclass(value, Exception):
            assert issubclass(value, journal.exception.JournalError)
    assert issubclass(journal.exception.InvalidValueError, ValueError)


def test_service_is_read_only_and_registrable() -> None:
    assert issubclass(JournalService, NenjimComponent)
    assert not issubclass(JournalService, NenjimProcess)
    assert _public(JournalService) == {
        "coordinates",
        "revisions",
        "latest",
        "revision",
        "as_of",
        "release",
    }
    assert not _public(JournalService) & FORBIDDEN


def test_manager_is_passive() -> None:
    assert _public(JournalServiceManager) == {"journal_root", "refresh"}
    assert not issubclass(JournalServiceManager, NenjimComponent)
    assert not issubclass(JournalServiceManager, NenjimProcess)


def test_process_interface_has_no_refresh() -> None:
    assert _public(NenjimProcess) == {"start", "stop"}


def test_public_signatures_expose_no_implementation_type() -> None:
    for interface in (JournalService, JournalServiceManager):
        for name in _public(interface):
            member = inspect.getattr_static(interface, name)
            function = member.fget if isinstance(member, property) else member
            hints = typing.get_type_hints(function)
            for hint in hints.values():
                for part in _flatten(hint):
                    module = getattr(part, "__module__", "")
                    assert not module.startswith(("journal.impl", "infrastructure", "projections"))


def _flatten(hint: object) -> list[object]:
    args = typing.get_args(hint)
    return [hint, *(p for a in args for p in _flatten(a))]


def test_superseded_api_is_gone() -> None:
    assert not hasattr(journal, "JournalManager")
    for name in ("journal.manager", "journal.journal_manager", "nenjim.journal"):
        with pytest.raises(ImportError):
            importlib.import_module(name)


def test_assembly_views_share_identity_and_the_manager_is_distinct(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assert assembly.service is assembly.process
    assert isinstance(assembly.service, JournalService)
    assert isinstance(assembly.process, NenjimProcess)
    assert assembly.manager is not assembly.service
    assert isinstance(assembly.manager, JournalServiceManager)
    assert not isinstance(assembly.manager, NenjimComponent)


def test_assembly_is_no_component_and_exposes_no_internals(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assert not isinstance(assembly, NenjimComponent)
    assert _public(type(assembly)) == {"service", "process", "manager"}


def test_the_manager_cannot_be_reached_from_the_service(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assembly.process.start()
    seen: set[int] = set()
    frontier: list[object] = [assembly.service]
    while frontier:
        obj = frontier.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, type)):
            continue
        seen.add(id(obj))
        assert not isinstance(obj, JournalServiceManager)
        assert type(obj).__name__ != "JournalAdministration"
        state = getattr(obj, "__dict__", None)
        if isinstance(state, dict):
            frontier.extend(state.values())
        if isinstance(obj, (list, tuple, set, frozenset)):
            frontier.extend(obj)
        elif isinstance(obj, dict):
            frontier.extend(obj.values())
