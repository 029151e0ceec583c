"""A store's backend is chosen in one place: the registry of store kinds.

Code that compares a store kind to a literal (``location.kind == "sqlite"``)
chooses a backend by itself; only the registry
(``nenjim/infrastructure/store/kinds.py``) and the kind packages may.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from nenjim.infrastructure.store.kinds import KINDS, store_kinds

PROJECT = Path(__file__).resolve().parents[2]
SOURCES = ("domain", "infrastructure", "journal", "projections", "nenjim")
ALLOWED = (
    Path("infrastructure/store/kinds.py"),
    *(Path(*package.split(".")[1:]) for package in KINDS),
)


def _choices(tree: ast.AST, names: set[str], scope: str = "") -> Iterator[tuple[str, int]]:
    """``(function, line)`` of every comparison of a value to a kind's name in ``tree``."""
    for node in ast.iter_child_nodes(tree):
        inner = scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = f"{scope}.{node.name}" if scope else node.name
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            literals = [
                item
                for operand in operands
                for item in (
                    operand.elts
                    if isinstance(operand, ast.Tuple | ast.List | ast.Set)
                    else [operand]
                )
            ]
            if any(isinstance(item, ast.Constant) and item.value in names for item in literals):
                yield scope, node.lineno
        yield from _choices(node, names, inner)


def test_no_code_outside_the_registry_and_the_kind_packages_chooses_a_store_kind() -> None:
    names = {kind.name for kind in store_kinds()}
    found = []
    for source in SOURCES:
        for path in sorted((PROJECT / source).rglob("*.py")):
            relative = path.relative_to(PROJECT)
            if any(relative.is_relative_to(a) for a in ALLOWED):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [
                f"{relative}:{line} ({function or 'module'})"
                for function, line in _choices(tree, names)
            ]
    assert found == []


def test_the_guard_sees_a_comparison_of_a_kind_to_a_literal() -> None:
    tree = ast.parse('def f(location):\n    return location.kind in ("sqlite", "x")\n')
    assert list(_choices(tree, {"sqlite"})) == [("f", 2)]


def test_the_registry_and_the_stores_without_a_driver_of_their_own_load_no_psycopg(
    tmp_path: Path,
) -> None:
    code = (
        "import sys\n"
        "from nenjim.infrastructure.store.kinds import store_kinds\n"
        "from nenjim.infrastructure.storage import open_backend\n"
        "from nenjim.infrastructure.storage.testing.resources import FIXTURE_RESOURCES\n"
        "store_kinds()  # every kind package, imported\n"
        "for url in ('memory:', sys.argv[1]):\n"
        "    open_backend(url, FIXTURE_RESOURCES).close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('psycopg')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, f"sqlite://{tmp_path / 'store.db'}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[]\n"
