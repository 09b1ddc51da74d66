"""rmref.Phases takes Protocols (rmref.phases): a `--scheduler` plugin type-checks against them."""

from pathlib import Path

import pytest

from rmref import Phases

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''
from collections.abc import Mapping, Sequence
from rmref import Phases, SetAside
from rmref.model import CycleInput, Placement
from rmref.whatof import what_of

def first_fit(inp: CycleInput, counts: Mapping[int, int], *, prefer: Mapping[str, int] | None = None,
              stale_left: Mapping[str, int] | None = None) -> Sequence[Placement]:
    return what_of(inp, counts, prefer, stale_left)

def clear_none(inp: CycleInput, counts: Mapping[int, int], set_aside: Sequence[SetAside],
               placements: Sequence[Placement], /, *, stale_left: Mapping[str, int] | None = None,
               cleared_first: Sequence[str] = ()) -> Sequence[str]:
    return ()

PHASES = Phases(what_of=first_fit, clearing=clear_none)
'''

# a What Of that returns counts, not placements, and takes no `prefer`
BAD = '''
from collections.abc import Mapping
from rmref import Phases
from rmref.model import CycleInput

def wrong(inp: CycleInput, counts: Mapping[int, int]) -> dict[int, int]:
    return dict(counts)

PHASES = Phases(what_of=wrong)
'''


def _check(tmp_path: Path, source: str) -> tuple[str, int]:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(source)
    out, _err, status = mypy_api.run(["--strict", "--follow-imports=silent", "--no-incremental",
                                      "--cache-dir", str(tmp_path / ".mypy"), str(plugin)])
    return out, status


def test_rmrefs_own_phases_are_the_defaults():
    assert Phases().what_of.__module__ == "rmref.whatof" and Phases().defrag.__module__ == "rmref.defrag"


def test_a_plugin_of_the_right_shape_type_checks(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out, status = _check(tmp_path, GOOD)
    assert status == 0, out


def test_a_plugin_of_the_wrong_shape_does_not(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out, status = _check(tmp_path, BAD)
    assert status == 1 and "WhatOfPhase" in out, out
