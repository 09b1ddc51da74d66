"""What the harness reads from a log for the inputs an INFO log shows only as orders and ties
(replay.javarm.hash_orders, replay.javarm.scenario, simulate's stop delay); no JDK needed.

Ground truth: the scenario.json each fixture log was generated from (submission times, process stop
delay), the log's own lines, and hand-worked examples. The Java RM's identity on the same logs is
in test_javarm.py.
"""

from __future__ import annotations

import polars as pl

from replay.apps.simulate.reconstruct import median_gap, stop_delay
from replay.javarm.cleared import clearing_listings
from replay.javarm.hash_orders import share_hashes, share_listings, share_map
from replay.javarm.hashes import hash_buckets
from replay.javarm.purged import purge_listings
from replay.apps.simulate.simulation import simulate
from replay.javarm.scenario import _in_id_order, config_from_dir, config_from_log, logged_outages, scenario_of
from replay.model.needy import needy_ties
from replay.model.submission import submission_order
from tests.helpers import log_path, parsed, scenario, truth_defrag_actions


def test_a_needy_job_left_off_ties_with_the_one_kept():
    """needy_tie_survivor: jobs 12 and 13 were submitted in the same millisecond (scenario.json); the
    log shows reservation 13 potentially needy but left off the needy list the next cycle (findMachines
    saw it once), so it tied with job 12, the one job of its order kept."""
    tables = parsed("corpus/needy_tie_survivor").tables
    work = scenario("corpus/needy_tie_survivor")["work"]
    assert work[11]["submit_ms"] == work[12]["submit_ms"]  # DuccIds 12 and 13: the 12th and 13th submitted
    assert (13, 12) in needy_ties(tables)
    assert submission_order(tables)[13] == 12
    sim = simulate(tables)
    folder = log_path("corpus/needy_tie_survivor").parent / "resources"
    scen = scenario_of(sim.workload, len(sim.context.cycles), config_from_dir(folder), 1, tables)
    submitted = {scen.job_of[k + 1]: w["submit_ms"] for k, w in enumerate(scen.scenario["work"])}
    assert submitted[12] == submitted[13] > submitted[11]
    assert any("tied on submission (12, 13" in line for line in scen.assumed)  # the report names it


def test_tied_submissions_keep_one_millisecond():
    """Jobs the log shows tied are submitted in the same millisecond, the rest strictly after one
    another in id order (hand-worked)."""
    assert _in_id_order([400239, 400240, 400240], [False, True]) == [400239, 400240, 400240]
    assert _in_id_order([400250, 400240, 400240], [True, False]) == [400239, 400239, 400240]
    assert _in_id_order([0, 0, 0], [True, False]) == [0, 0, 1]


def test_hash_order_comes_from_listings_that_show_it():
    """priority_bands: six jobs in six classes. The counting lines list them class by class (4 3 6 5
    1 2 at cycle 33), which is no hash order; the takeFromTheRich lines walk the needy map, keyed by
    the jobs of every class: 3 6 2 5 4 1 at cycle 33. The harness's hashes (16 buckets) keep that."""
    hashes = hash_buckets(parsed("corpus/priority_bands").tables)
    assert sorted(range(1, 7), key=lambda j: hashes.hash_of[j] & 15) == [3, 6, 2, 5, 4, 1]
    assert hashes.left == 0 and not hashes.kept_to


def test_fixed_share_counting_is_no_hash_order():
    """needy_tie_survivor: How Much counts a fixed-share class by submission (2 3 5 7), detectFragmentation
    walks the same class's map (7 before 5): only the latter is a hash order, and no walk contradicts it."""
    hashes = hash_buckets(parsed("corpus/needy_tie_survivor").tables)
    assert hashes.hash_of[7] & 15 < hashes.hash_of[5] & 15
    assert hashes.left == 0 and not hashes.kept_to


def test_clearings_show_a_machines_walk():
    """defrag_new_processes_counted, 00:01:10 (cycle 2): job 5 needs 4 quanta on np102, 1 free; the cycle
    made shares 4 and 5 (job 10) and 6 (job 2), all ben's, uninitialized: tied. The Existing lists keep 5
    only, so the walk cleared 4 and 6 (1 + 1 + 3 reaches 4; 6 alone would have: 4 came first) and reached
    5 after them: 4, 6, 5 (hand-worked). At 00:01:20 it cleared 8 (job 2) and kept 7 (job 10, a candidate
    of a worse priority than job 5's fixed class): 8 before 7. The shares' hashes keep those walks.
    Ground truth, truth.jsonl: in every cycle and log where the log's clearings give pairs, the oracle's RM
    cleared the first share of each pair, and the second after it or not at all."""
    tables = parsed("corpus/defrag_new_processes_counted").tables
    pairs = {(w.cycle, w.keys) for w in clearing_listings(tables)}
    assert pairs == {(2, (4, 6)), (2, (4, 5)), (2, (6, 5)), (3, (8, 7))}
    got = share_hashes(tables).hash_of
    assert got[4] % 16 < got[6] % 16 < got[5] % 16 and got[8] % 16 < got[7] % 16
    for name in ("corpus/defrag_new_processes_counted", "corpus/defrag_earlier_round_cleared",
                 "corpus/defrag_later_round_decides", "releases/2.0.0/defrag-residual"):
        walks = clearing_listings(parsed(name).tables)
        assert walks, name
        for w in walks:
            cleared = [share for _, _, host, share in truth_defrag_actions(name, w.cycle)
                       if w.owner == f"host {host}"]
            a, b = w.keys
            assert a in cleared and (b not in cleared or cleared.index(a) < cleared.index(b)), (name, w)


def test_shares_reported_running_before_the_schedule_are_no_tie():
    """unsettled/tally_order: job 3's processes initialize in no time, so its Existing lists print every
    share `^0`. At 00:01:10 the Orchestrator's state reports shares 6 to 9 Running (its `New process ...
    Running` lines come before that cycle's scheduling loop), and the list prints them 9 8 7 6: initialized
    shares of equal investment, youngest first (RmJob.compareInvestment), not a walk of the job's map. As
    such a walk (shares Running only from the next cycle on counted as tied) they contradicted the
    uninitialized shares' walk 6 9 8 7 at 00:01:00, and 8 of job 3's shares took seeded UUIDs. Ground
    truth: the log's own lines (the Running lines' place before the schedule)."""
    tables = parsed("unsettled/tally_order").tables
    lines = tables["processes"].filter(
        (pl.col("job_id") == 3) & (pl.col("share_id").is_in([6, 7, 8, 9])) & (pl.col("state_to") == "Running"))
    loop = tables["cycles"].filter(pl.col("cycle") == 2)
    assert set(lines["cycle"]) == {2} and lines["line"].max() < loop["line"][0]
    walks = {(w.cycle, w.keys) for w in share_listings(tables) if w.owner == share_map(3)}
    assert (1, (6, 9, 8, 7)) in walks and not any(c == 2 for c, _ in walks)
    hashes = share_hashes(tables)
    assert not hashes.kept_to and hashes.left == 0 and all(s in hashes.hash_of for s in range(6, 22))


def test_a_purge_that_stops_at_a_reservation_shows_a_machines_walk():
    """releases/2.0.0 purge-stops: n01 is varied off at 00:07:36 holding reservation 1's share 1 and job 2's
    shares 2 to 5. 2.0.0's NodePool.disable walks the machine's map of shares and stops at the
    reservation's share: three `Purge Job` lines, `Not purging Reservation`, and the next Existing list
    marks 5, 4 and 2 `^P` and leaves 3. So n01's map walks 2, 4 and 5 before 1, and 1 before 3
    (hand-worked from the log's lines); the shares' hashes keep that walk at 16 buckets (without it, 5
    walked after 1 and the harness's 2.0.0 RM purged two shares: 98.8% of job-cycles)."""
    tables = parsed("releases/2.0.0/purge-stops").tables
    pairs = {w.keys for w in purge_listings(tables)}
    assert pairs == {(5, 1), (4, 1), (2, 1), (1, 3)}
    got = share_hashes(tables).hash_of
    assert max(got[s] % 16 for s in (2, 4, 5)) < got[1] % 16 < got[3] % 16
    assert not purge_listings(parsed("corpus/varied_off_then_dead").tables)  # a purge that stops at no reservation


def test_an_outage_ends_where_its_misses_stop():
    """releases/2.0.0 many-open-shares: n11 misses heartbeats at 00:07:45 (count 2) and 00:08:15 (count 3),
    then no more, and is never purged; 2.0.0 prints no `Node recovers`, and the log goes on to 00:11:10.
    The node reported again before the 00:08:45 check: its outage ends at the last miss logged (435 s
    after the first cycle, 00:01:00), not never (the harness's node died at count 5, 00:09:20, and the
    2.0.0 RM parted there: 93.3% of job-cycles). Ground truth, scenario.json: n11's outage ends at 488 s;
    the agents report every 30 s from 0, and the first report after either end is the same one (510 s),
    which the watchdog's 00:08:45 check sees."""
    tables = parsed("releases/2.0.0/many-open-shares").tables
    marks = logged_outages(tables, 30000)["n11.sim.ducc"]
    assert marks == [(390.0, "silent"), (435.0, "back")]
    node = next(n for n in scenario("releases/2.0.0/many-open-shares")["nodes"] if n["name"] == "n11.sim.ducc")
    chosen_ms, true_ms = (435 + 60) * 1000, node["outages"][0][1]
    assert -(-chosen_ms // 30000) == -(-true_ms // 30000)
    assert logged_outages(parsed("f_node_failure").tables, 30000)["fnode02.sim.ducc"] == [(240.0, "silent")]  # died


def test_tied_shares_in_the_existing_list():
    """seed47-070: service 4's Existing list prints n02.sim.ducc.44^0 n02.sim.ducc.48^0 n03.sim.ducc.25^0
    before the initialized n03.sim.ducc.3^10000: the three tie in the investment sort (uninitialized,
    time 0) and keep the hash order of their DuccIds. Shares 52 and 53 (reported Running, time 0) are
    sorted by investment, never as a tie."""
    tables = parsed("heldout/seed47-070").tables
    walks = share_listings(tables)
    assert (share_map(4), (44, 48, 25)) in [(w.owner, w.keys) for w in walks]
    assert not any(52 in w.keys and 53 in w.keys for w in walks)
    hashes = share_hashes(tables)
    buckets = hashes.hash_of
    assert hashes.left == 0 and not hashes.kept_to and buckets[44] < buckets[48] < buckets[25]
    sim = simulate(tables)
    scen = scenario_of(sim.workload, len(sim.context.cycles), config_from_log(tables), 1, tables)
    given = scen.scenario["share_buckets"]
    assert given["44"] < given["48"] < given["25"]
    assert any(line.startswith(f"share DuccIds: {len(given)} share(s)") for line in scen.assumed)


def test_stop_delay_from_a_share_still_listed():
    """second_toplevel_quantum: job 1's shares are removed at 00:03:00 and still listed at the log's last
    cycle, 00:03:10, and no work completes: a stop delay of one publication (10 s) would have them gone by
    then. The least that keeps them is 20 s; the scenario's process_stop_ms (15 s) is within one period."""
    tables = parsed("corpus/second_toplevel_quantum").tables
    stop, gap = stop_delay(tables), median_gap(tables)
    true_stop = scenario("corpus/second_toplevel_quantum")["timing"]["process_stop_ms"] / 1000
    assert stop == 20.0 and stop - gap < true_stop <= stop
    assert stop_delay(parsed("corpus/varied_off_then_dead").tables) is None  # purged shares: their node is gone


def test_stop_delay_from_completions():
    """allotment_three_bands removes no share: the stop delay comes from work's Completing to Completed
    publications (20 s), and the scenario's process_stop_ms (15 s) is within one publication period of it."""
    tables = parsed("corpus/allotment_three_bands").tables
    stop, gap = stop_delay(tables), median_gap(tables)
    true_stop = scenario("corpus/allotment_three_bands")["timing"]["process_stop_ms"] / 1000
    assert stop == 20.0 and stop - gap < true_stop <= stop


def test_work_the_log_ends_only_by_gone_is_canceled():
    """seed47-190: job 3 and managed reservation 17 were canceled before they were given a process
    (scenario.json: 179,676 and 546,564 ms); the log shows no Completing line for them, only the
    Orchestrator dropping them (`Gone`, 00:03:40 and 00:09:50). The workload cancels each at the
    publication that showed it Completing: within one publication period after the scenario's cancel."""
    tables = parsed("heldout/seed47-190").tables
    sim = simulate(tables)
    first = tables["cycles"].sort("cycle")["ts_start"][0]
    offset = (first - first.replace(hour=0, minute=0, second=0, microsecond=0)).total_seconds()
    gap = median_gap(tables)
    canceled = {w.job_id: w.cancel for w in sim.workload.work if w.cancel is not None}
    truth = {k + 1: w["cancel_ms"] / 1000 for k, w in enumerate(scenario("heldout/seed47-190")["work"])
             if "cancel_ms" in w}
    for job in (3, 17):
        assert truth[job] <= offset + canceled[job] < truth[job] + gap, job
        assert "`Gone`" in next(w.note for w in sim.workload.work if w.job_id == job)
