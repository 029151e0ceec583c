"""The public package boundary and the construction's identity rules."""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import typing
import weakref
from collections.abc import Mapping
from pathlib import Path
from types import FunctionType, MethodType, ModuleType

import pytest

import nenjim.journal.exception
import nenjim.journal.model
import nenjim.journal.valuetypes
from journal_texts import journal_text, write_revision
from nenjim import journal
from nenjim.infrastructure.log import LogApplication
from nenjim.journal import JournalService, JournalServiceManager
from nenjim.journal.component import NenjimComponent, NenjimProcess
from nenjim.journal.exception import JournalError, LifecycleError
from nenjim.journal.impl.ref import (
    JournalAppender,
    JournalAssembly,
    JournalFollower,
    RevisionSource,
    append_revisions,
    build_journal,
    move_root,
)
from nenjim.journal.impl.ref.ingestion import JournalIngestion
from nenjim.journal.impl.ref.loader import RootLoader
from nenjim.journal.impl.ref.publication import JournalPublisher
from nenjim.projections.journal_chains import JournalChainsProjection

_TEXT = journal_text("com.example.alpha", "20260101T000000Z")
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
    defined = {n for n in classes if getattr(journal, n).__module__ == "nenjim.journal"}
    assert defined == {"JournalService", "JournalServiceManager"}


def test_public_subpackages_hold_models_values_and_exceptions() -> None:
    assert {"JournalRevision", "Release", "Dependency", "Preference", "Policy"} <= set(
        nenjim.journal.model.__all__
    )
    assert set(nenjim.journal.valuetypes.__all__) == {
        "ArtifactCoordinate",
        "JournalVersion",
        "Sha256Digest",
        "ReleaseVersion",
        "VersionRequirement",
        "PolicyStatus",
    }
    for name in nenjim.journal.exception.__all__:
        value = getattr(nenjim.journal.exception, name)
        if inspect.isclass(value) and issubclass(value, Exception):
            assert issubclass(value, nenjim.journal.exception.JournalError)
    assert issubclass(nenjim.journal.exception.InvalidValueError, ValueError)


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
                    assert not module.startswith(
                        ("nenjim.journal.impl", "infrastructure", "projections")
                    )


def _flatten(hint: object) -> list[object]:
    args = typing.get_args(hint)
    return [hint, *(p for a in args for p in _flatten(a))]


def test_superseded_api_is_gone() -> None:
    assert not hasattr(journal, "JournalManager")
    for name in ("nenjim.journal.manager", "nenjim.journal.journal_manager"):
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


def _reachable(start: object) -> list[object]:
    """Every object reachable from ``start`` through its state, not through ``gc``.

    Follows instance dicts and slots, container items, bound methods'
    ``__self__``, functions' closures and defaults, and weak references;
    not classes, modules or a function's globals (those are reachable from
    anything, by import).
    """
    seen: dict[int, object] = {}
    frontier: list[object] = [start]
    while frontier:
        obj = frontier.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type, ModuleType)):
            continue
        if obj is None:
            continue
        seen[id(obj)] = obj
        frontier.extend(_referents(obj))
    return list(seen.values())


def _referents(obj: object) -> list[object]:
    found: list[object] = []
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        found.extend(state.values())
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                found.append(getattr(obj, name))
    if isinstance(obj, (list, tuple, set, frozenset)):
        found.extend(obj)
    elif isinstance(obj, Mapping):
        found.extend(obj.keys())
        found.extend(obj.values())
    if isinstance(obj, MethodType):
        found.extend((obj.__self__, obj.__func__))
    if isinstance(obj, FunctionType):
        found.extend(cell.cell_contents for cell in obj.__closure__ or ())
        found.extend(obj.__defaults__ or ())
        found.extend((obj.__kwdefaults__ or {}).values())
    if isinstance(obj, functools.partial):
        found.extend((obj.func, *obj.args, *obj.keywords.values()))
    if isinstance(obj, weakref.ref):
        found.append(obj())
    if isinstance(obj, weakref.finalize):
        found.extend(obj.peek() or ())  # a finalizer's callback is as reachable as a method
    return found


ADMINISTRATION = (
    JournalServiceManager,
    JournalIngestion,
    JournalChainsProjection,
    LogApplication,
    RootLoader,
    JournalPublisher,
    Path,
)


def _assert_holds_nothing_administrative(service: object) -> int:
    reachable = _reachable(service)
    for obj in reachable:
        assert not isinstance(obj, ADMINISTRATION), type(obj)
        module = type(obj).__module__
        assert not module.startswith(("eventsourcing", "infrastructure", "psycopg", "sqlite3"))
        assert getattr(obj, "__name__", "") not in {"refresh", "load", "ingest", "ingest_all"}
    return len(reachable)


def test_a_started_service_reaches_only_the_published_snapshot(tmp_path: Path) -> None:
    write_revision(tmp_path, "com.example.alpha", "20260101T000000Z", _TEXT)
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assert assembly.service.latest("com.example.alpha") is not None
    assert _assert_holds_nothing_administrative(assembly.service) > 10


def test_before_start_only_the_one_shot_starter_leads_further(tmp_path: Path) -> None:
    """The honest negative: the walk does find the loader while the starter is held."""
    assembly = build_journal(tmp_path)
    kinds = {type(obj) for obj in _reachable(assembly.service)}
    assert RootLoader in kinds
    assert JournalIngestion in kinds


def test_a_failed_start_drops_the_starter(tmp_path: Path) -> None:
    (tmp_path / "stray.txt").write_text("x")
    assembly = build_journal(tmp_path)
    with pytest.raises(JournalError):
        assembly.process.start()
    _assert_holds_nothing_administrative(assembly.service)


def test_a_stopped_service_holds_nothing_administrative(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assembly.process.stop()
    _assert_holds_nothing_administrative(assembly.service)
    with pytest.raises(LifecycleError, match="single-use; the Journal is stopped"):
        assembly.process.start()
    with pytest.raises(LifecycleError, match="refresh needs a started Journal; it is stopped"):
        assembly.manager.refresh()


def test_stopping_releases_the_store_and_the_manager_sees_it(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assembly.manager.refresh()
    assembly.process.stop()
    with pytest.raises(LifecycleError, match="it is stopped"):
        assembly.manager.refresh()


def test_dropping_the_process_stops_the_journal_and_releases_its_store(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path)
    assembly.process.start()
    manager = assembly.manager
    del assembly
    gc.collect()
    with pytest.raises(LifecycleError, match="it is stopped"):
        manager.refresh()


REPOSITORY = Path(__file__).resolve().parents[2]


def _documented_public_names() -> dict[str, set[str]]:
    text = (REPOSITORY / "docs" / "journal.md").read_text()
    section = text.split("## Public names", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`nenjim.journal"):
            table[cells[0].strip("`")] = {n.strip().strip("`") for n in cells[1].split(",")}
    return table


def test_the_documented_public_names_are_the_modules_all() -> None:
    documented = _documented_public_names()
    assert set(documented) == {
        "nenjim.journal",
        "nenjim.journal.impl.ref",
        "nenjim.journal.component",
        "nenjim.journal.model",
        "nenjim.journal.valuetypes",
        "nenjim.journal.exception",
    }
    for module, names in documented.items():
        assert set(importlib.import_module(module).__all__) == names, module


PUBLIC_PACKAGES = ("nenjim.journal", "nenjim.journal.impl")


def _public_submodules(module: str, documented: dict[str, set[str]]) -> set[str]:
    """The names of ``module``'s public subpackages, as attributes of it."""
    children = {*documented, "nenjim.journal.impl"}
    return {name.rsplit(".", 1)[1] for name in children if name.rpartition(".")[0] == module}


def test_each_public_module_exposes_exactly_its_documented_names() -> None:
    documented = _documented_public_names()
    for module_name in documented.keys() | set(PUBLIC_PACKAGES):
        module = importlib.import_module(module_name)
        names = documented.get(module_name, set())
        # A subpackage is an attribute of its package once imported (all are, by now).
        listed = {name for name in dir(module) if not name.startswith("_")}
        assert listed == names | _public_submodules(module_name, documented), module_name
        star: dict[str, object] = {}
        exec(f"from {module_name} import *", star)  # the names a star import gives
        assert set(star) - {"__builtins__"} == names, module_name
        for name, value in vars(module).items():
            defined_here = getattr(value, "__module__", None) == module_name
            if defined_here and not name.startswith("_") and callable(value):
                assert name in names, (module_name, name)


def _hinted_types(function: object) -> list[object]:
    hints = typing.get_type_hints(function)
    found: list[object] = []
    pending = list(hints.values())
    while pending:
        hint = pending.pop()
        found.append(hint)
        for argument in typing.get_args(hint):
            pending.extend(argument if isinstance(argument, list) else [argument])
    return found


def test_the_entry_points_of_journal_impl_ref_expose_no_implementation_type() -> None:
    functions: list[object] = [build_journal, move_root, append_revisions, JournalAssembly]
    for entry in (JournalFollower, JournalAppender, RevisionSource):
        for name in _public(entry):
            member = inspect.getattr_static(entry, name)
            member = getattr(member, "__func__", member)  # a classmethod's function
            if callable(member) or isinstance(member, property):  # not a slot's value
                functions.append(member.fget if isinstance(member, property) else member)
        functions.append(entry.__init__)
    public = [
        getattr(importlib.import_module(module), name)
        for module, names in _documented_public_names().items()
        for name in names
    ]
    for function in functions:
        for part in _hinted_types(function):
            module = getattr(part, "__module__", "") or ""
            if not any(part is name for name in public):
                assert not module.startswith(IMPLEMENTATION), (function, part)


LAYERS = ("journal", "domain", "infrastructure", "projections")

IMPLEMENTATION = (
    "nenjim.journal.impl",
    "nenjim.infrastructure",
    "nenjim.projections",
    "nenjim.domain.journal.parser",
)


def test_the_readme_uses_only_documented_public_names() -> None:
    documented = _documented_public_names()
    readme = (REPOSITORY / "README.md").read_text()
    section = readme.split("## The Python API", 1)[1].split("\n## ", 1)[0]
    imports = [
        line.split()
        for line in section.splitlines()
        if line.startswith(tuple(f"from nenjim.{layer}" for layer in LAYERS))
    ]
    assert imports
    for words in imports:
        module, names = words[1], {w.strip(",") for w in words[3:]}
        assert module in documented, module
        assert names <= documented[module], (module, names)


@pytest.mark.parametrize("file_kept", [True, False], ids=["files-kept", "file-removed"])
def test_a_service_restarted_over_a_store_reaches_only_the_published_snapshot(
    tmp_path: Path, journal_store: str, file_kept: bool
) -> None:
    """A warm restart takes its rows from the store: it must not leave the view reading it."""
    root = tmp_path / "root"
    path = write_revision(root, "com.example.alpha", "20260101T000000Z", _TEXT)
    # ``memory:`` keeps nothing between two Journals: restart over a file instead.
    store = f"sqlite:///{tmp_path / 'journal.db'}" if journal_store == "memory:" else journal_store
    first = build_journal(root, store=store)
    first.process.start()
    first.process.stop()
    if not file_kept:
        path.unlink()  # the log still holds it: its text comes from the log, at start
    assembly = build_journal(root, store=store)
    assembly.process.start()
    try:
        _assert_holds_nothing_administrative(assembly.service)
        latest = assembly.service.latest("com.example.alpha")
        assert latest is not None
        assert latest.text == _TEXT
    finally:
        assembly.process.stop()
