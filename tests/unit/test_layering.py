"""The direction of imports: tui -> replay -> rmref; rmref is pure (no I/O, no replay, no tui)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED_IN_RMREF = {"__future__", "dataclasses", "numpy", "rmref", "typing", "collections", "functools", "math",
                    "itertools", "types"}


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
    """Each module of one replay layer -> the replay layers it imports (parsing, model, apps, javarm, cli)."""
    found = {}
    for path in sorted((ROOT / "replay" / layer).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("replay."):
                names.add(node.module.split(".")[1])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_replay_layers_import_downwards():
    """cli -> javarm -> apps -> model -> parsing: a lower layer never reaches up."""
    above = {"parsing": {"model", "apps", "javarm", "cli"}, "model": {"apps", "javarm", "cli"},
             "apps": {"javarm", "cli"}, "javarm": {"cli"}}
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


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(*packages: str) -> dict[str, set[str]]:
    """Each module of the packages -> the project modules it imports (`from a.b import c` names
    module a.b.c when c is a module, else a.b)."""
    paths = [p for package in packages for p in sorted((ROOT / package).rglob("*.py"))]
    known = {_module_of(p) for package in ("rmref", "replay", "tui") for p in ROOT.joinpath(package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in paths:
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in known:
                subs = {f"{node.module}.{a.name}" for a in node.names} & known
                out |= subs or {node.module}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names} & known
        graph[_module_of(path)] = out
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle among the graph's modules ([] when there is none)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(mod: str) -> list[str]:
        state[mod] = 1
        path.append(mod)
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep in graph and dep not in state and (found := visit(dep)):
                return found
        state[mod] = 2
        path.pop()
        return []

    for mod in sorted(graph):
        if mod not in state and (found := visit(mod)):
            return found
    return []


def test_no_import_circles_anywhere():
    """No two modules import each other, directly or around a circle (an import inside a function
    counts: it only hides the circle)."""
    graph = _module_graph("rmref", "replay", "tui")
    assert _circle(graph) == []


def test_the_circle_finder_finds_one():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


# the cycle rebuild, bottom up: each floor imports nothing from a floor above it
REBUILD_FLOORS = (
    ("replay.model.bootstrap", "replay.model.needy", "replay.model.submission", "replay.model.published",
     "replay.model.clock", "replay.model.orders", "replay.model.pools"),
    ("replay.model.machines",),  # the package: inventory, evidence, counts, solver, liveness
    ("replay.model.assembly",),
    ("replay.model.handover",),  # settles the start's handovers: solves the machines by a callable it is given
    ("replay.model.held_inputs",),  # the inputs the threshold inference assembled, held for the replay after it
    ("replay.model.threshold",),  # settles the start's threshold: reads the start by its shape alone
    ("replay.model.start",),
    ("replay.model.nodes",),
    ("replay.model.configdir", "replay.model.conflicts"),  # --config against the log: a host's pool as PoolOf puts it
)


def test_the_cycle_rebuild_imports_downwards():
    graph = _module_graph("replay/model")

    def floor(mod: str) -> int | None:
        return next((i for i, names in enumerate(REBUILD_FLOORS)
                     if any(mod == n or mod.startswith(n + ".") for n in names)), None)

    for mod, deps in graph.items():
        here = floor(mod)
        for dep in deps:
            there = floor(dep)
            if there is not None:
                assert here is not None and there <= here, (mod, dep)


def test_rmref_phase_state_modules_do_not_import_their_phase():
    graph = _module_graph("rmref")
    below = {"rmref.defrag_state": {"rmref.defrag", "rmref.take_from_the_rich"},
             "rmref.take_from_the_rich": {"rmref.defrag"},
             "rmref.howmuch_state": {"rmref.howmuch", "rmref.howmuch_fixed"},
             "rmref.howmuch_fixed": {"rmref.howmuch"},
             "rmref.whatof": {"rmref.node_ips", "rmref.node_order"}}
    for mod, above in below.items():
        assert not graph[mod] & above, (mod, graph[mod] & above)


def test_how_much_runs_no_what_of():
    """setupPreemptions' choice is the clearing step's (rmref.clearing), after What Of: How Much
    imports neither, so a developer swapping What Of or clearing finds none of it inside How Much."""
    graph = _module_graph("rmref")
    for mod in ("rmref.howmuch", "rmref.howmuch_fixed", "rmref.howmuch_state"):
        assert not graph[mod] & {"rmref.whatof", "rmref.clearing"}, (mod, graph[mod])
