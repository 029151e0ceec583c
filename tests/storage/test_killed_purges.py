"""kill -9 in the middle of a purge leaves the whole purge or none of it.

A process purges keys one by one (a record and the same key's stream, in
one transaction) and acknowledges each purge after its commit; a hook kills
it with ``SIGKILL`` inside a purge: after some of the key's events are
already stubs, or after its marker went in, before the commit. Afterwards
every acknowledged purge is whole, the key being purged is either whole or
untouched, every other key reads back as written, and the audit finds the
log and the tables in agreement. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nenjim.infrastructure.storage import (
    AppendEntry,
    Backend,
    DurableRecord,
    Resource,
    open_backend,
)
from nenjim.infrastructure.storage.audit import audit_store
from nenjim.testing.plugin import NewStore

REPO = Path(__file__).resolve().parents[2]
ROWS = Resource("killed.rows", "records")
LOG = Resource("killed.log", "streams")
KEYS = [f"k{number:02}" for number in range(12)]
REVISIONS = 4
TIMEOUT = 120

_HOOKS = {
    # Kill after the third stub of the fifth purge is written: the purge is half done.
    "among the stubs": """
        from nenjim.infrastructure.postgresql import storage as _postgresql
        from nenjim.infrastructure.storage.sql import session as _session
        _stubs = [0]
        def counted(execute):
            def counting(self, template, params=()):
                if template.startswith("UPDATE {events} SET topic"):
                    _stubs[0] += 1
                    if _stubs[0] == 4 * 4 + 3:
                        os.kill(os.getpid(), signal.SIGKILL)
                return execute(self, template, params)
            return counting
        # A PostgreSQL session runs execute() its own way (on a kept cursor).
        for _kind in (_session.Session, _postgresql._PooledSession):
            _kind.execute = counted(_kind.execute)
    """,
    # Kill once the sixth purge's marker is in, before its transaction commits.
    "after the marker": """
        from nenjim.infrastructure.storage.sql import purges as _purges
        _append = _purges.events.append
        _markers = [0]
        def append(session, originator, version, topic, state):
            written = _append(session, originator, version, topic, state)
            if topic == "nenjim.storage:Purge":
                _markers[0] += 1
                if _markers[0] == 6:
                    os.kill(os.getpid(), signal.SIGKILL)
            return written
        _purges.events.append = append
    """,
}

_PURGER = """
import sys
from nenjim.infrastructure.storage import Resource, open_backend
backend = open_backend(sys.argv[1], [Resource("killed.rows", "records"),
                                     Resource("killed.log", "streams")])
for key in sys.argv[2:]:
    with backend.transaction() as view:
        view.records("killed.rows").purge(key=key)
        view.streams("killed.log").purge(stream=key, before=3)
    print("purged", key, flush=True)
"""


def _record(key: str, revision: int) -> DurableRecord:
    return DurableRecord("killed.value", "1.0", {"secret": f"{key}-{revision}"})


def _fill(backend: Backend) -> None:
    rows, log = backend.view.records(ROWS), backend.view.streams(LOG)
    for key in KEYS:
        rows.insert(key=key, revision=0, attributes={}, record=_record(key, 0))
        for revision in range(1, REVISIONS):
            rows.replace(
                key=key,
                expected_revision=revision - 1,
                next_revision=revision,
                attributes={},
                record=_record(key, revision),
            )
        entries = [AppendEntry(id=f"{key}-{n}", record=_record(key, n)) for n in range(4)]
        log.append(stream=key, expected_head=0, entries=entries)


def _state(backend: Backend, key: str) -> tuple[object, ...]:
    rows, log = backend.view.records(ROWS), backend.view.streams(LOG)
    return (
        rows.read(key),
        rows.history(key),
        log.head(stream=key),
        [(entry.position, entry.id) for entry in log.read(stream=key)],
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
@pytest.mark.parametrize("moment", sorted(_HOOKS))
def test_a_purge_killed_midway_is_whole_or_absent(
    kind: str, moment: str, nenjim_new_store: NewStore
) -> None:
    url = nenjim_new_store(kind)
    backend = open_backend(url, [ROWS, LOG])
    try:
        _fill(backend)
        written = {key: _state(backend, key) for key in KEYS}
    finally:
        backend.close()
    hooks = "import os, signal\n" + textwrap.dedent(_HOOKS[moment])

    killed = subprocess.run(
        [sys.executable, "-c", hooks + _PURGER, url, *KEYS],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=TIMEOUT,
    )

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    acknowledged = [line.split()[1] for line in killed.stdout.splitlines()]
    assert 0 < len(acknowledged) < len(KEYS)
    backend = open_backend(url, [ROWS, LOG])
    try:
        for key in KEYS:
            state = _state(backend, key)
            if key in acknowledged:
                assert state == (None, (), 4, [(3, f"{key}-2"), (4, f"{key}-3")]), key
            else:  # the key being purged at the kill, and every later one: untouched
                assert state == written[key], key
    finally:
        backend.close()
    report = audit_store(url, [ROWS, LOG])
    assert report.ok, report.findings
