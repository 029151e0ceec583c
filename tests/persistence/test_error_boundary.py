"""The error boundary of Persistence: every storage failure reaches the caller as the
domain's error of the same category, and constraint violations as the domain's conflicts.

Failures are injected by replacing one physical operation of an in-memory
backend's driver (``backend.driver``) with one that raises. What reaches the
caller must be the matching ``nenjim.domain.persistence.errors`` class, which is the
storage category too, with the same message and the storage error as
``__cause__`` — or, for anything the boundary does not know, the very same
exception object.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure import storage
from nenjim.infrastructure.persistence import Persistence, Repositories
from nenjim.infrastructure.persistence import errors as ierr

AGENT = "agent-1"
TEAM = "team-1"


def _root(agent_id: str = AGENT) -> AgentRoot:
    return AgentRoot.create(agent_id, definition_id="assistant")


@pytest.fixture
def memory() -> Iterator[Persistence]:
    """An in-memory Persistence with an Agent, a Team, content, a Workflow and a Handoff."""
    p = Persistence.in_memory()
    root = p.agents.create(_root())
    p.executions.create_active(AgentExecution.start("exec-1", agent_id=AGENT, base=root))
    p.journals.append(
        AGENT,
        expected_position=0,
        records=[AgentJournalRecord.create("r1", agent_id=AGENT, kind="message")],
    )
    p.teams.create(TeamRoot.create(TEAM, definition_id="crew"))
    p.team_executions.create_active(TeamExecution.start("run-1", team_id=TEAM))
    p.workflow_states.save("wf-1", expected_revision=None, snapshot={"fields": {}, "phase": None})
    p.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )
    p.contents.put_text("stored")
    yield p
    p.close()


def _text_id(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _raise_injected(error: BaseException) -> Callable[..., Any]:
    def injected(*args: object, **kwargs: object) -> Any:
        raise error

    return injected


def _inject(
    monkeypatch: pytest.MonkeyPatch, p: Persistence, method: str, error: BaseException
) -> None:
    monkeypatch.setattr(p.backend.driver, method, _raise_injected(error))


# One read and one write per repository, and the driver operation each reaches.
OPERATIONS: dict[str, tuple[str, Callable[[Persistence], object]]] = {
    "contents.fetch": ("fetch_blob", lambda p: p.contents.fetch("sha256:" + "0" * 64)),
    "contents.put": ("put_blob", lambda p: p.contents.put(b"new", canonicalization_version=1)),
    "agents.load": ("read_record", lambda p: p.agents.load(AGENT)),
    "agents.create": ("insert_record", lambda p: p.agents.create(_root("agent-new"))),
    "journals.read": ("read_stream", lambda p: p.journals.read(AGENT)),
    "journals.append": (
        "append_stream",
        lambda p: p.journals.append(
            AGENT,
            expected_position=1,
            records=[AgentJournalRecord.create("r2", agent_id=AGENT, kind="message")],
        ),
    ),
    "executions.load": ("read_record", lambda p: p.executions.load("exec-1")),
    "executions.list": ("scan_records", lambda p: p.executions.list(AGENT)),
    "workflow_states.load": ("read_record", lambda p: p.workflow_states.load("wf-1")),
    "workflow_states.save": (
        "insert_record",
        lambda p: p.workflow_states.save(
            "wf-2", expected_revision=None, snapshot={"fields": {}, "phase": None}
        ),
    ),
    "handoff_states.load": ("read_record", lambda p: p.handoff_states.load(AGENT)),
    "handoff_states.delete": (
        "delete_record",
        lambda p: p.handoff_states.delete(AGENT, expected_revision=1),
    ),
    "teams.load": ("read_record", lambda p: p.teams.load(TEAM)),
    "teams.create": (
        "insert_record",
        lambda p: p.teams.create(TeamRoot.create("team-new", definition_id="crew")),
    ),
    "team_executions.load": ("read_record", lambda p: p.team_executions.load("run-1")),
    "team_executions.list_active": ("scan_records", lambda p: p.team_executions.list_active(TEAM)),
    "watermark": (
        "lock_guard",
        lambda p: p.assert_agent_watermark(agent_id=AGENT, agent_revision=0, journal_position=1),
    ),
}


_CATEGORIES = (
    storage.ConflictError,
    storage.NotFoundError,
    storage.SerializationError,
    storage.TransactionError,
    storage.BackendClosedError,
    storage.UnsupportedBackendError,
)


def _storage_errors() -> dict[str, tuple[storage.StorageError, type[Exception]]]:
    """A fresh instance of every storage category and subclass, with its domain class."""
    return {
        "Conflict": (storage.ConflictError("injected conflict"), perr.ConflictError),
        "UniqueConstraint": (
            storage.UniqueConstraintError("some.resource", "some_constraint"),
            perr.ConflictError,
        ),
        "ConditionFailed": (
            storage.ConditionFailedError(object(), "injected condition"),
            perr.ConflictError,
        ),
        "BlobConflict": (storage.BlobConflictError("injected blob conflict"), perr.ConflictError),
        "NotFound": (storage.NotFoundError("injected not found"), perr.NotFoundError),
        "Serialization": (
            storage.SerializationError("injected serialization"),
            perr.SerializationError,
        ),
        "Transaction": (storage.TransactionError("injected transaction"), perr.TransactionError),
        "UnsupportedBackend": (
            storage.UnsupportedBackendError("injected unsupported"),
            perr.UnsupportedBackendError,
        ),
        "BackendClosed": (
            storage.BackendClosedError("injected closed"),
            perr.BackendClosedError,
        ),
    }


@pytest.mark.parametrize("category", list(_storage_errors()))
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_storage_category_is_translated_with_its_cause(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, operation: str, category: str
) -> None:
    method, call = OPERATIONS[operation]
    injected, expected = _storage_errors()[category]
    if operation == "contents.put" and category == "BlobConflict":
        expected = perr.IntegrityError  # the content store's own mapping
    _inject(monkeypatch, memory, method, injected)

    with pytest.raises(expected) as raised:
        call(memory)

    error = raised.value
    assert isinstance(error, expected)
    if expected is not perr.IntegrityError:
        assert type(error).__module__ == "nenjim.infrastructure.persistence.errors"
        # Caught by the storage category's name too (a subclass such as a unique
        # constraint error is reported as its category, not as itself).
        storage_class = next(c for c in _CATEGORIES if isinstance(injected, c))
        assert isinstance(error, storage_class)
        assert not isinstance(error, (storage.UniqueConstraintError, storage.ConditionFailedError))
    assert error.__cause__ is injected
    if expected is perr.IntegrityError:
        return  # a new domain error about the content, raised from the storage conflict
    if operation == "watermark" and category == "ConditionFailed":
        # A failed watermark condition is the watermark's own ConflictError, which
        # names the condition and then gives the storage message.
        assert str(error).endswith(str(injected))
        return
    assert str(error) == str(injected)
    frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert "injected" in frames, frames  # the storage error's traceback is kept


def _foreign_errors() -> dict[str, BaseException]:
    return {
        "IOError": OSError("disk on fire"),
        "AgentBusyError": perr.AgentBusyError("legacy busy"),
        "PersistenceConflict": perr.ConflictError("already translated"),
        "PersistenceTransaction": perr.TransactionError("already translated"),
        "PersistenceError": perr.PersistenceError("already translated"),
        # Ours is a storage error too: the boundary must still not translate it again.
        "TranslatedNotFound": ierr.NotFoundError("already translated"),
        "TranslatedConflict": ierr.ConflictError("already translated"),
        "Application": LookupError("application error"),
    }


@pytest.mark.parametrize("kind", list(_foreign_errors()))
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_unknown_errors_pass_through_by_identity(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, operation: str, kind: str
) -> None:
    method, call = OPERATIONS[operation]
    injected = _foreign_errors()[kind]
    _inject(monkeypatch, memory, method, injected)
    with pytest.raises(type(injected), match=re.escape(str(injected))) as raised:
        call(memory)
    assert raised.value is injected


def test_persistence_errors_are_not_storage_errors() -> None:
    domain = [
        perr.PersistenceError,
        perr.ConflictError,
        perr.StateConflictError,
        perr.NotFoundError,
        perr.SerializationError,
        perr.TransactionError,
        perr.UnsupportedBackendError,
        perr.BackendClosedError,
        perr.AgentBusyError,
        perr.IntegrityError,
    ]
    for cls in domain:
        assert not issubclass(cls, storage.StorageError), cls
    assert issubclass(perr.StateConflictError, perr.ConflictError)
    assert issubclass(perr.ConflictError, perr.PersistenceError)
    assert not issubclass(perr.AgentBusyError, perr.ConflictError)
    assert not issubclass(perr.AgentBusyError, perr.PersistenceError)
    assert not issubclass(perr.IntegrityError, perr.PersistenceError)


def test_error_contract_loads_without_storage() -> None:
    """failure_contract_spec: the error classes load on their own, without Storage."""
    probe = (
        "import sys, nenjim.domain.persistence.errors as e; "
        "assert issubclass(e.StateConflictError, e.ConflictError); "
        "print(sorted(m for m in sys.modules if m.startswith('nenjim.infrastructure.storage')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


def test_raw_storage_errors_stay_storage_errors(memory: Persistence) -> None:
    roots = memory.backend.view.records("agent.roots")
    with pytest.raises(storage.ConflictError) as raised:
        roots.insert(key=AGENT, revision=0, attributes={}, record=roots.fetch(AGENT).record)
    assert not isinstance(raised.value, perr.PersistenceError)
    with pytest.raises(storage.NotFoundError):
        roots.fetch("ghost")


def test_domain_calls_raise_domain_errors_with_the_cause(memory: Persistence) -> None:
    with pytest.raises(perr.ConflictError) as raised:
        memory.agents.create(_root())
    assert isinstance(raised.value.__cause__, storage.ConflictError)
    assert str(raised.value) == str(raised.value.__cause__)


# transactions ------------------------------------------------------------------


def test_translated_error_inside_a_transaction_rolls_back_and_keeps_identity(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[BaseException] = []

    def put_then_duplicate(tx: Repositories) -> None:
        tx.contents.put_text("rolled back")
        try:
            tx.agents.create(_root())  # duplicate
        except perr.ConflictError as error:
            seen.append(error)
            raise

    with pytest.raises(perr.ConflictError) as raised:
        memory.run_in_transaction(put_then_duplicate)
    assert raised.value is seen[0]
    assert not memory.contents.exists(_text_id("rolled back"))


def test_injected_error_inside_a_transaction_rolls_back(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    def put_then_fail(tx: Repositories) -> None:
        tx.contents.put_text("rolled back")
        _inject(monkeypatch, memory, "read_record", storage.NotFoundError("injected"))
        tx.agents.load(AGENT)

    with pytest.raises(perr.NotFoundError, match="injected"):
        memory.run_in_transaction(put_then_fail)
    monkeypatch.undo()
    assert not memory.contents.exists(_text_id("rolled back"))
    assert memory.agents.load(AGENT).agent_id == AGENT


def test_translated_error_swallowed_in_a_transaction_still_rolls_back(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    def put_then_swallow(tx: Repositories) -> None:
        tx.contents.put_text("rolled back")
        with pytest.raises(perr.ConflictError):
            tx.agents.create(_root())
        with pytest.raises(perr.TransactionError):
            tx.agents.load(AGENT)  # the scope failed

    with pytest.raises(perr.TransactionError):
        memory.run_in_transaction(put_then_swallow)
    assert not memory.contents.exists(_text_id("rolled back"))


def test_state_conflict_raised_in_the_block_rolls_back(memory: Persistence) -> None:
    error = perr.StateConflictError("anchor mismatch")

    def put_then_raise(tx: Repositories) -> None:
        tx.contents.put_text("rolled back")
        raise error

    with pytest.raises(perr.StateConflictError) as raised:
        memory.run_in_transaction(put_then_raise)
    assert raised.value is error
    assert not memory.contents.exists(_text_id("rolled back"))


def test_commit_rejected_for_an_inner_savepoint_is_translated(memory: Persistence) -> None:
    def inner_swallows_a_failure(inner: Repositories) -> None:
        inner.contents.put_text("inner")
        with pytest.raises(perr.ConflictError):
            inner.agents.create(_root())  # fails the inner scope only

    with memory.transaction() as tx:
        before = tx.contents.put_text("outer before")
        with pytest.raises(perr.TransactionError) as raised:
            memory.run_in_transaction(inner_swallows_a_failure)
        assert isinstance(raised.value.__cause__, storage.TransactionError)
        after = tx.contents.put_text("outer after")
    assert memory.contents.exists(before)
    assert memory.contents.exists(after)
    assert not memory.contents.exists(_text_id("inner"))


def test_unknown_error_after_commit_propagates_once_and_the_write_committed(
    persistence: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs on every backend: the real commit happens, then an unknown error is raised."""
    driver = persistence.backend.driver
    original = driver.transaction
    error = ConnectionResetError("lost after commit")

    @contextmanager
    def commit_then_fail(outer: Any) -> Iterator[Any]:
        with original(outer) as context:
            yield context
        if outer is None:
            raise error

    monkeypatch.setattr(driver, "transaction", commit_then_fail)
    runs = []

    def create(tx: Repositories) -> None:
        runs.append(1)
        tx.agents.create(_root())

    with pytest.raises(ConnectionResetError, match="lost after commit") as raised:
        persistence.run_in_transaction(create)
    assert raised.value is error
    assert runs == [1]
    monkeypatch.undo()
    assert persistence.agents.load(AGENT).agent_id == AGENT


def test_storage_error_at_commit_is_translated_and_rolled_back(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = memory.backend.driver
    original = driver.transaction
    error = storage.SerializationError("cannot commit")

    @contextmanager
    def fail_before_commit(outer: Any) -> Iterator[Any]:
        with original(outer) as context:
            yield context
            if outer is None:
                raise error

    monkeypatch.setattr(driver, "transaction", fail_before_commit)
    with pytest.raises(perr.SerializationError) as raised, memory.transaction() as tx:
        tx.agents.create(_root("agent-2"))
    assert raised.value.__cause__ is error
    monkeypatch.undo()
    with pytest.raises(perr.NotFoundError):
        memory.agents.load("agent-2")


# execution_constraint_translation_spec ---------------------------------------------

BUSY_CASES = ["agent", "team"]


def _busy_setup(
    p: Persistence, kind: str
) -> tuple[Any, Callable[[], object], Callable[[], object]]:
    """(repository, a create_active call, a save call) for a second run of the owner."""
    if kind == "agent":
        agents = p.executions
        run = AgentExecution.start("exec-2", agent_id=AGENT, base=p.agents.load(AGENT))
        loaded = agents.load("exec-1")
        return (
            agents,
            lambda: agents.create_active(run),
            lambda: agents.save("exec-1", expected_revision=0, execution=loaded.evolve()),
        )
    teams = p.team_executions
    team_run = TeamExecution.start("run-2", team_id=TEAM)
    loaded_run = teams.load("run-1")
    return (
        teams,
        lambda: teams.create_active(team_run),
        lambda: teams.save("run-1", expected_revision=0, execution=loaded_run.evolve()),
    )


def _owner(kind: str) -> str:
    return AGENT if kind == "agent" else TEAM


def _resource(kind: str) -> str:
    return "agent.executions" if kind == "agent" else "team.executions"


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_one_active_owner_on_create_active_is_busy_with_its_cause(
    memory: Persistence, kind: str
) -> None:
    _, create, _ = _busy_setup(memory, kind)
    with pytest.raises(perr.AgentBusyError) as raised:
        create()
    cause = raised.value.__cause__
    assert isinstance(cause, storage.UniqueConstraintError)
    assert (cause.resource, cause.constraint) == (_resource(kind), "one_active_owner")
    assert str(raised.value) == str(cause)


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_one_active_owner_on_save_is_busy_with_its_cause(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    _, _, save = _busy_setup(memory, kind)
    injected = storage.UniqueConstraintError(_resource(kind), "one_active_owner")
    _inject(monkeypatch, memory, "replace_record", injected)
    with pytest.raises(perr.AgentBusyError) as raised:
        save()
    assert raised.value.__cause__ is injected
    assert str(raised.value) == str(injected)


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_assert_idle_busy_has_the_condition_failure_as_cause(
    memory: Persistence, kind: str
) -> None:
    repo, _, _ = _busy_setup(memory, kind)
    with pytest.raises(perr.AgentBusyError) as raised:
        repo.assert_idle(_owner(kind))
    cause = raised.value.__cause__
    assert isinstance(cause, storage.ConditionFailedError)
    assert isinstance(cause.condition, storage.NoRows)
    assert cause.condition.index == "owner_active"


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_assert_idle_busy_keeps_the_storage_message(memory: Persistence, kind: str) -> None:
    """The busy error keeps the storage error's message."""
    repo, _, _ = _busy_setup(memory, kind)
    with pytest.raises(perr.AgentBusyError) as raised:
        repo.assert_idle(_owner(kind))
    assert str(raised.value) == str(raised.value.__cause__)


@pytest.mark.parametrize(
    "injected",
    [
        pytest.param(lambda kind: storage.ConflictError("plain conflict"), id="plain-conflict"),
        pytest.param(
            lambda kind: storage.UniqueConstraintError(_resource(kind), "another_constraint"),
            id="other-constraint",
        ),
        pytest.param(
            lambda kind: storage.UniqueConstraintError(
                "team.executions" if kind == "agent" else "agent.executions", "one_active_owner"
            ),
            id="other-resource",
        ),
    ],
)
@pytest.mark.parametrize("kind", BUSY_CASES)
@pytest.mark.parametrize("operation", ["create_active", "save"])
def test_other_conflicts_stay_conflicts(
    memory: Persistence,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    operation: str,
    injected: Callable[[str], storage.StorageError],
) -> None:
    _, create, save = _busy_setup(memory, kind)
    error = injected(kind)
    _inject(
        monkeypatch,
        memory,
        "insert_record" if operation == "create_active" else "replace_record",
        error,
    )
    with pytest.raises(perr.ConflictError) as raised:
        (create if operation == "create_active" else save)()
    assert raised.value.__cause__ is error


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_assert_idle_with_another_condition_failure_is_a_conflict(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    repo, _, _ = _busy_setup(memory, kind)
    lookalike = storage.NoRows(
        _resource(kind), "owner_active", {"owner": _owner(kind), "active": True}
    )
    error = storage.ConditionFailedError(lookalike, "an equal but different condition")
    _inject(monkeypatch, memory, "scan_records", error)
    with pytest.raises(perr.ConflictError) as raised:
        repo.assert_idle(_owner(kind))
    assert raised.value.__cause__ is error


@pytest.mark.parametrize("kind", BUSY_CASES)
@pytest.mark.parametrize(
    "error", [OSError("io"), perr.AgentBusyError("legacy")], ids=["IOError", "legacy-busy"]
)
def test_io_and_legacy_busy_pass_through_admission_unchanged(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, kind: str, error: BaseException
) -> None:
    repo, create, _ = _busy_setup(memory, kind)
    _inject(monkeypatch, memory, "insert_record", error)
    with pytest.raises(type(error), match=str(error)) as raised:
        create()
    assert raised.value is error
    _inject(monkeypatch, memory, "scan_records", error)
    with pytest.raises(type(error), match=str(error)) as raised_idle:
        repo.assert_idle(_owner(kind))
    assert raised_idle.value is error


@pytest.mark.parametrize("kind", BUSY_CASES)
def test_busy_mapping_rolls_back_the_transaction(persistence: Persistence, kind: str) -> None:
    """Runs on every backend: admission refused inside a transaction undoes earlier writes."""
    root = persistence.agents.create(_root())
    persistence.executions.create_active(AgentExecution.start("exec-1", agent_id=AGENT, base=root))
    persistence.teams.create(TeamRoot.create(TEAM, definition_id="crew"))
    persistence.team_executions.create_active(TeamExecution.start("run-1", team_id=TEAM))
    _, create, _ = _busy_setup(persistence, kind)

    def write_then_admit(tx: Repositories) -> None:
        tx.contents.put_text("before the refused admission")
        tx.workflow_states.save(
            "wf", expected_revision=None, snapshot={"fields": {}, "phase": None}
        )
        create()  # a root-view call joins the open transaction

    def write_then_check_idle(tx: Repositories) -> None:
        tx.contents.put_text("before the idle check")
        (tx.executions if kind == "agent" else tx.team_executions).assert_idle(_owner(kind))

    with pytest.raises(perr.AgentBusyError):
        persistence.run_in_transaction(write_then_admit)
    assert not persistence.contents.exists(_text_id("before the refused admission"))
    assert persistence.workflow_states.load("wf") is None
    with pytest.raises(perr.AgentBusyError):
        persistence.run_in_transaction(write_then_check_idle)
    assert not persistence.contents.exists(_text_id("before the idle check"))


def _cause_chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None:
        assert current not in chain, f"__cause__ loops: {[*chain, current]}"
        assert len(chain) < 10, chain
        chain.append(current)
        current = current.__cause__
    return chain


@pytest.mark.parametrize("kind", BUSY_CASES)
@pytest.mark.parametrize("operation", ["create_active", "save"])
def test_cause_chain_of_a_non_busy_unique_violation_terminates(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch, kind: str, operation: str
) -> None:
    """The translated ConflictError's cause is the storage error, whose own cause is not itself."""
    _, create, save = _busy_setup(memory, kind)
    error = storage.UniqueConstraintError(_resource(kind), "another_constraint")
    _inject(
        monkeypatch,
        memory,
        "insert_record" if operation == "create_active" else "replace_record",
        error,
    )
    with pytest.raises(perr.ConflictError) as raised:
        (create if operation == "create_active" else save)()
    assert _cause_chain(raised.value) == [raised.value, error]


def test_io_error_inside_a_transaction_rolls_back_and_passes_through(
    memory: Persistence, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = OSError("connection reset")

    def put_then_fail(tx: Repositories) -> None:
        tx.contents.put_text("rolled back")
        _inject(monkeypatch, memory, "read_record", error)
        tx.teams.load(TEAM)

    with pytest.raises(OSError, match="connection reset") as raised:
        memory.run_in_transaction(put_then_fail)
    assert raised.value is error
    monkeypatch.undo()
    assert not memory.contents.exists(_text_id("rolled back"))
