"""The defragmentation phase on every fixture cycle: rmref's needy jobs, takeFromTheRich calls and
cleared shares equal truth's `defrag` record, cycle by cycle.

Inputs: truth's cycle-start state (tests/truth_inputs.py), How Much's count (`nshares_given`) and
pure fair share (`pure_fair_share`) per job from truth, and the state What Of and the shrink
evictions left, which is what defragmentation starts from. truth records the state *after*
defragmentation, so that state is rebuilt by undoing defragmentation's own actions:
  * placements: the shares truth lists as added, except that a share defragmentation handed over
    (`reassign_pending`) was placed for its donor, plus the shares it dropped (`cancel_pending`),
    which truth no longer lists; in share-id order, the order the RM numbered them;
  * evictions: truth's new Removals (listed now, not in the previous schedule) less the shares
    defragmentation evicted itself.
Each share's initialization and investment (which order the shares of one machine are cleared
in, and whether its job may donate) come with the shared input, from the log rebuild: the
published `Existing` list is sorted by the same investment comparator, so a running share's
position in it stands in for its investment.

The RM keeps jobs in HashMaps keyed by random UUIDs, so the order it serves needy jobs in cannot be
computed; it is read from the INFO log (`replay.model.logged.defrag_job_order`). Users' wealth is carried
from cycle to cycle as the RM keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import polars as pl
import pytest

from replay.model.logged import defrag_job_order
from rmref.defrag import Defrag, TakeFromTheRich, defragment
from rmref.defrag_state import build_state
from rmref.model import CycleInput, Eviction, Placement
from tests.helpers import SCENARIOS, parsed
from tests.truth_inputs import TruthCycle, truth_cycles

Action = tuple[str, int, int, str, int, int]  # action, needy job, donor job, host, share id, order


# ---------------------------------------------------------------------------------------------
# Inputs


def before_defrag(tc: TruthCycle) -> tuple[list[Placement], list[Eviction]]:
    """What What Of placed and the shrink phase evicted: truth's additions and new removals, defrag undone."""
    rec = tc.record
    actions = rec["defrag"]["actions"]
    handed = {(a["needy_job"], a["share"]): a["donor_job"] for a in actions if a["action"] == "reassign_pending"}
    placed = [(s["id"], handed.get((j["id"], s["id"]), j["id"]), s["host"], s["order"])
              for j in rec["jobs"] for s in j["shares"] if s["id"] in set(j["added"])]
    placed += [(a["share"], a["donor_job"], a["host"], a["order"]) for a in actions if a["action"] == "cancel_pending"]
    # removals already listed last cycle are the input's shares pending removal; defrag's own are undone
    old = {(s.job_id, s.share_id) for w in tc.input.work for s in w.shares if s.pending_removal}
    old |= {(a["donor_job"], a["share"]) for a in actions if a["action"] == "evict"}
    evictions = [Eviction(j["id"], s["host"], s["id"], s["order"], "shrink")
                 for j in rec["jobs"] for s in j["shares"]
                 if s["id"] in set(j["preempted"]) and (j["id"], s["id"]) not in old]
    # in share-id order: the order the RM numbered (placed) them
    return [Placement(job, host, order) for _, job, host, order in sorted(placed)], evictions


def without_investment(inp: CycleInput) -> CycleInput:
    """The input with every share's investment (published-list rank) dropped, as if the log were not read."""
    return replace(inp, work=tuple(replace(w, shares=tuple(replace(s, investment=0) for s in w.shares))
                                   for w in inp.work))


# ---------------------------------------------------------------------------------------------
# Comparison


def truth_defrag(rec: dict) -> tuple[dict[int, int], list[TakeFromTheRich], list[Action]]:
    """truth's defrag record; a new process has no share id in rmref (0)."""
    d = rec["defrag"]
    actions = [(a["action"], a["needy_job"], a["donor_job"], a["host"], a["share"] if a["action"] == "evict" else 0,
                a["order"]) for a in d["actions"]]
    return ({int(k): v for k, v in d["needy"].items()},
            [TakeFromTheRich(t["needy_job"], t["needed"], t["given"]) for t in d["take_from_the_rich"]], actions)


def ours(d: Defrag) -> tuple[dict[int, int], list[TakeFromTheRich], list[Action]]:
    """rmref's result in the same shape."""
    return (d.needy, list(d.take_from_the_rich),
            [(a.action, a.needy_job, a.donor_job, a.host, a.share_id, a.order) for a in d.actions])


def run(name: str, *, with_order: bool = True, with_wealth: bool = True,
        change: Callable[[CycleInput], CycleInput] = lambda inp: inp):
    """Per cycle: (cycle, truth record, rmref's Defrag); `change` alters each cycle's input."""
    logged = defrag_job_order(parsed(name).tables["defrag"]) if with_order else {}
    orders = {cycle: order for cycle, (order, _shown) in logged.items()}
    out, wealth = [], None
    for tc in truth_cycles(name):
        rec = tc.record
        placements, evictions = before_defrag(tc)
        d = defragment(change(tc.input), {j["id"]: j["nshares_given"] for j in rec["jobs"]}, placements, evictions,
                       pure_fair_share={j["id"]: j["pure_fair_share"] for j in rec["jobs"]},
                       job_order=orders.get(rec["cycle"], ()), wealth=wealth)
        wealth = d.wealth if with_wealth else None
        out.append((rec["cycle"], rec, d))
    return out


def summary(name: str, **kw) -> tuple[int, int, int, int]:
    """(cycles matching, cycles, active cycles matching, active cycles)."""
    rows = run(name, **kw)
    good = [ours(d) == truth_defrag(rec) for _, rec, d in rows]
    active = [bool(rec["defrag"]["needy"] or rec["defrag"]["actions"] or d.needy or d.actions) for _, rec, d in rows]
    return sum(good), len(rows), sum(g and a for g, a in zip(good, active)), sum(active)


# ---------------------------------------------------------------------------------------------
# Tests

# Fixtures with defragmentation at work, and how many cycles of each do something (truth): the
# test fails if the fixture stops exercising the phase.
ACTIVE = {"b_classes": 7, "c_nodepools": 42, "d_fragmentation": 7, "e_initcap_prediction": 1,
          "g_reservations_services": 1, "h_mega15": 17}
FIXTURES = [n for n in SCENARIOS if n != "i_mega24"]  # i_mega24 is the 2,500-cycle speed fixture


@pytest.mark.parametrize("name", FIXTURES)
def test_defrag_equals_truth_every_cycle(name):
    """needy, takeFromTheRich calls and the cleared shares (in order) equal truth in every cycle."""
    rows = run(name)
    active = 0
    for cycle, rec, d in rows:
        assert ours(d) == truth_defrag(rec), cycle
        active += bool(rec["defrag"]["needy"])
    assert active == ACTIVE.get(name, 0)


# Cycles rmref cannot reproduce, with the cause (checked below, so the list cannot go stale).
KNOWN = {
    ("i_mega24", 1473): "job HashMap order: jobs 36 (class low), 6 and 58 (normal), all order 37, are "
                        "potentially needy with room for one such process; the RM met 36 first (covered, "
                        "so it keeps the room), 6 then takes it. The log lists each class's jobs "
                        "separately, so the order across classes is unknown and rmref serves 6 first",
}


@pytest.mark.slow
def test_defrag_equals_truth_i_mega24():
    """The 2,500-cycle fixture (722 cycles with needy jobs, including handed-over new processes)."""
    rows = run("i_mega24")
    assert sum(bool(rec["defrag"]["needy"]) for _, rec, _ in rows) == 722
    assert any(a["action"] == "reassign_pending" for _, rec, _ in rows for a in rec["defrag"]["actions"])
    for cycle, rec, d in rows:
        if ("i_mega24", cycle) in KNOWN:
            assert ours(d) != truth_defrag(rec), f"cycle {cycle} now agrees: drop it from KNOWN"
            assert set(truth_defrag(rec)[0]) < set(d.needy) and {6, 58, 36} <= set(d.carried)
            continue
        assert ours(d) == truth_defrag(rec), cycle
        assert sorted(d.carried) == sorted(j["id"] for j in rec["jobs"] if j["in_needy_list"]), cycle


@pytest.mark.parametrize("name", FIXTURES)
def test_needy_list_carried_to_the_next_cycle(name):
    """The needy list What Of serves first next cycle is truth's `in_needy_list` jobs."""
    for cycle, rec, d in run(name):
        assert sorted(d.carried) == sorted(j["id"] for j in rec["jobs"] if j["in_needy_list"]), cycle


@pytest.mark.parametrize("name", FIXTURES)
def test_virtual_free_space_is_what_of_s(name):
    """The rebuilt pre-defrag state: per machine, What Of's free space equals truth's `virtual_free`."""
    for tc in truth_cycles(name):
        rec = tc.record
        state = build_state(tc.input, {}, *before_defrag(tc), {}, (), None)  # the state defragmentation starts from
        for n in rec["nodes"]:
            if n["online"] and not n["blacklisted"]:
                assert state.nodes[n["name"]].virtual == n["virtual_free"], (rec["cycle"], n["name"])


@pytest.mark.parametrize("name", [n for n in FIXTURES if n in ACTIVE])
def test_logged_defrag_lines_agree(name):
    """INFO log: the ACTUALLY NEEDY rows, and a satisfied/failed line for each needy job served."""
    logged = parsed(name).tables["defrag"]
    needy = {(c, j): n for c, j, n in logged.filter(pl.col("kind") == "needy")
             .select("cycle", "job_id", "needed").iter_rows()}
    rows = run(name)
    assert needy == {(c, j): n for c, _, d in rows for j, n in d.needy.items()}
    done = {(c, j) for c, j in logged.filter(pl.col("kind").is_in(["satisfied", "failed"]))
            .select("cycle", "job_id").iter_rows()}
    satisfied = {(c, t.needy_job) for c, _, d in rows for t in d.take_from_the_rich}
    assert done == satisfied


_CLEAR_KIND = {"Donate": "evict", "Canceling expansion share": "cancel_pending"}


@pytest.mark.parametrize("name", [n for n in FIXTURES if n in ACTIVE])
def test_cleared_shares_equal_the_debug_clearshare_lines(name):
    """DEBUG logs print every clearShare (Donate / Canceling expansion / Reassign): same shares, same order."""
    logged = parsed(name, "rm-debug.log").tables["defrag"].filter(pl.col("kind") == "clear_share") \
        .with_row_index("row").sort("row")
    by_cycle: dict[int, list[tuple]] = {}
    for c, needy, donor, host, detail in logged.select("cycle", "job_id", "donor_job", "host", "detail").iter_rows():
        by_cycle.setdefault(c, []).append((_CLEAR_KIND.get(detail, "reassign_pending"), needy, donor, host))
    assert by_cycle
    for cycle, _, d in run(name):
        assert [(a.action, a.needy_job, a.donor_job, a.host) for a in d.actions] == by_cycle.get(cycle, []), cycle


def test_what_the_log_supplies_matters():
    """The log-derived inputs are needed: without share investment, shares are cleared in the wrong order."""
    assert summary("c_nodepools", change=without_investment)[0] < 90
    assert summary("h_mega15", with_order=False)[0] < 123
