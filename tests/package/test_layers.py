"""The layers as the interpreter sees them: what importing each public package loads.

Each check runs a fresh interpreter, imports one package and lists the
database drivers (and, for the domain, our other packages) that got
loaded. The import contracts in ``pyproject.toml`` (``lint-imports``, run by
``make test``) hold the static side of the same rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DRIVERS = ("sqlite3", "psycopg", "psycopg_pool")

# What importing each package may load: none of the drivers, ever.
PUBLIC_PACKAGES = [
    "nenjim.infrastructure.log",
    "nenjim.infrastructure.storage",
    "nenjim.infrastructure.storage.audit",
    "nenjim.infrastructure.persistence",
    "nenjim.infrastructure.langgraph",
    "nenjim.langgraph",
    "nenjim.projections",
    "nenjim.journal",
    "nenjim.journal.impl.ref",
    "nenjim.cli",
    "nenjim.cli.run",
    "nenjim.testing",
    "nenjim.testing.plugin",
]

_LOADED = """
import importlib, json, pkgutil, sys
name, walk = sys.argv[1], sys.argv[2] == "walk"
package = importlib.import_module(name)
if walk:
    for module in pkgutil.walk_packages(package.__path__, name + "."):
        importlib.import_module(module.name)
print(json.dumps(sorted(sys.modules)))
"""


def _loaded(name: str, *, walk: bool = False, code: str = _LOADED) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", code, name, "walk" if walk else "one"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def _of(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    """The packages of ``roots`` (top-level names, or ``nenjim.<layer>``) among ``modules``."""
    return sorted(
        root for root in roots if any(m == root or m.startswith(root + ".") for m in modules)
    )


def test_the_whole_domain_loads_no_driver_and_nothing_of_ours_outside_it() -> None:
    loaded = _loaded("nenjim.domain", walk=True)
    assert "nenjim.domain.persistence.repositories" in loaded  # the walk reached the submodules
    ours = ("nenjim.infrastructure", "nenjim.journal", "nenjim.projections", "nenjim.cli")
    assert _of(loaded, (*DRIVERS, *ours)) == []
    # and never a top-level package of an application's names
    assert _of(loaded, ("domain", "infrastructure", "journal", "projections")) == []
    assert "eventsourcing.persistence" not in loaded


def test_the_whole_admin_facade_loads_no_driver() -> None:
    # The command line imports every module of the facade; a store's driver loads only
    # when a store of its kind is opened.
    loaded = _loaded("nenjim.admin", walk=True)
    assert "nenjim.admin.stores" in loaded  # the walk reached the submodules
    assert _of(loaded, DRIVERS) == []


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_importing_a_public_package_loads_no_database_driver(name: str) -> None:
    loaded = _loaded(name)
    assert name in loaded
    assert _of(loaded, DRIVERS) == []


_OPEN = """
import json, sys
from nenjim.infrastructure.persistence import Persistence
from nenjim.journal.impl.ref.log import JournalLog
url = sys.argv[1]
Persistence.open(url).close()
JournalLog(url).close()
print(json.dumps(sorted(sys.modules)))
"""


def test_opening_memory_stores_loads_no_driver() -> None:
    assert _of(_loaded("memory:", code=_OPEN), DRIVERS) == []


def test_opening_sqlite_stores_loads_sqlite3_only(tmp_path: Path) -> None:
    loaded = _loaded(f"sqlite:///{tmp_path / 'state.db'}", code=_OPEN)
    assert _of(loaded, DRIVERS) == ["sqlite3"]
    assert "nenjim.infrastructure.sqlite.dialect" in loaded
    assert "nenjim.infrastructure.postgresql.dialect" not in loaded


def test_auditing_an_sqlite_store_loads_no_postgresql_module(tmp_path: Path) -> None:
    code = """
import json, sys
from nenjim.infrastructure.persistence import CATALOG, Persistence
from nenjim.infrastructure.storage.audit import audit_store
Persistence.open(sys.argv[1]).close()
assert audit_store(sys.argv[1], CATALOG).ok
print(json.dumps(sorted(sys.modules)))
"""
    loaded = _loaded(f"sqlite:///{tmp_path / 'state.db'}", code=code)
    assert "nenjim.infrastructure.sqlite.maintenance" in loaded
    assert _of(loaded, DRIVERS) == ["sqlite3"]
    assert "nenjim.infrastructure.postgresql.maintenance" not in loaded
