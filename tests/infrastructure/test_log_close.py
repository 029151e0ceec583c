"""``LogApplication.close()`` while other threads still read and write through the log.

Closing an SQLite connection that another thread is using crashes the
process (SIGSEGV), so the race runs in a child process: a crash fails the
test instead of killing pytest. After ``close()`` every read and write, on
every store kind, is refused with ``LogClosedError`` naming the store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from eventsourcing.domain import Aggregate

from nenjim.infrastructure.log import Claim, LogApplication, LogClosedError, StoreUnavailableError

SCRIPT = textwrap.dedent(
    """
    import json, sys, threading, time
    from eventsourcing.domain import Aggregate
    from nenjim.infrastructure.log import Claim, LogApplication, LogClosedError

    class Item(Aggregate):
        pass

    app = LogApplication(sys.argv[1])
    for n in range(20):
        item = Item()
        app.append([item], [Claim("name", f"k{n}", str(item.id))])
    started = threading.Barrier(9)
    outcomes = {}

    def work(name, kind):
        started.wait()
        count = 0
        try:
            while True:
                if kind == 0:
                    app.recorder.select_notifications(start=None, limit=100)
                elif kind == 1:
                    app.claims("name")
                    app.claim_owner("name", "k1")
                elif kind == 2:
                    app.recorder.max_notification_id()
                else:
                    item = Item()
                    app.append([item], [Claim("name", f"{name}-{count}", str(item.id))])
                count += 1
        except LogClosedError:
            outcomes[name] = ["closed", count]
        except BaseException as error:
            outcomes[name] = [type(error).__name__, str(error)]

    threads = [threading.Thread(target=work, args=(f"t{n}", n % 4)) for n in range(8)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.3)
    app.close()
    for thread in threads:
        thread.join(30)
    print(json.dumps(outcomes))
    """
)


def test_close_while_other_threads_read_and_write_refuses_them_without_crashing(
    store_url: str,
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, store_url],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, (
        f"child exited with {result.returncode} (negative: killed by signal)\n{result.stderr}"
    )
    outcomes = json.loads(result.stdout)
    assert len(outcomes) == 8
    for name, outcome in outcomes.items():
        assert outcome[0] == "closed", f"{name} ended with {outcome}"


class Item(Aggregate):
    """A minimal aggregate to append events with."""


def test_every_use_after_close_is_refused_naming_the_store(store_url: str) -> None:
    app = LogApplication(store_url)
    item = Item()
    app.append([item], [Claim("name", "alpha", str(item.id))])
    app.close()
    uses = {
        "select_notifications": lambda: app.recorder.select_notifications(start=None, limit=10),
        "max_notification_id": app.recorder.max_notification_id,
        "select_events": lambda: app.recorder.select_events(item.id),
        "repository.get": lambda: app.repository.get(item.id),
        "append": lambda: app.append([Item()]),
        "claims": lambda: app.claims("name"),
        "claim_owner": lambda: app.claim_owner("name", "alpha"),
    }
    for use, call in uses.items():
        with pytest.raises(LogClosedError, match="used after close") as refused:
            call()
        assert isinstance(refused.value, StoreUnavailableError), use
        assert "\n" not in str(refused.value)
        assert str(refused.value) == f"{app.where} used after close()", use
    app.close()  # idempotent
