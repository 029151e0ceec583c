"""Single-use start, all-or-nothing publication, stop, and the manager's lifecycle rules."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from journal_texts import Chain, journal_text, write_chain, write_revision
from nenjim.journal import JournalService
from nenjim.journal.exception import (
    InvalidValueError,
    JournalChainError,
    JournalFormatError,
    JournalRootError,
    LifecycleError,
)
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref import loader as loader_module
from nenjim.journal.impl.ref.ingestion import JournalIngestion

A = "com.example.alpha"
B = "com.example.beta"

QUERIES: list[Callable[[JournalService], object]] = [
    lambda s: s.coordinates(),
    lambda s: s.revisions(A),
    lambda s: s.latest(A),
    lambda s: s.revision(A, "20260101T000000Z"),
    lambda s: s.as_of(A, "20260101T000000Z"),
    lambda s: s.release(A, "20260101T000000Z", "1.0.0"),
]


def _valid_root(root: Path) -> Path:
    chain = Chain(A)
    chain.add("20260101T000000Z")
    chain.add("20260201T000000Z")
    write_chain(root, chain)
    return root


@pytest.mark.parametrize("query", QUERIES)
def test_every_query_before_start_is_a_lifecycle_error(
    tmp_path: Path, query: Callable[[JournalService], object]
) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    with pytest.raises(LifecycleError):
        query(assembly.service)


def test_lifecycle_error_is_a_runtime_error() -> None:
    assert issubclass(LifecycleError, RuntimeError)


def test_successful_start_returns_after_the_complete_load(tmp_path: Path) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    assert [str(r.version) for r in assembly.service.revisions(A)] == [
        "20260101T000000Z",
        "20260201T000000Z",
    ]


def test_second_start_is_refused(tmp_path: Path) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    with pytest.raises(LifecycleError):
        assembly.process.start()
    assert assembly.service.latest(A) is not None  # still running


def test_failed_initial_load_publishes_nothing_and_keeps_the_original_error(tmp_path: Path) -> None:
    _valid_root(tmp_path)  # alpha sorts first and is valid
    write_revision(tmp_path, B, "20260101T000000Z", "NENJIM-JOURNAL 1\nARTIFACT com.example.beta\n")
    assembly = build_journal(tmp_path)
    with pytest.raises(JournalFormatError) as caught:
        assembly.process.start()
    assert caught.value.artifact == B
    for query in QUERIES:
        with pytest.raises(LifecycleError):
            query(assembly.service)


def test_chain_failure_in_a_later_file_publishes_nothing(tmp_path: Path) -> None:
    _valid_root(tmp_path)
    write_revision(
        tmp_path,
        B,
        "20260101T000000Z",
        journal_text(B, "20260101T000000Z", predecessor="sha256:" + "0" * 64),
    )
    assembly = build_journal(tmp_path)
    with pytest.raises(JournalChainError):
        assembly.process.start()
    with pytest.raises(LifecycleError):
        assembly.service.coordinates()


def test_failed_start_is_not_retried(tmp_path: Path) -> None:
    missing = tmp_path / "not-yet"
    assembly = build_journal(missing)
    with pytest.raises(JournalRootError, match="does not exist"):
        assembly.process.start()
    _valid_root(missing)  # now it would load, but start is single-use
    with pytest.raises(LifecycleError):
        assembly.process.start()
    with pytest.raises(LifecycleError):
        assembly.service.coordinates()


def test_a_root_made_after_the_journal_was_built_loads_at_start(tmp_path: Path) -> None:
    missing = tmp_path / "not-yet"
    assembly = build_journal(missing)  # no store is opened for a root that is not there
    _valid_root(missing)
    assembly.process.start()
    assert [str(r.version) for r in assembly.service.revisions(A)] == [
        "20260101T000000Z",
        "20260201T000000Z",
    ]
    write_revision(missing, B, "20260101T000000Z", journal_text(B, "20260101T000000Z"))
    assert [str(r.coordinate) for r in assembly.manager.refresh().accepted] == [B]
    assembly.process.stop()


def test_a_root_that_was_a_file_when_built_loads_once_it_is_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.write_text("not yet a directory\n")
    assembly = build_journal(root)
    root.unlink()
    _valid_root(root)
    assembly.process.start()
    assert len(assembly.service.revisions(A)) == 2
    assembly.process.stop()


def test_a_stop_before_the_start_of_a_root_made_later_opens_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "not-yet"
    assembly = build_journal(missing)
    _valid_root(missing)
    assembly.process.stop()
    with pytest.raises(LifecycleError, match="stopped"):
        assembly.process.start()
    with pytest.raises(LifecycleError, match="stopped"):
        assembly.manager.refresh()


# Invalid arguments to every query: the lifecycle is checked first.
BAD_ARGUMENTS: list[Callable[[JournalService], object]] = [
    lambda s: s.revisions("not a coordinate"),
    lambda s: s.latest("not a coordinate"),
    lambda s: s.revision("not a coordinate", "20260101T000000Z"),
    lambda s: s.revision(A, "not-a-version"),
    lambda s: s.as_of("not a coordinate", "20260101T000000Z"),
    lambda s: s.as_of(A, "not-a-version"),
    lambda s: s.release("not a coordinate", "20260101T000000Z", "1.0.0"),
    lambda s: s.release(A, "not-a-version", "1.0.0"),
    lambda s: s.release(A, "20260101T000000Z", "bad"),
    lambda s: s.revisions(None),  # type: ignore[arg-type]
    lambda s: s.as_of(A, 20260101),  # type: ignore[arg-type]
]
BAD_IDS = [
    "revisions",
    "latest",
    "revision-coordinate",
    "revision-version",
    "as_of-coordinate",
    "as_of-version",
    "release-coordinate",
    "release-version",
    "release-release",
    "revisions-none",
    "as_of-int",
]


@pytest.mark.parametrize("query", BAD_ARGUMENTS, ids=BAD_IDS)
@pytest.mark.parametrize("moment", ["before start", "after a failed start", "after stop"])
def test_a_query_out_of_lifecycle_is_a_lifecycle_error_whatever_its_arguments(
    tmp_path: Path, query: Callable[[JournalService], object], moment: str
) -> None:
    if moment == "after a failed start":
        write_revision(tmp_path, A, "20260101T000000Z", "not a journal\n")
    else:
        _valid_root(tmp_path)
    assembly = build_journal(tmp_path)
    if moment == "after a failed start":
        with pytest.raises(JournalFormatError):
            assembly.process.start()
    elif moment == "after stop":
        assembly.process.start()
        assembly.process.stop()
    with pytest.raises(LifecycleError):
        query(assembly.service)


@pytest.mark.parametrize("query", BAD_ARGUMENTS, ids=BAD_IDS)
def test_a_running_journal_checks_every_argument_also_of_an_unknown_artifact(
    tmp_path: Path, query: Callable[[JournalService], object]
) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    with pytest.raises((InvalidValueError, TypeError)):
        query(assembly.service)


UNKNOWN = "com.example.unknown"


@pytest.mark.parametrize(
    "query",
    [
        lambda s: s.revision(UNKNOWN, "not-a-version"),
        lambda s: s.as_of(UNKNOWN, "not-a-version"),
        lambda s: s.release(UNKNOWN, "not-a-version", "1.0.0"),
        lambda s: s.release(UNKNOWN, "20260101T000000Z", "bad"),
        lambda s: s.release(A, "20990101T000000Z", "bad"),  # no revision at that version
    ],
    ids=["revision", "as_of", "release-version", "release-release", "release-no-revision"],
)
def test_an_invalid_argument_is_refused_even_where_nothing_would_be_found(
    tmp_path: Path, query: Callable[[JournalService], object]
) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    with pytest.raises(InvalidValueError):
        query(assembly.service)


def test_stop_ends_queries_and_refresh(tmp_path: Path) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    assembly.process.stop()
    with pytest.raises(LifecycleError):
        assembly.service.latest(A)
    with pytest.raises(LifecycleError):
        assembly.manager.refresh()
    assembly.process.stop()  # idempotent
    with pytest.raises(LifecycleError):
        assembly.process.start()


@pytest.mark.parametrize("query", QUERIES)
def test_every_query_and_refresh_after_stop_is_a_lifecycle_error(
    tmp_path: Path, query: Callable[[JournalService], object]
) -> None:
    root = _valid_root(tmp_path)
    assembly = build_journal(root)
    assembly.process.start()
    write_revision(root, B, "20260101T000000Z", journal_text(B, "20260101T000000Z"))
    assembly.process.stop()
    with pytest.raises(LifecycleError, match="stopped"):
        query(assembly.service)
    with pytest.raises(LifecycleError, match="stopped"):
        assembly.manager.refresh()  # a new file waits: the store would be read


def test_refresh_before_start_is_a_lifecycle_error(tmp_path: Path) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    with pytest.raises(LifecycleError):
        assembly.manager.refresh()


def test_refresh_after_failed_start_is_a_lifecycle_error(tmp_path: Path) -> None:
    assembly = build_journal(tmp_path / "missing")
    with pytest.raises(JournalRootError, match="does not exist"):
        assembly.process.start()
    with pytest.raises(LifecycleError):
        assembly.manager.refresh()


def test_example_only_root_starts_empty(tmp_path: Path) -> None:
    directory = tmp_path / A
    directory.mkdir()
    (directory / "20260101T000000Z.journal.example").write_text(journal_text(A, "20260101T000000Z"))
    assembly = build_journal(tmp_path)
    assembly.process.start()
    assert assembly.service.coordinates() == frozenset()


def test_stop_during_a_refresh_ends_it_with_a_lifecycle_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assembly = build_journal(_valid_root(tmp_path))
    assembly.process.start()
    for artifact in ("com.example.new1", "com.example.new2", "com.example.new3"):
        version = "20260101T000000Z"
        write_revision(tmp_path, artifact, version, journal_text(artifact, version))
    ingest = JournalIngestion.ingest
    calls: list[bool] = []

    def ingest_then_stop(self: JournalIngestion, *args: Any, **kwargs: Any) -> Any:
        # The process stops (its store closes) right after the refresh's first ingestion.
        result = ingest(self, *args, **kwargs)
        if not calls:
            calls.append(True)
            assembly.process.stop()
        return result

    monkeypatch.setattr(JournalIngestion, "ingest", ingest_then_stop)
    with pytest.raises(LifecycleError, match="it is stopped"):
        assembly.manager.refresh()
    assert calls == [True]


# --- the cyclic collector during a start -------------------------------------------------


@pytest.mark.parametrize("valid", [True, False], ids=["accepted", "rejected"])
def test_a_start_pauses_the_cyclic_collector_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, valid: bool
) -> None:
    if valid:
        _valid_root(tmp_path)
    else:
        write_revision(tmp_path, A, "20260101T000000Z", "not a journal\n")
    seen: list[bool] = []
    scan = loader_module.scan_root

    def scan_and_look(root: Path) -> Any:
        seen.append(gc.isenabled())
        return scan(root)

    monkeypatch.setattr(loader_module, "scan_root", scan_and_look)
    journal = build_journal(tmp_path, store="memory:").process
    assert gc.isenabled()
    if valid:
        journal.start()
    else:
        with pytest.raises(JournalFormatError):
            journal.start()
    assert seen == [False]
    assert gc.isenabled()


def test_a_start_leaves_a_collector_the_program_turned_off_turned_off(tmp_path: Path) -> None:
    _valid_root(tmp_path)
    journal = build_journal(tmp_path, store="memory:").process
    gc.disable()
    try:
        journal.start()
        assert not gc.isenabled()
    finally:
        gc.enable()
