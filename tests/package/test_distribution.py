"""The distribution: typed packages, psycopg only as the ``postgres`` extra.

``memory:`` and ``sqlite:`` stores must work where psycopg is not installed:
nothing on their paths may import psycopg, psycopg_pool or
eventsourcing.postgres. These tests run fresh interpreters, some of which
cannot import psycopg at all.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from wheel_install import build_wheel

PROJECT = Path(__file__).resolve().parents[2]
LAYERS = ["domain", "infrastructure", "journal", "projections"]
PACKAGES = ["nenjim", *(f"nenjim/{layer}" for layer in LAYERS)]
POSTGRES_MODULES = [
    "psycopg",
    "psycopg_pool",
    "eventsourcing.postgres",
    "nenjim.infrastructure.postgresql.log",
    "nenjim.infrastructure.postgresql.storage",
]

# Makes psycopg unimportable, as on a machine without the postgres extra.
BLOCK_PSYCOPG = """
import sys
class _NoPsycopg:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("psycopg", "psycopg_pool", "psycopg_binary"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoPsycopg())
"""


def _python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(PROJECT / "data" / "sample" / "journals", root)
    return root


def test_the_wheel_ships_py_typed_and_psycopg_only_as_an_extra(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line.removeprefix("Requires-Dist: ")
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist: ")
        ]
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    assert {"nenjim/testing/__init__.py", "nenjim/testing/plugin.py"} <= names  # the replay kit
    # The page of nenjim serve, with no build step at install time.
    page = {f"nenjim/serve/static/{name}" for name in ("index.html", "page.js", "page.css")}
    assert page <= names
    assert {name.split("/")[0] for name in names if "/" in name} == {
        "nenjim",
        wheel.name.removesuffix("-py3-none-any.whl") + ".dist-info",
    }
    psycopg = [r for r in requires if r.startswith("psycopg")]
    assert psycopg == [
        'psycopg[binary,pool]>=3.2; extra == "postgres"',
        'psycopg[binary,pool]>=3.2; extra == "dev"',
    ]
    assert not any(r.startswith("nenjim") for r in requires)


def test_memory_and_sqlite_stores_never_import_the_postgresql_driver(tmp_path: Path) -> None:
    code = """
import json, sys
from nenjim.infrastructure.persistence import Persistence
from nenjim.infrastructure.log import LogApplication
from nenjim.journal.impl.ref import build_journal
from nenjim.journal.impl.ref.audit import audit_journal_log
from nenjim.journal.impl.ref.rebuild import rebuild_chain_projection
from nenjim.cli import main

root, directory = sys.argv[1], sys.argv[2]
for store in ("memory:", f"sqlite://{directory}/journal.db"):
    assembly = build_journal(root, store=store)
    assembly.process.start()
    assembly.process.stop()
    LogApplication(store).close()
assert audit_journal_log(f"sqlite://{directory}/journal.db").ok
rebuild_chain_projection(f"sqlite://{directory}/journal.db")
for url in ("memory:", f"sqlite://{directory}/state.db"):
    Persistence.open(url).close()
assert main(["journal", "verify", root, "--store", f"sqlite://{directory}/cli.db"]) == 0
assert main(["storage", "audit", "--store", f"sqlite://{directory}/state.db"]) == 0
assert main(["storage", "repair", "--store", f"sqlite://{directory}/state.db"]) == 0
print(json.dumps(sorted(sys.modules)))
"""
    result = _python(code, str(_root(tmp_path)), str(tmp_path))
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert "nenjim.infrastructure.sqlite.log" in loaded
    assert "nenjim.infrastructure.sqlite.storage" in loaded
    assert loaded.isdisjoint(POSTGRES_MODULES), loaded & set(POSTGRES_MODULES)


def test_the_command_line_works_on_sqlite_without_psycopg(tmp_path: Path) -> None:
    code = BLOCK_PSYCOPG + "from nenjim.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    root = str(_root(tmp_path))
    store = f"sqlite://{tmp_path / 'journal.db'}"
    state = f"sqlite://{tmp_path / 'state.db'}"
    created = _python(
        BLOCK_PSYCOPG + "from nenjim.infrastructure.persistence import Persistence\n"
        "persistence = Persistence.open(sys.argv[1])\n"
        "persistence.contents.put_text('hello')\n"
        "persistence.close()\n",
        state,
    )
    assert created.returncode == 0, created.stderr
    for argv in (
        ["journal", "verify", root, "--store", store],
        ["journal", "show", root, "com.r35157.nenjim.hubd", "--store", store, "--json"],
        ["journal", "audit", "--store", store],
        ["projections", "rebuild", "journal-chains", "--store", store],
        ["projections", "status", "--store", store],
        ["journal", "verify", root],
        ["storage", "audit", "--store", state],
        ["storage", "repair", "--store", state, "--json"],
    ):
        result = _python(code, *argv)
        assert result.returncode == 0, (argv, result.stderr)
        assert result.stderr == ""
    blocked = _python(BLOCK_PSYCOPG + "import psycopg")
    assert "ModuleNotFoundError" in blocked.stderr


def test_moving_logs_and_the_replay_kit_work_on_sqlite_without_psycopg(tmp_path: Path) -> None:
    code = (
        BLOCK_PSYCOPG
        + """
from pathlib import Path
from nenjim.cli import main
from nenjim.testing import GoldenLog, JournalScenario, RecordedLog, assert_replay_equivalent

directory, golden = Path(sys.argv[1]), Path(sys.argv[2])
log = RecordedLog.from_file(golden / "storage-fixture.log")
assert_replay_equivalent(log, ["memory:", f"sqlite://{directory / 'replayed.db'}"])
GoldenLog(golden / "journal-fixture.log").check(f"sqlite://{directory / 'golden.db'}")
with JournalScenario(f"sqlite://{directory / 'scenario.db'}") as scenario:
    scenario.when("NENJIM-JOURNAL 1\\nARTIFACT com.example.a\\nJOURNAL_VERSION 20260101T000000Z\\n")
    assert len(scenario.new_events) == 1
source, moved = f"sqlite://{directory / 'replayed.db'}", str(directory / "moved.log")
assert main(["log", "export", "--store", source, "--out", moved]) == 0
assert main(["log", "import", "--store", f"sqlite://{directory / 'moved.db'}", moved]) == 0
print("ok")
"""
    )
    result = _python(code, str(tmp_path), str(PROJECT / "tests" / "golden"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.endswith("ok\n")


def test_a_postgresql_store_without_psycopg_says_to_install_the_extra(tmp_path: Path) -> None:
    code = BLOCK_PSYCOPG + "from nenjim.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    url = "postgresql://postgres:secret@127.0.0.1:5432/postgres"
    for argv in (
        ["journal", "verify", str(_root(tmp_path)), "--store", url],
        ["storage", "audit", "--store", url],
    ):
        result = _python(code, *argv)
        assert result.returncode == 3
        assert result.stdout == ""
        assert result.stderr == (
            "nenjim: error: postgresql://postgres:***@127.0.0.1:5432/postgres: "
            "PostgreSQL stores need psycopg: pip install 'nenjim[postgres]'\n"
        )
    storage = _python(
        BLOCK_PSYCOPG + "from nenjim.infrastructure.persistence import Persistence\n"
        "try:\n    Persistence.open(sys.argv[1])\n"
        "except Exception as error:\n    print(type(error).__name__, error)\n",
        url,
    )
    assert "pip install 'nenjim[postgres]'" in storage.stdout, storage.stderr
