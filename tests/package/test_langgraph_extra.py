"""The ``langgraph`` extra: ``nenjim.langgraph`` needs it, nothing else does.

Fresh interpreters: one where LangGraph cannot be imported (as without the
extra), one where psycopg cannot (as without the ``postgres`` extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from nenjim.langgraph import NenjimSaver

PROJECT = Path(__file__).resolve().parents[2]
POSTGRES_MODULES = {
    "psycopg",
    "psycopg_pool",
    "eventsourcing.postgres",
    "nenjim.infrastructure.postgresql.storage",
}


def _blocking(*roots: str) -> str:
    """Code that makes the top-level packages ``roots`` unimportable."""
    return f"""
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {roots!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=False
    )


def test_the_extra_pins_langgraph_and_its_checkpoint_package_with_bounds() -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["langgraph"] == [
        "langgraph-checkpoint>=4.3,<5",
        "langgraph>=1.2,<2",
    ]
    assert not any("langgraph" in requirement for requirement in project["dependencies"])


def test_nenjim_works_without_langgraph_and_says_how_to_get_the_saver(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'state.db'}"
    with NenjimSaver.from_conn_string(store) as saver:
        checkpoint = {"v": 4, "id": "1", "ts": "t", "channel_values": {"a": 1}}
        saver.put({"configurable": {"thread_id": "t"}}, checkpoint, {}, {"a": 1})  # type: ignore[typeddict-item]
    code = (
        _blocking("langgraph")
        + """
import json
import nenjim.infrastructure.langgraph, nenjim.infrastructure.langgraph.presence
from nenjim.cli import main
assert main(["storage", "audit", "--store", sys.argv[1]]) == 0
try:
    import nenjim.langgraph
except ModuleNotFoundError as error:
    print(json.dumps(str(error)))
"""
    )
    result = _python(code, store)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("audit OK")
    assert json.loads(result.stdout.splitlines()[-1]) == (
        "nenjim.langgraph needs LangGraph's checkpoint package (langgraph is missing): "
        "pip install 'nenjim[langgraph]'"
    )


def test_memory_and_sqlite_savers_never_import_the_postgresql_driver(tmp_path: Path) -> None:
    code = (
        _blocking("psycopg", "psycopg_pool", "psycopg_binary")
        + """
import json
from nenjim.langgraph import AsyncNenjimSaver, NenjimSaver
for url in ("memory:", sys.argv[1]):
    with NenjimSaver.from_conn_string(url) as saver:
        checkpoint = {"v": 4, "id": "1", "ts": "t", "channel_values": {"a": "x" * 1000}}
        saver.put({"configurable": {"thread_id": "t"}}, checkpoint, {}, {"a": 1})
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
print(json.dumps(sorted(sys.modules)))
"""
    )
    result = _python(code, f"sqlite://{tmp_path / 'state.db'}")
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert "nenjim.infrastructure.sqlite.storage" in loaded
    assert loaded.isdisjoint(POSTGRES_MODULES), loaded & POSTGRES_MODULES
