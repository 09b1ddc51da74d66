"""What-if building blocks on hand-built inputs: settings, the changed input, scheduler loading,
decisions in the logged shapes, holdings, Jain's index, the JUnit document."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.apps.change import CLASS_ATTRIBUTES, PROPERTIES, Change, adapt, apply_sets, load_scheduler, parse_sets
from replay.apps.measures import holdings, jain
from replay.apps.measures import taken_shares
from replay.apps.whatif import WhatIfResult, _Side, _tally, decision_values, describe, junit_xml
from replay.model.bootstrap import Bootstrap
from replay.parsing.sources import InputError
from rmref import CapInput, Phases, schedule
from rmref.model import (
    ClassDef,
    Config,
    CycleDecisions,
    CycleInput,
    DefragAction,
    Eviction,
    Machine,
    Nodepool,
    Placement,
    Share,
    Work,
)

CLASSES = (ClassDef("normal", "FAIR_SHARE", 10, 100, "--default--", init_cap=2, expand_by_doubling=True,
                    prediction=True),
           ClassDef("fixed", "FIXED_SHARE", 5, 0, "--default--"))
BOOT = Bootstrap(Config(quantum_gb=4), CLASSES, (Nodepool("--default--", None),))


def _cap(current: int = 1) -> CapInput:
    return CapInput(remaining=100, threads=1, current=current, max_processes=2147483647, initialized=True,
                    projected=0, init_cap=2, expand_by_doubling=True, use_prediction=True)


def _input() -> CycleInput:
    machines = (Machine("n1", "--default--", 8, 32 * 1024), Machine("n2", "--default--", 8, 32 * 1024))
    work = (Work(1, "Job", "ann", "normal", 2, 7, _cap(2), submit_seq=1,
                 shares=(Share(1, 1, "n1", 2), Share(2, 1, "n1", 2))),
            Work(2, "Job", "bob", "normal", 1, 4, _cap(0), submit_seq=2))
    return CycleInput(1, BOOT.config, BOOT.classes, BOOT.nodepools, machines, work)


def test_sets_change_config_classes_and_users():
    boot = apply_sets(BOOT, parse_sets(["ducc.rm.share.quantum=8", "ducc.rm.fragmentation.threshold=3",
                                        "ducc.rm.defragmentation=false", "class.normal.weight=250",
                                        "class.normal.initialization-cap=5", "class.fixed.policy=reserve",
                                        "user.ann.max-allotment=64"]))
    assert (boot.config.quantum_gb, boot.config.fragmentation_threshold, boot.config.defragmentation) == (8, 3, False)
    assert boot.config.user_allotments == (("ann", 64),)
    assert (boot.classes[0].weight, boot.classes[0].init_cap, boot.classes[1].policy) == (250, 5, "RESERVE")
    assert BOOT.classes[0].weight == 100  # the original is untouched


@pytest.mark.parametrize("item", ["ducc.rm.share.quantum=0", "class.fixed.policy=ROUND_ROBIN",
                                  "ducc.rm.defragmentation=maybe", "user.ann.max-allotment=lots"])
def test_bad_values(item):
    with pytest.raises(InputError):
        apply_sets(BOOT, parse_sets([item]))


def test_a_quantum_change_recomputes_every_order():
    """7 GB at an 8 GB quantum is one quantum (rounded up), a 32 GB machine four (rounded down)."""
    inp = adapt(_input(), BOOT, apply_sets(BOOT, parse_sets(["ducc.rm.share.quantum=8"])))
    assert [w.order for w in inp.work] == [1, 1]
    assert {s.order for s in inp.work[0].shares} == {1}
    assert [m.order for m in inp.machines] == [4, 4]
    assert inp.config.quantum_gb == 8


def test_class_attributes_reach_the_cap_inputs():
    inp = adapt(_input(), BOOT, apply_sets(BOOT, parse_sets(["class.normal.expand-by-doubling=false",
                                                             "class.normal.initialization-cap=1"])))
    assert all(not w.cap_input.expand_by_doubling and w.cap_input.init_cap == 1 for w in inp.work)
    assert adapt(_input(), BOOT, BOOT) == _input()


def test_load_scheduler_forms(tmp_path):
    (tmp_path / "mine.py").write_text("from rmref import Phases\nP = Phases()\nD = {'what_of': len}\nX = 3\n"
                                      "BAD = {'where_of': len}\n")
    assert load_scheduler(f"{tmp_path}/mine.py:P") == Phases()
    assert load_scheduler(f"{tmp_path}/mine.py:D").what_of.fn is len  # type: ignore[attr-defined]
    for spec, needle in ((f"{tmp_path}/mine.py:X", "expected an rmref.Phases"), (f"{tmp_path}/mine.py:BAD", "where_of"),
                         (f"{tmp_path}/mine.py:Y", "has no"), ("nocolon", "MODULE:OBJECT"),
                         (f"{tmp_path}/absent.py:P", "no file")):
        with pytest.raises(InputError, match=needle):
            load_scheduler(spec)
    assert Change().identity and not Change(phases=Phases(what_of=len)).identity



def test_a_developer_phase_gets_only_the_keywords_it_declares_and_fails_in_one_line(tmp_path):
    """A What Of written before rmref handed `stale_left` still runs; one that raises is one line
    naming the phase and the cycle (DeveloperPhase)."""
    (tmp_path / "dev.py").write_text(
        "from rmref import Phases\nfrom rmref.whatof import what_of\n"
        "def plain(inp, counts):\n    return what_of(inp, counts)\n"
        "def broken(inp, counts, *, prefer=None):\n    raise KeyError('n9')\n"
        "P = Phases(what_of=plain)\nB = Phases(what_of=broken)\n")
    inp = _input()
    counts = schedule(inp).how_much.counts
    mine = load_scheduler(f"{tmp_path}/dev.py:P")
    assert mine.caps is Phases().caps  # rmref's own phases are left as they are
    assert mine.what_of(inp, counts, prefer={}, stale_left={"n1": 3}) == schedule(inp).decisions.placements
    said = rf"^cycle {inp.cycle}: the --scheduler what_of phase \(.*\) raised KeyError: 'n9'$"
    with pytest.raises(InputError, match=said):
        load_scheduler(f"{tmp_path}/dev.py:B").what_of(inp, counts, prefer=None, stale_left={})

def test_decisions_in_the_logged_shapes_and_holdings():
    inp = _input()
    result = schedule(inp)
    values = decision_values(result, {1: 0, 2: 0}, {})
    # caps: only for the jobs the RM logged one for; JSON text
    assert set(values["caps"]) == {1, 2} and all(json.loads(v) >= 0 for v in values["caps"].values())
    placed = {p.job_id: [] for p in result.decisions.placements}
    for p in result.decisions.placements:
        placed[p.job_id].append([p.host, p.order])
    assert {j: json.loads(v) for j, v in values["placements"].items()} == {j: sorted(v) for j, v in placed.items()}
    held = holdings(inp, result)
    want = {1: 4, 2: 0}
    for p in result.decisions.placements:
        want[p.job_id] += p.order
    assert {j: q for j, q in held.items() if q or j in want} == want


def test_holdings_take_evictions_and_ignore_pending_removals():
    inp = _input()
    pending = Work(3, "Job", "cat", "normal", 2, 8, _cap(1), shares=(Share(9, 3, "n2", 2, pending_removal=True),))
    inp = CycleInput(1, inp.config, inp.classes, inp.nodepools, inp.machines, (*inp.work, pending))

    decided = CycleDecisions(1, placements=(Placement(2, "n2", 1),), evictions=(Eviction(1, "n1", 2, 2, "shrink"),))
    result = SimpleNamespace(decisions=decided)  # holdings reads only the decisions
    assert holdings(inp, result) == {1: 2, 2: 1}


def test_jain():
    assert jain([3, 3, 3]) == 1.0
    assert jain([4, 0, 0, 0]) == 0.25
    assert jain([0, 0]) is None and jain([]) is None


def test_junit_document():
    ok, bad = WhatIfResult(Change(), cycles=[1, 2]), WhatIfResult(Change(), cycles=[1, 2, 3])
    bad.changes = [(2, 7, "counts", "3", "3", "5"), (3, 7, "counts", "3", "2", "4")]
    root = ET.fromstring(junit_xml([("a.log", ok, 0.5), ("b & c.log", bad, 1.0)], max_changed=1))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["a.log", "b & c.log"]
    assert [s.get("failures") for s in suites] == ["0", "1"] and root.get("failures") == "1"
    failure = suites[1].find("testcase/failure")
    assert "2 of 3 cycles" in failure.get("message")
    assert failure.text.splitlines() == [
        "cycle 2 job 7 counts: logged 3 processes -> what-if 5 processes",
        "cycle 3 job 7 counts: logged 3 processes (rmref unchanged: 2 processes) -> what-if 4 processes"]


def _decided(inp: CycleInput, *, evictions=(), defrag=()) -> _Side:
    """A cycle's side as `_tally` reads it: the shares held and taken by the decisions."""
    result = SimpleNamespace(decisions=CycleDecisions(1, evictions=tuple(evictions), defrag=tuple(defrag)))
    return _Side({}, holdings(inp, result), taken_shares(result))


def test_a_share_taken_in_several_cycles_is_one_preemption():
    """A removal stays listed until the Orchestrator confirms it, and an open-loop replay takes the
    same share again in each cycle that starts from the recorded state: one share, counted once.
    A node purge is no preemption; a share taken by both phases is one preemption."""
    inp = _input()
    shrink = Eviction(1, "n1", 2, 2, "shrink")
    purge = Eviction(1, "n1", 1, 2, "purge")
    took = DefragAction("evict", 2, 1, "n1", 1, 2)
    # the RM logged share 2 taken by shrink in cycles 1 and 2 (listed twice), share 1 by defrag in cycle 2
    logged = SimpleNamespace(evictions={1: {1: [("n1", 2), ("n1", None)]}, 2: {1: [("n1", 2)]}},
                             defrag={2: {1: [("n1", 1)]}})
    result = WhatIfResult(Change(phases=Phases(what_of=len)))
    for cycle in (1, 2):
        inp = CycleInput(cycle, inp.config, inp.classes, inp.nodepools, inp.machines, inp.work)
        base = _decided(inp, evictions=[shrink, purge])
        what = _decided(inp, evictions=[shrink, purge], defrag=[took] if cycle == 2 else [])
        _tally(result, {w.job_id: w.user for w in inp.work}, logged, cycle, {}, base, what)
    rep = result.report()
    assert rep["evictions"] == {"logged": 1, "baseline": 1, "whatif": 1}
    assert rep["defrag_takes"] == {"logged": 1, "baseline": 0, "whatif": 1}
    assert rep["preemptions"] == {"logged": 2, "baseline": 1, "whatif": 2}


@pytest.mark.parametrize("kind, value, words", [
    ("caps", "4", "cap 4"),
    ("caps", None, "no cap"),
    ("counts", "1", "1 process"),
    ("counts", "12", "12 processes"),
    ("needy", "2", "needs 2 processes"),
    ("placements", '[["n1",2]]', "1 process of order 2 on n1"),
    ("placements", '[["n1",2],["n1",2],["n2",2]]', "3 processes of order 2: 2 on n1, 1 on n2"),
    ("placements", '[["n1",1],["n1",2]]', "2 processes: 1 on n1 (order 1), 1 on n1 (order 2)"),
    ("placements", None, "nothing placed"),
    ("evictions", '[["n1",7],["n1",9],["n2",3]]', "shares 7, 9 on n1; share 3 on n2"),
    ("evictions", '[["n3",null]]', "every share on n3 (node purged)"),
    ("defrag", None, "nothing taken"),
])
def test_decisions_in_words(kind, value, words):
    assert describe(kind, value) == words


_KEYS = st.sampled_from([*PROPERTIES, *(f"class.normal.{a}" for a in CLASS_ATTRIBUTES),
                         *(f"class.fixed.{a}" for a in CLASS_ATTRIBUTES), "user.ann.max-allotment"])


@given(key=_KEYS, value=st.one_of(st.integers(-3, 3).map(str), st.sampled_from(["true", "reserve", "--default--"]),
                                  st.text(min_size=1, max_size=6)))
def test_any_setting_applies_or_is_a_one_line_error_naming_it(key, value):
    """Whatever the value, --set either applies or raises InputError naming the setting; a value
    it applies never leaves a fair-share class without weight (rmref would divide by zero)."""
    try:
        boot = apply_sets(BOOT, parse_sets([f"{key}={value}"]))
    except InputError as exc:
        text = str(exc)
        assert text.startswith("--set ") and key.rpartition(".")[0] in text and "\n" not in text
        return
    assert all(c.weight >= 1 for c in boot.classes if c.policy == "FAIR_SHARE")
