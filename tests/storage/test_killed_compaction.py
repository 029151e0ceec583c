"""kill -9 during ``storage compact`` loses nothing and leaves a store that compacts again.

A process compacts a store in which a purge left free space, and kills itself
with ``SIGKILL``: on SQLite inside ``VACUUM`` (from its progress handler) or
between ``VACUUM`` and the last checkpoint; on PostgreSQL between two tables'
``VACUUM FULL``. Afterwards every surviving record reads back as written,
what was purged stays purged, the audit is clean, and a second compaction
completes.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nenjim.infrastructure.storage import DurableRecord, Resource, open_backend
from nenjim.infrastructure.storage.audit import audit_store, compact_store
from nenjim.testing.plugin import NewStore

REPO = Path(__file__).resolve().parents[2]
ROWS = Resource("compacted.rows", "records")
RECORDS = 600
TIMEOUT = 120

_HOOKS = {
    ("sqlite", "inside VACUUM"): """
        from nenjim.infrastructure.sqlite import maintenance
        _connect = maintenance.connect
        armed, ticks = [False], [0]
        def handler():
            if armed[0]:
                ticks[0] += 1
                if ticks[0] == 20:
                    print("killed", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            return 0
        def connect(*args, **kwargs):
            connection = _connect(*args, **kwargs)
            connection.set_progress_handler(handler, 100)
            return connection
        maintenance.connect = connect
        def progress(task, done, total):
            armed[0] = done == 1  # the checkpoint is done; VACUUM runs next
    """,
    ("sqlite", "before the last checkpoint"): """
        def progress(task, done, total):
            if done == 2:
                print("killed", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
    """,
    ("postgresql", "between two tables"): """
        def progress(task, done, total):
            if done == 2:
                print("killed", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
    """,
}

_COMPACTOR = """
import sys
from nenjim.infrastructure.storage.audit import compact_store
compact_store(sys.argv[1], progress)
print("compacted", flush=True)
"""


def _record(number: int) -> DurableRecord:
    return DurableRecord("compacted.value", "1.0", {"n": number, "text": secrets.token_hex(400)})


@pytest.mark.parametrize(("kind", "moment"), sorted(_HOOKS))
def test_a_compaction_killed_midway_loses_nothing(
    kind: str, moment: str, nenjim_new_store: NewStore
) -> None:
    url = nenjim_new_store(kind)
    backend = open_backend(url, [ROWS])
    try:
        rows = backend.view.records(ROWS)
        for number in range(RECORDS):
            rows.insert(key=f"k{number}", revision=0, attributes={}, record=_record(number))
        for number in range(0, RECORDS, 2):
            rows.purge(key=f"k{number}")
        kept = {f"k{n}": rows.read(f"k{n}") for n in range(1, RECORDS, 2)}
    finally:
        backend.close()
    hooks = "import os, signal\n" + textwrap.dedent(_HOOKS[kind, moment])

    killed = subprocess.run(
        [sys.executable, "-c", hooks + _COMPACTOR, url],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=TIMEOUT,
    )

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert killed.stdout.split() == ["killed"]
    backend = open_backend(url, [ROWS])
    try:
        rows = backend.view.records(ROWS)
        assert {key: rows.read(key) for key in kept} == kept
        assert all(rows.read(f"k{n}") is None for n in range(0, RECORDS, 2))
        assert all(rows.history(f"k{n}") == () for n in range(0, RECORDS, 2))
    finally:
        backend.close()
    assert audit_store(url, [ROWS]).ok
    compact_store(url)
    assert audit_store(url, [ROWS]).ok
