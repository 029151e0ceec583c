"""The log layer on every store: unique claims beside events, schema versions, URLs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from nenjim.infrastructure.log import (
    Claim,
    ClaimConflictError,
    IncompatibleStoreError,
    LogApplication,
    LogBatch,
    UnsupportedStoreError,
    resolve_store_url,
)


class Item(Aggregate):
    """A minimal aggregate to append events with."""

    class Renamed(Aggregate.Event):
        name: str

        def apply(self, aggregate: Aggregate) -> None:
            pass

    def rename(self, name: str) -> None:
        self.trigger_event(self.Renamed, name=name)


@pytest.fixture
def app(store_url: str) -> LogApplication:
    return LogApplication(store_url)


def _events(app: LogApplication) -> int:
    return app.recorder.max_notification_id() or 0


def test_claims_are_written_with_the_events(app: LogApplication) -> None:
    item = Item()
    app.append([item], [Claim("name", "alpha", str(item.id))])
    assert app.claim_owner("name", "alpha") == str(item.id)
    assert app.claim_owner("name", "beta") is None
    assert app.claim_owner("other", "alpha") is None


def test_claim_owners_maps_the_keys_of_one_namespace_to_their_owners(
    app: LogApplication,
) -> None:
    assert app.claim_owners("name") == {}
    item = Item()
    app.append(
        [item],
        [Claim("name", "beta", "b"), Claim("name", "alpha", "a"), Claim("other", "alpha", "o")],
    )
    assert app.claim_owners("name") == {"alpha": "a", "beta": "b"}
    assert app.claim_owners("name") == {c.key: c.owner for c in app.claims("name")}
    assert app.claim_owners("other") == {"alpha": "o"}


def test_claim_pages_read_one_namespace_in_key_order_a_page_at_a_time(
    app: LogApplication,
) -> None:
    assert list(app.claim_pages("name", page=2)) == []
    keys = ["e", "a", "d", "b", "c"]
    app.append([Item()], [Claim("name", key, key.upper()) for key in keys] + [Claim("x", "a", "o")])
    pages = list(app.claim_pages("name", page=2))
    assert pages == [[("a", "A"), ("b", "B")], [("c", "C"), ("d", "D")], [("e", "E")]]
    assert list(app.claim_pages("name", page=5)) == [[(k, k.upper()) for k in sorted(keys)]]


def test_reclaiming_for_the_same_owner_is_a_no_op(app: LogApplication) -> None:
    item = Item()
    app.append([item], [Claim("name", "alpha", "me")])
    item.rename("x")
    app.append([item], [Claim("name", "alpha", "me")])
    assert app.claim_owner("name", "alpha") == "me"
    assert _events(app) == 2


def test_a_claim_held_by_another_owner_refuses_the_whole_append(app: LogApplication) -> None:
    app.append([Item()], [Claim("name", "alpha", "first")])
    before = _events(app)
    second = Item()
    with pytest.raises(ClaimConflictError) as caught:
        app.append([second], [Claim("name", "beta", "second"), Claim("name", "alpha", "second")])
    assert isinstance(caught.value, IntegrityError)
    assert caught.value.holder == "first"
    assert caught.value.claim == Claim("name", "alpha", "second")
    assert _events(app) == before
    assert app.claim_owner("name", "beta") is None  # rolled back with the events


def test_conflicting_claims_within_one_append_are_refused(app: LogApplication) -> None:
    with pytest.raises(ClaimConflictError):
        app.append([Item()], [Claim("name", "k", "a"), Claim("name", "k", "b")])
    assert app.claim_owner("name", "k") is None
    assert _events(app) == 0


def test_an_event_conflict_rolls_back_the_claims(app: LogApplication) -> None:
    item = Item()
    app.append([item])
    stale = app.repository.get(item.id)
    item.rename("first")
    app.append([item])
    stale.rename("second")
    with pytest.raises(IntegrityError):
        app.append([stale], [Claim("name", "late", "stale")])
    assert app.claim_owner("name", "late") is None


@pytest.mark.parametrize(
    "key",
    ["it's", 'say "hi"', "back\\slash", "100%", "\U0001f600 non-BMP", "'; DROP TABLE x; --", ""],
)
def test_awkward_keys_round_trip(app: LogApplication, key: str) -> None:
    app.append([Item()], [Claim("ns", key, f"owner of {key}")])
    assert app.claim_owner("ns", key) == f"owner of {key}"


def test_notification_ids_are_gap_free_after_a_refused_append(app: LogApplication) -> None:
    app.append([Item()], [Claim("name", "a", "x")])
    with pytest.raises(ClaimConflictError):
        app.append([Item()], [Claim("name", "a", "y")])
    app.append([Item(), Item()])
    ids = [n.id for n in app.recorder.select_notifications(start=None, limit=10)]
    assert ids == [1, 2, 3]


def _batch(*claims: Claim) -> LogBatch:
    """The creation of a new item, with ``claims``."""
    return LogBatch(Item().collect_events(), claims)


def test_an_append_in_batches_writes_every_batch_in_order(app: LogApplication) -> None:
    batches = [_batch(Claim("name", f"k{n}", "me")) for n in range(4)]
    assert app.append_batches(iter(batches)) == [1, 2, 3, 4]
    stored = app.recorder.select_notifications(start=None, limit=10)
    assert [n.originator_id for n in stored] == [b.events[0].originator_id for b in batches]
    assert [claim.key for claim in app.claims("name")] == ["k0", "k1", "k2", "k3"]


def test_a_conflict_in_a_late_batch_leaves_the_log_as_it_was(app: LogApplication) -> None:
    """Earlier batches were written in the same transaction: they are rolled back too."""
    app.append([Item()], [Claim("name", "taken", "x")])
    late = [_batch(Claim("name", "a", "y")), _batch(), _batch(Claim("name", "taken", "y"))]
    with pytest.raises(ClaimConflictError):
        app.append_batches(late)
    twice = _batch()
    with pytest.raises(IntegrityError):  # a stream version taken by the first batch
        app.append_batches([twice, _batch(), LogBatch(twice.events)])
    assert _events(app) == 1
    assert app.claims("name") == [Claim("name", "taken", "x")]
    app.append([Item()])
    ids = [n.id for n in app.recorder.select_notifications(start=None, limit=10)]
    assert ids == [1, 2]  # gap-free


def test_an_error_raised_by_the_batches_leaves_the_log_as_it_was(app: LogApplication) -> None:
    def batches() -> Iterator[LogBatch]:
        yield _batch(Claim("name", "a", "me"))
        yield _batch()
        raise RuntimeError("the third batch cannot be made")

    with pytest.raises(RuntimeError, match="third batch"):
        app.append_batches(batches())
    assert _events(app) == 0
    assert app.claims("name") == []


def _items_batch(count: int, *claims: Claim) -> LogBatch:
    """The creation of ``count`` new items in one batch (one statement writes them on
    SQLite), with ``claims``."""
    return LogBatch([event for _ in range(count) for event in Item().collect_events()], claims)


def test_batches_of_several_events_get_the_ids_the_log_gave_them(app: LogApplication) -> None:
    app.append([Item(), Item()])  # the ids go on from what the log holds
    batches = [_items_batch(3, Claim("name", "a", "x")), _items_batch(1), _items_batch(4)]
    ids = app.append_batches(batches)
    stored = app.recorder.select_notifications(start=None, limit=20)
    assert ids == [3, 4, 5, 6, 7, 8, 9, 10]
    assert [n.id for n in stored][2:] == ids
    assert [n.originator_id for n in stored][2:] == [
        event.originator_id for batch in batches for event in batch.events
    ]
    app.append([Item()])
    assert _events(app) == 11


def test_a_batch_of_several_events_claims_all_or_nothing(app: LogApplication) -> None:
    app.append([Item()], [Claim("name", "taken", "x")])
    same_owner = _items_batch(2, Claim("name", "k", "me"), Claim("name", "k", "me"))
    assert app.append_batches([same_owner, _items_batch(2)]) == [2, 3, 4, 5]
    assert app.claim_owners("name") == {"taken": "x", "k": "me"}
    clash = _items_batch(3, Claim("name", "new", "y"), Claim("name", "taken", "y"))
    with pytest.raises(ClaimConflictError) as caught:
        app.append_batches([_items_batch(2), clash])
    assert caught.value.claim == Claim("name", "taken", "y")
    assert caught.value.holder == "x"
    within = _items_batch(2, Claim("name", "twice", "a"), Claim("name", "twice", "b"))
    with pytest.raises(ClaimConflictError) as caught:
        app.append_batches([within, _items_batch(1)])
    assert caught.value.claim == Claim("name", "twice", "b")
    assert _events(app) == 5
    assert app.claim_owners("name") == {"taken": "x", "k": "me"}


def test_a_taken_stream_version_in_a_batch_of_several_leaves_the_log_as_it_was(
    app: LogApplication,
) -> None:
    batch = _items_batch(3)
    with pytest.raises(IntegrityError):
        app.append_batches([_items_batch(2), LogBatch([*batch.events, batch.events[1]])])
    assert _events(app) == 0
    assert app.append_batches([_items_batch(2), _items_batch(2)]) == [1, 2, 3, 4]


def test_reopening_a_durable_store_keeps_events_and_claims(durable_store_url: str) -> None:
    store_url = durable_store_url
    first = LogApplication(store_url)
    item = Item()
    first.append([item], [Claim("name", "kept", "me")])
    first.close()
    again = LogApplication(store_url)
    assert again.claim_owner("name", "kept") == "me"
    assert again.repository.get(item.id).version == 1


def test_sqlite_refuses_an_incompatible_schema_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    LogApplication(url).close()
    with sqlite3.connect(tmp_path / "log.db") as conn:
        conn.execute("UPDATE nenjim_schema SET version = 99")
    with pytest.raises(IncompatibleStoreError, match="schema version 99"):
        LogApplication(url)


def test_postgres_refuses_an_incompatible_schema_version(postgres_schema_url: str) -> None:
    LogApplication(postgres_schema_url).close()
    schema = postgres_schema_url.split("schema=")[1].split("&", maxsplit=1)[0]
    server = postgres_schema_url.split("?", maxsplit=1)[0]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".nenjim_schema SET version = 99')
    with pytest.raises(IncompatibleStoreError, match="schema version 99"):
        LogApplication(postgres_schema_url)


@pytest.mark.parametrize(
    ("url", "kind", "key", "value"),
    [
        (
            "memory:",
            "memory",
            "PERSISTENCE_MODULE",
            "nenjim.infrastructure.memory.log:ClaimingMemoryFactory",
        ),
        ("sqlite:///var/x.db", "sqlite", "SQLITE_DBNAME", "/var/x.db"),
        ("sqlite:////var/x.db", "sqlite", "SQLITE_DBNAME", "/var/x.db"),
        ("sqlite:rel/x.db", "sqlite", "SQLITE_DBNAME", str(Path("rel/x.db").absolute())),
        ("postgresql://u:p%40ss@h:6543/db?schema=s", "postgresql", "POSTGRES_PASSWORD", "p@ss"),
        ("postgresql://u@h:6543/db?schema=s", "postgresql", "POSTGRES_SCHEMA", "s"),
        ("postgres://u@h/db", "postgresql", "POSTGRES_PORT", "5432"),
    ],
)
def test_store_urls(url: str, kind: str, key: str, value: str) -> None:
    location = resolve_store_url(url)
    assert location.kind == kind
    assert location.env[key] == value
    assert location.is_durable == (kind != "memory")


@pytest.mark.parametrize(
    "url",
    [
        "mysql://x/y",
        "sqlite:",
        "sqlite://host/x.db",
        "postgresql://h:5432/",
        "postgresql://h/db?x=1",
        "",
    ],
)
def test_bad_store_urls_are_refused(url: str) -> None:
    with pytest.raises(UnsupportedStoreError):
        resolve_store_url(url)


def test_store_url_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NENJIM_STORE_URL", f"sqlite://{tmp_path}/env.db")
    assert resolve_store_url(None).env["SQLITE_DBNAME"] == f"{tmp_path}/env.db"
    monkeypatch.delenv("NENJIM_STORE_URL")
    assert resolve_store_url(None).kind == "memory"
