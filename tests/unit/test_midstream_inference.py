"""The mid-stream inference on hand-worked inputs: settings read off log rows, the free space the
RM's counters show, and the node-count solver (Hypothesis: the true orders are always a solution)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from replay.model.machines import counts, evidence, solver
from replay.model.machines.inventory import Host
from replay.model.inputs import job_descriptions
from replay.model.needy import needy_expanded
from replay.model.settings import (
    DEFAULT,
    INFERRED,
    choose_cap_settings,
    infer_quantum,
    threshold_reading,
)
from replay.parsing.tables import SCHEMAS
from rmref import CapInput
from rmref.model import FIXED_SHARE, RESERVE, ClassDef, Nodepool


def _empty(name: str, **columns) -> pl.DataFrame:
    frame = pl.DataFrame(schema=SCHEMAS[name])
    if not columns:
        return frame
    n = len(next(iter(columns.values())))
    rows = [{k: v[i] for k, v in columns.items()} for i in range(n)]
    return pl.DataFrame([{k: r.get(k) for k in SCHEMAS[name]} for r in rows], schema=SCHEMAS[name])


def _tables(**frames) -> dict[str, pl.DataFrame]:
    return {name: frames.get(name, _empty(name))
            for name in ("jobs", "placements", "occupancy", "nodes", "defrag", "schedule", "counts", "job_caps")}


def test_quantum_from_memory_and_order():
    # 15 GB is order 4: 3.75 <= q < 5; 8 GB is order 2: 4 <= q < 8; so q = 4
    tables = _tables(jobs=_empty("jobs", job_id=[1, 2], memory_gb=[15, 8], order=[4, 2]))
    a = infer_quantum(tables)
    assert (a.value, a.source) == ("4", INFERRED) and "fits 4 only" in a.evidence


def test_quantum_the_published_schedule_pins():
    # an order-1 job of 4 GB allows any q >= 4; the schedule publishes it at 6 GB a process, which
    # the RM prints as quantum x order (RmJobState's memory): q = 6
    tables = _tables(jobs=_empty("jobs", job_id=[1], memory_gb=[4], order=[1], **{"class": ["a"]}),
                     schedule=_empty("schedule", job_id=[1], memory_gb=[6]))
    a = infer_quantum(tables)
    assert (a.value, a.source) == ("6", INFERRED) and "job 1: 6 GB at order 1" in a.evidence
    assert infer_quantum(tables, {"b"}).value == "1"  # another pool tree's job: no evidence, the default


def test_quantum_a_machine_line_narrows():
    # order-1 jobs of 4 GB allow any q >= 4; a 48 GB (49152 MB) machine of order 12: 48/13 < q <= 4
    tables = _tables(jobs=_empty("jobs", job_id=[1], memory_gb=[4], order=[1]),
                     placements=_empty("placements", memory_mb=[49152], m_order=[12]))
    assert infer_quantum(tables).value == "4"


def test_quantum_without_evidence_is_the_documented_default():
    a = infer_quantum(_tables())
    assert (a.value, a.source) == ("1", DEFAULT)


FAIR = [ClassDef("normal", "FAIR_SHARE", 10, 100, "--default--")]


def test_threshold_a_capped_need_pins_it():
    # a job counted 7 holding 1 needs 6, but detectFragmentation caps the need at the threshold: 2
    defrag = _empty("defrag", kind=["analysis"], cycle=[3], job_id=[9], **{"class": ["normal"]}, pure_fs=[10],
                    nsh=[1], counted=[7], needed=[2])
    a = threshold_reading({"defrag": defrag}, FAIR)[0]
    assert (a.value, a.source) == ("2", INFERRED)


def test_threshold_bounds_without_a_cap():
    # needy for 1 holding 3 (threshold > 3); holding 5 under its fair share and not needy (threshold <= 5)
    defrag = _empty("defrag", kind=["analysis", "analysis"], cycle=[3, 4], job_id=[9, 9],
                    **{"class": ["normal", "normal"]}, pure_fs=[10, 10], nsh=[3, 5], counted=[4, 7], needed=[1, 0])
    a = threshold_reading({"defrag": defrag}, FAIR)[0]
    assert a.value == "5" and "at least 4" in a.evidence and "at most 5" in a.evidence


def test_threshold_a_donor_below_it_states_it():
    # at DEBUG doFinalEvictions prints the threshold a donor falls short of ("threshold[ 5 ]"),
    # which outweighs the detectFragmentation bounds (here: at least 4, default 8 fits)
    defrag = _empty("defrag", kind=["analysis", "below_threshold"], cycle=[3, 3], job_id=[9, 9],
                    **{"class": ["normal", None]}, pure_fs=[10, None], nsh=[3, None], counted=[4, None],
                    needed=[1, None], donor_job=[None, 6], shares=[None, 3], count=[None, 5])
    a = threshold_reading({"defrag": defrag}, FAIR)[0]
    assert (a.value, a.source) == ("5", INFERRED) and "doFinalEvictions" in a.evidence


def test_threshold_a_rich_donor_bounds_it():
    # needy holding nothing (threshold >= 1), and a rich donor with 1 process (threshold <= 1):
    # without the donor the documented default 8 would stand
    analysis = dict(kind=["analysis"], cycle=[3], job_id=[10], **{"class": ["normal"]}, pure_fs=[3], nsh=[0],
                    counted=[1], needed=[1])
    alone = threshold_reading({"defrag": _empty("defrag", **analysis)}, FAIR)[0]
    assert (alone.value, alone.source) == ("8", DEFAULT)
    donor = {k: [*v, 3 if k == "cycle" else None] for k, v in analysis.items() if k != "kind"}
    defrag = _empty("defrag", kind=["analysis", "donor_candidate"], **donor, donor_job=[None, 8], shares=[None, 1])
    a = threshold_reading({"defrag": defrag}, FAIR)[0]
    assert (a.value, a.source) == ("1", INFERRED) and "rich donor with 1 processes" in a.evidence


def test_threshold_zero_stays_open_until_a_fair_share_job_is_needy():
    # a rich donor with 1 process bounds it at 1, and nothing bounds it below: DUCC takes 0 too (no
    # fair-share job is then ever needy), so 0 and 1 stay open; a job found needy holding nothing
    # (threshold >= 1) pins 1
    donor = _empty("defrag", kind=["donor_candidate"], cycle=[3], donor_job=[8], shares=[1])
    a, bounds = threshold_reading({"defrag": donor}, FAIR)
    assert (a.value, bounds) == ("1", (0, 1))
    needy = _empty("defrag", kind=["analysis", "donor_candidate"], cycle=[3, 3], job_id=[10, None],
                   **{"class": ["normal", None]}, pure_fs=[3, None], nsh=[0, None], counted=[1, None],
                   needed=[1, None], donor_job=[None, 8], shares=[None, 1])
    a, bounds = threshold_reading({"defrag": needy}, FAIR)
    assert (a.value, a.source, bounds) == ("1", INFERRED, None)


def _cap(**kw) -> CapInput:
    base = dict(remaining=50, threads=1, current=0, max_processes=100, initialized=False, projected=0,
                init_cap=0, expand_by_doubling=False, use_prediction=False, completed=False, refused=False)
    return CapInput(**{**base, **kw})


def test_cap_settings_from_the_logged_caps():
    samples = [(_cap(), 3), (_cap(), 3),  # waiting to initialize, capped at 3: the initialization cap
               (_cap(initialized=True, current=4), 8)]  # initialized, 4 held, cap 8: doubling
    chosen, assumed = choose_cap_settings(samples)
    assert (chosen.init_cap, chosen.expand_by_doubling) == (3, True)
    by = {a.setting: a for a in assumed}
    assert by["ducc.rm.initialization.cap"].source == INFERRED and by["ducc.rm.initialization.cap"].value == "3"


def test_a_class_setting_its_own_doubling_takes_the_shared_initialization_cap():
    # without ducc.properties, a class that sets only its doubling takes ducc.rm.initialization.cap
    # like the classes that set none: one initialization cap (4) fits both a job still waiting (cap
    # 4) and the class's job pushed out of all its processes, which restarts doubling from it (cap
    # 4, base 50); its doubling, its own, is not replaced
    samples = [(_cap(), 4), (_cap(initialized=True, expand_by_doubling=True), 4)]
    own = [frozenset(), frozenset({"expand_by_doubling"})]
    chosen, assumed = choose_cap_settings(samples, own=own)
    assert chosen.init_cap == 4
    by = {a.setting: a for a in assumed}
    assert (by["ducc.rm.initialization.cap"].value, by["ducc.rm.initialization.cap"].source) == ("4", INFERRED)
    assert "2 of the 2" in by["ducc.rm.initialization.cap"].evidence


def test_a_job_pushed_out_of_every_process_shows_the_initialization_cap():
    # initialized, holding nothing, base 50: doubling restarts it from the initialization cap (4);
    # no job still initializing shows it
    chosen, _ = choose_cap_settings([(_cap(initialized=True), 4)] * 2)
    assert (chosen.init_cap, chosen.expand_by_doubling) == (4, True)


def test_cap_settings_doubling_and_prediction_off_together():
    # the caps RM logged (50, 3, 4) fit doubling and prediction both off for 3 of 5 (the first, held
    # at 4 and projected at 6, is capped at neither 8 nor 6); both on fit 2, and either alone 1: one
    # setting at a time from the defaults would keep both on (oracle seed 11313, a cut of scenario 9)
    samples = [(_cap(initialized=True, current=4, projected=6), 50)] * 3 + [
        (_cap(initialized=True, current=2, projected=3), 3), (_cap(initialized=True, current=2, projected=10), 4)]
    chosen, assumed = choose_cap_settings(samples)
    assert (chosen.expand_by_doubling, chosen.prediction) == (False, False)
    by = {a.setting: a for a in assumed}
    assert by["ducc.rm.expand.by.doubling"].value == by["ducc.rm.prediction"].value == "false"
    assert "3 of the 5" in by["ducc.rm.prediction"].evidence


def test_a_class_block_cut_short_keeps_what_it_read_and_names_the_class():
    # the block read its doubling line (false) and lost the other two: the doubling the caps would
    # choose (a cap of 8 on 4 held) is not taken over the line the log printed
    samples = [(_cap(), 3), (_cap(initialized=True, current=4), 8)]
    chosen, assumed = choose_cap_settings(samples, {"expand_by_doubling": False}, "normal")
    assert (chosen.init_cap, chosen.expand_by_doubling) == (3, False)
    assert sorted(a.setting for a in assumed) == ["class normal: Initialization Cap", "class normal: Use Prediction"]


def test_free_space_as_the_rm_accounts_it():
    assert evidence.free_space(16, [(4, FIXED_SHARE)]) == 12
    assert evidence.free_space(16, [(4, FIXED_SHARE), (20, FIXED_SHARE)]) == 0  # bigger than what is left: all of it
    assert evidence.free_space(16, [(2, RESERVE)]) == 0  # a reservation takes the machine


_POOLS = evidence.PoolTree(SimpleNamespace(nodepools=[Nodepool("--default--", None)], classes=FAIR))


@given(st.lists(st.sampled_from([8, 12, 16]), min_size=1, max_size=7),
       st.lists(st.lists(st.booleans(), min_size=7, max_size=7), min_size=1, max_size=5),
       st.lists(st.integers(0, 8), min_size=7, max_size=7))
def test_the_true_orders_are_a_solution(orders, liveness, held):
    """Machines of random orders, up and down over a few cycles, each having held some quanta: the
    counters' histograms they produce are solved, and the true counts are among the solutions."""
    names = [f"n{i}" for i in range(len(orders))]
    hosts = {n: Host(n, "--default--", None, None, "", "unknown", "") for n in names}
    cycles = []
    for up in liveness:
        seen = {n: evidence.Seen(up[i], ()) for i, n in enumerate(names)}
        histogram = [0] * 17
        for i, o in enumerate(orders):
            if up[i]:
                histogram[o] += 1
        cycles.append(evidence.CycleEvidence(None, True, ["--default--"], [tuple(histogram)], [histogram], seen))
    floors = {n: (min(held[i], orders[i]), 1) for i, n in enumerate(names)}
    groups = counts.alike_groups(cycles, hosts, floors, {}, [8, 12, 16])
    states = counts.state_equations(cycles, groups, _POOLS)
    solutions = counts.solve_counts(groups, counts.distinct(eq for _, eqs in states for eq in eqs), limit=100_000)
    truth = {}
    for gi, g in enumerate(groups):
        for host in g.hosts:
            key = (gi, orders[names.index(host)])
            truth[key] = truth.get(key, 0) + 1
    assert truth in solutions


def _needy_tables(expansions: list[tuple[int, str, int | None]], defrag: list[tuple[int, str, int | None, list | None]],
                  given: list[tuple[int, int]]) -> dict[str, pl.DataFrame]:
    """One cycle's What Of lines: (line, kind, job) expansions, (line, kind, job, job_ids) defrag
    rows and (line, job) fair-share counts."""
    def rows(name: str, **cols) -> pl.DataFrame:
        n = len(next(iter(cols.values()), []))
        return _empty(name, cycle=[1] * n, file=["rm.log"] * n, **cols) if n else _empty(name)
    return {"expansions": rows("expansions", line=[e[0] for e in expansions], kind=[e[1] for e in expansions],
                               job_id=[e[2] for e in expansions]),
            "defrag": rows("defrag", line=[d[0] for d in defrag], kind=[d[1] for d in defrag],
                           job_id=[d[2] for d in defrag], job_ids=[d[3] for d in defrag]),
            "counts": rows("counts", line=[g[0] for g in given], kind=["given"] * len(given),
                           job_id=[g[1] for g in given])}


def test_the_needy_pass_ends_at_the_traversal_not_at_find_shares_subpool_line():
    # the needy pass expands job 8 in --default--; findShares prints its subpools' "Doing
    # expansions" line (right after its "counted" line) before that doExpansion line: still the
    # needy pass. The normal pass starts at traverseNodepoolsForExpansion's line (20).
    tables = _needy_tables([(10, "find_shares_counted", 8), (11, "expansion_order", None), (15, "do_expansion", 8),
                            (20, "expansion_order", None), (22, "find_shares_counted", 10),
                            (23, "do_expansion", 10)], [], [(18, 8), (19, 10)])
    assert needy_expanded(tables).get(1)["job_id"].to_list() == [8]


def test_the_needy_pass_names_its_fixed_share_work():
    # a fixed-share job the needy pass gives a process: `Assign:` (INFO), and at DEBUG the
    # "Expand needy fixed. [12 ]" line lists it; a doExpansion of the normal pass does not count
    info = _needy_tables([(20, "expansion_order", None), (22, "do_expansion", 5)],
                         [(12, "expand_needy_assign", 12, None)], [(21, 5)])
    debug = _needy_tables([(20, "expansion_order", None), (22, "do_expansion", 5)],
                          [(10, "expand_needy", None, [12]), (12, "expand_needy_assign", 12, None)], [(21, 5)])
    assert needy_expanded(info).get(1)["job_id"].to_list() == [12]
    assert needy_expanded(debug).get(1)["job_id"].to_list() == [12]


def test_work_before_the_log_takes_its_type_from_its_counting_line():
    # a managed reservation submitted before the log: the first schedule the log holds (cycle 1,
    # its start inside a cycle) prints it as "Service", the counting lines of later cycles as "M"
    tables = {"jobs": _empty("jobs"),
              "schedule": _empty("schedule", cycle=[1, 2], job_id=[1, 1], work_type=["Service", "Service"],
                                 memory_gb=[4, 4]),
              "counts": _empty("counts", cycle=[2], job_id=[1], type_code=["M"], **{"class": ["fixeda"]}),
              "job_caps": _empty("job_caps", cycle=[2], job_id=[1], user=["fay"], order=[1])}
    made = job_descriptions(tables).filter(pl.col("job_id") == 1)
    assert set(made["type_code"].to_list()) == {"M"}, made


def _group(name: str, n: int, orders: tuple[int, ...], floor: int = 0) -> counts.Group:
    return counts.Group(tuple(f"{name}{i}" for i in range(n)), "--default--", floor, orders)


def test_counts_that_fit_no_state_are_no_inference():
    """Two machines of order 1 or 3; the one state's counters ask for three of order 1: no count
    fits, and none is taken (no evidence is not every assignment)."""
    groups = [_group("a", 2, (1, 3))]
    state = (5, [(3, {(0, 1): 1}), (0, {(0, 3): 1})])
    assert counts.solve(groups, [state]) == ([], [], False)


def test_a_group_no_kept_state_counts_is_left_unknown():
    """The most-seen state fits and counts group a only; the state that contradicts it alone
    counts group b: b's orders are not taken from counts that never read it."""
    groups = [_group("a", 1, (2,)), _group("b", 1, (2, 4))]
    seen = (9, [(1, {(0, 2): 1})])
    contradicting = (1, [(2, {(0, 2): 1, (1, 2): 1}), (1, {(1, 4): 1})])
    solutions, kept, _ = counts.solve(groups, [seen, contradicting])
    assert solutions == [{(0, 2): 1}] and kept == [(1, {(0, 2): 1})]


def test_a_group_its_fixed_share_processes_fill_may_have_the_floor():
    """Two machines each holding a fixed-share process of 16, the only other order the counters
    show 24: a full machine is in no counter, so 16 is among their orders, and the counter that
    covers them and counts none settles it."""
    seen = evidence.Seen(True, ((16, FIXED_SHARE),))
    cycle = evidence.CycleEvidence(None, True, ["--default--"], [tuple([0] * 25)], [[0] * 25],
                                   {"g0": seen, "g1": seen})
    hosts = {n: Host(n, "--default--", None, None, "", "unknown", "") for n in ("g0", "g1")}
    groups = counts.alike_groups([cycle], hosts, {"g0": (16, 1), "g1": (16, 1)}, {}, [24])
    assert [g.orders for g in groups] == [(24, 16)]
    solutions, _, _ = counts.solve(groups, counts.state_equations([cycle], groups, _POOLS))
    assert solutions == [{(0, 16): 2}]


@given(st.lists(st.sampled_from([8, 12, 16]), min_size=1, max_size=7),
       st.lists(st.lists(st.booleans(), min_size=7, max_size=7), min_size=1, max_size=3))
def test_possible_orders_are_those_of_every_fitting_count(orders, liveness):
    """Without the counts found, possible_orders gives each group exactly the orders some
    fitting count gives it (every count enumerated)."""
    names = [f"n{i}" for i in range(len(orders))]
    hosts = {n: Host(n, "--default--", None, None, "", "unknown", "") for n in names}
    cycles = []
    for up in liveness:
        histogram = [0] * 17
        for i, o in enumerate(orders):
            histogram[o] += up[i]
        cycles.append(evidence.CycleEvidence(None, True, ["--default--"], [tuple(histogram)], [histogram],
                                             {n: evidence.Seen(up[i], ()) for i, n in enumerate(names)}))
    groups = counts.alike_groups(cycles, hosts, {n: (0, 0) for n in names}, {}, [8, 12, 16])
    equations = counts.distinct(eq for _, eqs in counts.state_equations(cycles, groups, _POOLS) for eq in eqs)
    every = counts.solve_counts(groups, equations, limit=100_000)
    want = {gi: {o for c in every for (g, o), n in c.items() if g == gi and n} for gi in range(len(groups))}
    assert counts.possible_orders(groups, equations, []) == want


def test_machines_no_placement_tells_apart_share_their_group_s_options():
    """Two alike machines the fits give 9 and 9, or 11 and 9 (the matching puts the 11 on the
    first): either may be the 11, so both are drawn 9 or 11; one fit giving 4 and 5 leaves only
    which has which open (Host.alike), no rival orders."""
    group = _group("h", 2, (9, 11))
    tied = [solver._Fit({"h0": 9, "h1": 9}, 0, 0, frozenset()), solver._Fit({"h0": 11, "h1": 9}, 0, 0, frozenset())]
    assert solver._rivals("h1", group, tied, set()) == solver._rivals("h0", group, tied, set()) == [9, 11]
    assert solver._rivals("h1", group, [solver._Fit({"h0": 4, "h1": 5}, 0, 0, frozenset())], set()) == []
    ruled = [replace(f, ruled_out=frozenset({("h0", 9)})) for f in tied]  # a placement tells them apart
    assert solver._rivals("h1", group, ruled, set()) == []
