"""The direction of imports: tui -> replay -> rmref; rmref is pure (no I/O, no replay, no tui)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_IN_RMREF = {"__future__", "dataclasses", "numpy", "rmref", "typing", "collections", "functools", "math"}


def _imports(package: str) -> dict[str, set[str]]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_rmref_imports_only_pure_modules():
    for name, mods in _imports("rmref").items():
        assert mods <= ALLOWED_IN_RMREF, (name, mods - ALLOWED_IN_RMREF)


def test_replay_does_not_import_tui():
    for name, mods in _imports("replay").items():
        assert "tui" not in mods, name
