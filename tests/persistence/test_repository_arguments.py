"""Every repository method refuses a bad argument before any work, on every backend.

The cases are generated method by method and argument by argument: each id
gets the bad ids, each revision or position the bad integers, each limit
the bad limits, each value a value of the wrong type. Every call runs inside
a transaction; it must raise its typed error (``TypeError`` for a wrong
type, ``ValueError`` for a bad value, ``SerializationError`` for a value the
codecs cannot write) and leave the transaction usable: a write after it
commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from nenjim.domain.agents import AgentExecution, AgentJournalRecord, AgentRoot, HandoffState
from nenjim.domain.persistence import errors as perr
from nenjim.domain.teams import TeamExecution, TeamRoot
from nenjim.infrastructure.persistence import Persistence, Repositories

AGENT = "agent-1"
TEAM = "team-1"
CONTENT = "sha256:" + "0" * 64

Call = Callable[[Persistence, Repositories, Any], object]

BAD_IDS: list[tuple[str, Any, type[Exception]]] = [
    ("empty", "", ValueError),
    ("None", None, TypeError),
    ("int", 7, TypeError),
    ("bytes", b"agent", TypeError),
    ("NUL", "a\0b", ValueError),
    ("lone surrogate", "a\ud800", ValueError),
    ("513 bytes", "x" * 513, ValueError),
]
BAD_REVISIONS: list[tuple[str, Any, type[Exception]]] = [
    ("str", "1", TypeError),
    ("bool", True, TypeError),
    ("float", 1.0, TypeError),
    ("negative", -1, ValueError),
    ("2**63", 2**63, ValueError),
]
BAD_LIMITS: list[tuple[str, Any, type[Exception]]] = [
    ("zero", 0, ValueError),
    ("negative", -1, ValueError),
    ("str", "10", TypeError),
    ("bool", True, TypeError),
    ("None", None, TypeError),
    ("2**63", 2**63, ValueError),
]


def _snapshot(value: int) -> dict[str, Any]:
    return {"fields": {"value": value}, "phase": None}


def _record(record_id: str = "r-new") -> AgentJournalRecord:
    return AgentJournalRecord.create(record_id, agent_id=AGENT, kind="message")


CASES: dict[str, tuple[Call, Any, type[Exception]]] = {}


def _ids(name: str, call: Call) -> None:
    for label, value, error in BAD_IDS:
        CASES[f"{name}: {label}"] = (call, value, error)


def _revisions(name: str, call: Call, *, none_ok: bool = False) -> None:
    for label, value, error in BAD_REVISIONS:
        CASES[f"{name}: {label}"] = (call, value, error)
    if not none_ok:
        CASES[f"{name}: None"] = (call, None, TypeError)


def _case(name: str, call: Call, value: Any, error: type[Exception]) -> None:
    CASES[name] = (call, value, error)


# contents
_case(
    "contents.put data: str",
    lambda p, tx, v: tx.contents.put(v, canonicalization_version=1),
    "text",
    TypeError,
)
_case(
    "contents.put version: str",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    "1",
    TypeError,
)
_case(
    "contents.put version: bool",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    True,
    TypeError,
)
_case(
    "contents.put version: None",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    None,
    TypeError,
)
_case(
    "contents.put version: negative",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    -1,
    ValueError,
)
_case(
    "contents.put version: float",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    1.0,
    TypeError,
)
_case(
    "contents.put version: 2**63",
    lambda p, tx, v: tx.contents.put(b"x", canonicalization_version=v),
    2**63,
    ValueError,
)
_case("contents.put_text: bytes", lambda p, tx, v: tx.contents.put_text(v), b"x", TypeError)
_case(
    "contents.put_text: lone surrogate",
    lambda p, tx, v: tx.contents.put_text(v),
    "\ud800",
    ValueError,
)
_case(
    "contents.put_json: NaN",
    lambda p, tx, v: tx.contents.put_json(v),
    {"x": float("nan")},
    perr.SerializationError,
)
_case(
    "contents.put_json: NUL",
    lambda p, tx, v: tx.contents.put_json(v),
    {"x": "\0"},
    perr.SerializationError,
)
_case(
    "contents.put_json: a set",
    lambda p, tx, v: tx.contents.put_json(v),
    {1, 2},
    perr.SerializationError,
)
_case("contents.fetch_many: a str", lambda p, tx, v: tx.contents.fetch_many(v), CONTENT, TypeError)
for _name, _method in (
    ("contents.fetch", lambda p, tx, v: tx.contents.fetch(v)),
    ("contents.exists", lambda p, tx, v: tx.contents.exists(v)),
    ("contents.fetch_text", lambda p, tx, v: tx.contents.fetch_text(v)),
    ("contents.fetch_json", lambda p, tx, v: tx.contents.fetch_json(v)),
    ("contents.fetch_many", lambda p, tx, v: tx.contents.fetch_many([CONTENT, v])),
):
    _case(f"{_name}: empty", _method, "", ValueError)
    _case(f"{_name}: int", _method, 7, TypeError)
    _case(f"{_name}: not a content id", _method, "sha256:XYZ", ValueError)
    _case(f"{_name}: upper-case hex", _method, "sha256:" + "A" * 64, ValueError)

# agents and teams
for _repo, _value, _other in (
    (
        "agents",
        lambda: AgentRoot.create(AGENT, definition_id="a"),
        lambda: TeamRoot.create(TEAM, definition_id="t"),
    ),
    (
        "teams",
        lambda: TeamRoot.create(TEAM, definition_id="t"),
        lambda: AgentRoot.create(AGENT, definition_id="a"),
    ),
):
    _ident = AGENT if _repo == "agents" else TEAM
    _ids(f"{_repo}.load", lambda p, tx, v, r=_repo: getattr(tx, r).load(v))
    _ids(f"{_repo}.delete", lambda p, tx, v, r=_repo: getattr(tx, r).delete(v))
    _ids(f"{_repo}.history", lambda p, tx, v, r=_repo: getattr(tx, r).history(v))
    _ids(
        f"{_repo}.save id",
        lambda p, tx, v, r=_repo, i=_ident: getattr(tx, r).save(
            v, expected_revision=0, root=getattr(tx, r).load(i).evolve()
        ),
    )
    _revisions(
        f"{_repo}.save expected_revision",
        lambda p, tx, v, r=_repo, i=_ident: getattr(tx, r).save(
            i, expected_revision=v, root=getattr(tx, r).load(i).evolve()
        ),
    )
    _case(
        f"{_repo}.create: not a root",
        lambda p, tx, v, r=_repo: getattr(tx, r).create(v),
        "root",
        perr.SerializationError,
    )
    _case(
        f"{_repo}.create: the other kind",
        lambda p, tx, v, r=_repo: getattr(tx, r).create(v()),
        _other,
        perr.SerializationError,
    )
    _case(
        f"{_repo}.save root: not a root",
        lambda p, tx, v, r=_repo, i=_ident: getattr(tx, r).save(i, expected_revision=0, root=v),
        {"revision": 1},
        perr.SerializationError,
    )

# journals
_ids("journals.append id", lambda p, tx, v: tx.journals.append(v, expected_position=0, records=[]))
_ids("journals.read id", lambda p, tx, v: tx.journals.read(v))
_ids("journals.head", lambda p, tx, v: tx.journals.head(v))
_ids("journals.delete", lambda p, tx, v: tx.journals.delete(v))
_revisions(
    "journals.append expected_position",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=v, records=[_record()]),
)
_revisions("journals.read after", lambda p, tx, v: tx.journals.read(AGENT, after=v), none_ok=True)
for _label, _value, _error in BAD_LIMITS:
    if _label not in ("zero", "None"):  # an empty page and no limit are allowed
        _case(
            f"journals.read limit: {_label}",
            lambda p, tx, v: tx.journals.read(AGENT, limit=v),
            _value,
            _error,
        )
_case(
    "journals.append records: a generator",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=0, records=v()),
    lambda: (r for r in [_record()]),
    TypeError,
)
_case(
    "journals.append records: a set",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=0, records=v),
    {"r"},
    TypeError,
)
_case(
    "journals.append records: not records",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=0, records=v),
    ["r"],
    perr.SerializationError,
)
_case(
    "journals.append records: 513-byte id",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=0, records=[_record(v)]),
    "r" * 513,
    ValueError,
)
_case(
    "journals.append: past 2**63 - 1",
    lambda p, tx, v: tx.journals.append(AGENT, expected_position=v, records=[_record()]),
    2**63 - 1,
    ValueError,
)

# executions and team executions
for _repo, _owner_repo, _owner in (
    ("executions", "agents", AGENT),
    ("team_executions", "teams", TEAM),
):
    _run_id = "run-1" if _repo == "executions" else "team-run-1"
    _ids(f"{_repo}.load", lambda p, tx, v, r=_repo: getattr(tx, r).load(v))
    _ids(f"{_repo}.delete", lambda p, tx, v, r=_repo: getattr(tx, r).delete(v))
    _ids(f"{_repo}.history", lambda p, tx, v, r=_repo: getattr(tx, r).history(v))
    _ids(f"{_repo}.list_active", lambda p, tx, v, r=_repo: getattr(tx, r).list_active(v))
    _ids(f"{_repo}.list owner", lambda p, tx, v, r=_repo: getattr(tx, r).list(v))
    _ids(f"{_repo}.assert_idle", lambda p, tx, v, r=_repo: getattr(tx, r).assert_idle(v))
    _ids(f"{_repo}.delete_for_owner", lambda p, tx, v, r=_repo: getattr(tx, r).delete_for_owner(v))
    for _label, _value, _error in BAD_IDS:
        if _label != "None":  # no cursor: the first page
            _case(
                f"{_repo}.list after: {_label}",
                lambda p, tx, v, r=_repo, o=_owner: getattr(tx, r).list(o, after=v),
                _value,
                _error,
            )
    for _label, _value, _error in BAD_LIMITS:
        _case(
            f"{_repo}.list limit: {_label}",
            lambda p, tx, v, r=_repo, o=_owner: getattr(tx, r).list(o, limit=v),
            _value,
            _error,
        )
    _ids(
        f"{_repo}.save id",
        lambda p, tx, v, r=_repo, i=_run_id: getattr(tx, r).save(
            v, expected_revision=1, execution=getattr(tx, r).load(i).evolve()
        ),
    )
    _revisions(
        f"{_repo}.save expected_revision",
        lambda p, tx, v, r=_repo, i=_run_id: getattr(tx, r).save(
            i, expected_revision=v, execution=getattr(tx, r).load(i).evolve()
        ),
    )
    _case(
        f"{_repo}.create_active: not an execution",
        lambda p, tx, v, r=_repo: getattr(tx, r).create_active(v),
        "run",
        perr.SerializationError,
    )
    _case(
        f"{_repo}.save execution: not an execution",
        lambda p, tx, v, r=_repo, i=_run_id: getattr(tx, r).save(
            i, expected_revision=1, execution=v
        ),
        None,
        perr.SerializationError,
    )
_ids("executions.delete_for_agent", lambda p, tx, v: tx.executions.delete_for_agent(v))
_ids("team_executions.delete_for_team", lambda p, tx, v: tx.team_executions.delete_for_team(v))

# workflow states
_ids("workflow_states.load", lambda p, tx, v: tx.workflow_states.load(v))
_ids("workflow_states.history", lambda p, tx, v: tx.workflow_states.history(v))
_ids(
    "workflow_states.save id",
    lambda p, tx, v: tx.workflow_states.save(v, expected_revision=None, snapshot=_snapshot(0)),
)
_ids(
    "workflow_states.delete id", lambda p, tx, v: tx.workflow_states.delete(v, expected_revision=1)
)
_revisions(
    "workflow_states.save expected_revision",
    lambda p, tx, v: tx.workflow_states.save("wf-1", expected_revision=v, snapshot=_snapshot(0)),
    none_ok=True,
)
_revisions(
    "workflow_states.delete expected_revision",
    lambda p, tx, v: tx.workflow_states.delete("wf-1", expected_revision=v),
)
_case(
    "workflow_states.save snapshot: a set",
    lambda p, tx, v: tx.workflow_states.save(
        "wf-2", expected_revision=None, snapshot={"fields": {"x": v}, "phase": None}
    ),
    {1},
    perr.SerializationError,
)

# handoff states
_ids("handoff_states.load", lambda p, tx, v: tx.handoff_states.load(v))
_ids(
    "handoff_states.save id",
    lambda p, tx, v: tx.handoff_states.save(
        v, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    ),
)
_ids("handoff_states.delete id", lambda p, tx, v: tx.handoff_states.delete(v, expected_revision=1))
_revisions(
    "handoff_states.save expected_revision",
    lambda p, tx, v: tx.handoff_states.save(
        AGENT, expected_revision=v, state=tx.handoff_states.load(AGENT).evolve()
    ),
    none_ok=True,
)
_revisions(
    "handoff_states.delete expected_revision",
    lambda p, tx, v: tx.handoff_states.delete(AGENT, expected_revision=v),
)
_case(
    "handoff_states.save state: not a state",
    lambda p, tx, v: tx.handoff_states.save(AGENT, expected_revision=1, state=v),
    "state",
    perr.SerializationError,
)

# the watermark and the result queries
_ids(
    "assert_agent_watermark agent_id",
    lambda p, tx, v: tx.assert_agent_watermark(agent_id=v, agent_revision=1, journal_position=0),
)
_revisions(
    "assert_agent_watermark agent_revision",
    lambda p, tx, v: tx.assert_agent_watermark(
        agent_id=AGENT, agent_revision=v, journal_position=0
    ),
)
_revisions(
    "assert_agent_watermark journal_position",
    lambda p, tx, v: tx.assert_agent_watermark(
        agent_id=AGENT, agent_revision=1, journal_position=v
    ),
)
_ids("execution_result", lambda p, tx, v: p.execution_result(v))
_ids("team_execution_result", lambda p, tx, v: p.team_execution_result(v))
_ids("handoff_result id", lambda p, tx, v: p.handoff_result(v))
for _label, _value, _error in BAD_IDS:
    if _label != "None":
        _case(
            f"handoff_result main_agent_id: {_label}",
            lambda p, tx, v: p.handoff_result("run-1", main_agent_id=v),
            _value,
            _error,
        )
_ids("list_executions", lambda p, tx, v: p.list_executions(v))
_ids("list_team_executions", lambda p, tx, v: p.list_team_executions(v))
_case("list_executions limit: 0", lambda p, tx, v: p.list_executions(AGENT, limit=v), 0, ValueError)
_case(
    "list_team_executions after: int",
    lambda p, tx, v: p.list_team_executions(TEAM, after=v),
    3,
    TypeError,
)


@pytest.fixture(scope="module", params=["memory", "sqlite", "postgresql"])
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Persistence]:
    """One store per backend for the whole module (every case leaves it unchanged): an Agent
    at revision 1 with a finished run, a Team with a finished run, a Workflow and a Handoff
    at revision 1."""
    schema = None
    if request.param == "memory":
        persistence = Persistence.in_memory()
    elif request.param == "sqlite":
        persistence = Persistence.open(f"sqlite://{tmp_path_factory.mktemp('args') / 'state.db'}")
    else:
        postgres_url: str = request.getfixturevalue("postgres_url")
        schema = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        query = f"schema={schema}&pool_size=1&max_overflow=3"
        persistence = Persistence.open(urlunsplit(urlsplit(postgres_url)._replace(query=query)))
    try:
        _seed(persistence)
        yield persistence
    finally:
        persistence.close()
        if schema is not None:
            with psycopg.connect(request.getfixturevalue("postgres_url"), autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def _seed(persistence: Persistence) -> None:
    root = persistence.agents.create(AgentRoot.create(AGENT, definition_id="a"))
    persistence.agents.save(AGENT, expected_revision=0, root=root.evolve())
    run = persistence.executions.create_active(
        AgentExecution.start("run-1", agent_id=AGENT, base=root)
    )
    persistence.executions.save(
        "run-1", expected_revision=0, execution=run.evolve(status="completed")
    )
    persistence.teams.create(TeamRoot.create(TEAM, definition_id="t"))
    team_run = persistence.team_executions.create_active(
        TeamExecution.start("team-run-1", team_id=TEAM)
    )
    persistence.team_executions.save(
        "team-run-1", expected_revision=0, execution=team_run.evolve(status="completed")
    )
    persistence.workflow_states.save("wf-1", expected_revision=None, snapshot=_snapshot(1))
    persistence.handoff_states.save(
        AGENT, expected_revision=None, state=HandoffState.create(AGENT, active_agent_id=AGENT)
    )


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_argument_is_refused_before_any_work_and_the_transaction_goes_on(
    seeded: Persistence, case: str
) -> None:
    call, value, error = CASES[case]
    after = f"after {case}"
    with seeded.transaction() as tx:
        with pytest.raises(error) as raised:
            call(seeded, tx, value)
        assert not isinstance(raised.value, perr.TransactionError)
        tx.workflow_states.save(after, expected_revision=None, snapshot=_snapshot(0))
    assert seeded.workflow_states.load(after) is not None


@pytest.mark.parametrize("limit", [True, None, "10", 1.0], ids=repr)
def test_a_list_limit_of_another_type_is_named_as_such(limit: Any) -> None:
    """``list`` takes no ``None`` limit, so its message does not offer one."""
    persistence = Persistence.in_memory()
    try:
        for listing in (persistence.executions.list, persistence.list_team_executions):
            with pytest.raises(
                TypeError, match=f"^limit must be an int, got {type(limit).__name__}$"
            ):
                listing("owner-1", limit=limit)
    finally:
        persistence.close()
