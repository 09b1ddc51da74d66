"""The direction of imports: tui -> replay -> rmref; rmref is pure (no I/O, no replay, no tui)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_IN_RMREF = {"__future__", "dataclasses", "numpy", "rmref", "typing", "collections", "functools", "math",
                    "itertools"}


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


def _replay_imports(layer: str) -> dict[str, set[str]]:
    """Each module of one replay layer -> the replay layers it imports (parsing, model, apps, cli)."""
    found = {}
    for path in sorted((ROOT / "replay" / layer).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("replay."):
                names.add(node.module.split(".")[1])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_replay_layers_import_downwards():
    """apps -> model -> parsing: a lower layer never reaches up."""
    above = {"parsing": {"model", "apps", "cli"}, "model": {"apps", "cli"}, "apps": {"cli"}}
    for layer, forbidden in above.items():
        for name, layers in _replay_imports(layer).items():
            assert not layers & forbidden, (name, layers & forbidden)


def test_the_cli_loads_no_textual_for_replay_commands():
    """`rmreplay parse` (and every command but `tui`) never imports Textual."""
    import subprocess
    import sys

    code = ("import sys; from replay.cli import main; main(['parse', 'fixtures/a_tiny/rm.log']); "
            "sys.exit(any(m.startswith('textual') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == 0
