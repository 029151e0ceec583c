"""``close()`` while other threads still read and write through the backend.

Closing an SQLite connection that another thread is using crashes the
process (SIGSEGV), so the race runs in a child process: a crash fails the
test instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, sys, threading, time
    from nenjim.infrastructure.storage import BackendClosedError, open_backend
    from nenjim.infrastructure.storage.testing.resources import (
        FIXTURE_RESOURCES, WORKFLOW_STATES, opaque_record,
    )

    backend = open_backend(sys.argv[1], FIXTURE_RESOURCES)
    records = backend.view.records(WORKFLOW_STATES)
    records.insert(key="k", revision=1, attributes={}, record=opaque_record())
    started = threading.Barrier(7)
    outcomes = {}

    def work(name, write):
        started.wait()
        count = 0
        try:
            while True:
                if write:
                    with backend.transaction() as view:
                        view.records(WORKFLOW_STATES).read("k")
                        key = f"{name}-{count}"
                        view.records(WORKFLOW_STATES).insert(
                            key=key, revision=1, attributes={}, record=opaque_record()
                        )
                else:
                    records.read("k")
                count += 1
        except BackendClosedError:
            outcomes[name] = ["closed", count]
        except BaseException as error:
            outcomes[name] = [type(error).__name__, str(error)]

    threads = [
        threading.Thread(target=work, args=(f"t{n}", n % 2 == 1)) for n in range(6)
    ]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.3)
    backend.close()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), f"{thread.name} hung"
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
    assert len(outcomes) == 6
    for name, outcome in outcomes.items():
        assert outcome[0] == "closed", f"{name} ended with {outcome}"
