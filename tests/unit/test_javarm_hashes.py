"""Orders the harness is given: its job and share hashes (replay.javarm.hashes, one solver for both;
replay.javarm.hash_orders), hand-worked against Java's HashMap and checked against the listings of the
bundled logs themselves, and the order of processes added at once (replay.javarm.order.addition_orders)."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
import pytest

from replay.javarm.hashes import NEEDY, Listing, hashes_of, listings, map_bits, solve


def walk(hashes: dict[int, int], jobs: tuple[int, ...], bits: int, arrival: dict[int, tuple[int, int]]) -> list[int]:
    """The order a java.util.HashMap of 2^bits buckets walks `jobs` with these hashes (below 2^16, which the
    spread h ^ h >>> 16 leaves alone): by bucket h mod 2^bits, and in a bucket the first put first."""
    return sorted(jobs, key=lambda j: (hashes[j] % (1 << bits), arrival[j]))


def test_map_bits_follow_javas_resize_threshold():
    """A HashMap of 16 buckets (threshold 12 at load factor 0.75) doubles on its 13th entry, at 32 on its
    25th, at 64 on its 49th; it never shrinks."""
    assert [map_bits(n) for n in (0, 1, 12, 13, 24, 25, 48, 49)] == [4, 4, 4, 5, 5, 6, 6, 7]
    assert map_bits(3, bits=5) == 5


def test_least_hashes_keep_the_orders_at_16_buckets():
    """Job 3 came last but is listed first: it takes a lower bucket than 1 and 2; 4 follows 2."""
    walks = [Listing(1, "n", (1, 2), 4), Listing(2, "n", (3, 1, 2), 4), Listing(3, "n", (3, 2, 4), 4)]
    assert solve(walks) == {3: 0, 1: 1, 2: 2, 4: 3}


def test_more_jobs_than_buckets_share_them_in_arrival_order():
    """20 jobs, each listed after the one before it and one per cycle: more than 16 buckets' worth of
    distinct hashes, so jobs that came in an earlier cycle share a bucket with later ones (a bucket walks
    its first arrival first); jobs 1 and 2, which came in the same cycle, do not share."""
    chain = [Listing(c, "n", (c, c + 1), 4) for c in range(1, 20)]
    assert solve(chain) == {1: 0} | {j: 1 for j in range(2, 21)}


def test_a_map_that_grows_to_32_buckets_reorders_by_bit_4():
    """Jobs 1..12 listed in id order by a map of 16 buckets; job 13 makes 13 entries and the map 32 buckets,
    which now lists 1, 3, 5, 7, 9, 11, 13, 2, 4, ..., 12: the even jobs have bit 4 set. Least hashes, by
    arrival: job k below 13 takes k - 1 in its low 4 bits (16 for the even ones), and 13 the least
    bucket of 32 after 11's (10) and before 2's (17): 11."""
    first = Listing(1, "n", tuple(range(1, 13)), 4)
    grown = Listing(2, "n", (1, 3, 5, 7, 9, 11, 13, 2, 4, 6, 8, 10, 12), map_bits(13, 4))
    got = solve([first, grown])
    assert got == {k: k - 1 + (16 if k % 2 == 0 else 0) for k in range(1, 13)} | {13: 11}
    arrival = {j: (1, j) for j in range(1, 13)} | {13: (2, 13)}
    assert walk(got, first.keys, 4, arrival) == list(first.keys)
    assert walk(got, grown.keys, 5, arrival) == list(grown.keys)


def test_no_bucket_holds_a_ninth_job():
    """A HashMap under 64 buckets whose bucket would get a 9th entry doubles instead (treeifyBin): hashes that
    put 9 jobs of one walk in one bucket would not walk as chosen; 8 are fine, and 9 in two buckets of 32."""
    from replay.javarm.hashes import crowded

    nine = Listing(1, "n", tuple(range(1, 10)), 4)
    assert crowded({j: 0 for j in range(1, 10)}, [nine])
    assert not crowded({j: 0 for j in range(1, 9)}, [Listing(1, "n", tuple(range(1, 9)), 4)])
    assert not crowded({j: 16 * (j % 2) for j in range(1, 10)}, [Listing(1, "n", nine.keys, 5)])


def test_contradicting_listings_keep_the_first_cycles():
    """At one map size jobs 1 and 2 cannot be listed both ways: the hashes keep cycle 1, and job 3, first
    listed after the contradiction, is left to the seed."""
    walks = [Listing(1, "n", (1, 2), 4), Listing(2, "n", (2, 1), 4), Listing(3, "n", (2, 1, 3), 4),
             Listing(1, "m", (7, 8), 4)]
    got = hashes_of(walks)
    assert got.hash_of == {1: 0, 2: 1, 7: 0, 8: 1} and got.kept_to == {"n": 1} and got.left == 1


def test_the_needy_map_ties_classes_together():
    """Jobs 1 (class a) and 5 (class b) are in no map together but the needy map, made afresh each cycle:
    in class b, 5 walks after 6 (buckets 0, 1). Walked 1 then 5, the needy map keeps the least hashes;
    walked 5 then 1, job 1 (and 2 after it) moves above 5's bucket."""
    classes = [Listing(1, "a", (1, 2), 4), Listing(1, "b", (6, 5), 4)]
    assert solve(classes) == {1: 0, 2: 1, 6: 0, 5: 1}
    assert solve([*classes, Listing(2, NEEDY, (1, 5), 4, inserted=(5, 1))]) == {1: 0, 2: 1, 6: 0, 5: 1}
    assert solve([*classes, Listing(2, NEEDY, (5, 1), 4, inserted=(1, 5))]) == {1: 2, 2: 3, 6: 0, 5: 1}


def test_tied_shares_take_hashes_from_the_same_solver():
    """Hand-worked from the bucket rule, on the log's own Existing lists (a job's map of shares, walked by a
    stable sort that keeps tied uninitialized shares in the map's order; shares put in creation order).
    seed47-050, job 8, 16 buckets (it holds 4 to 6 shares; its processes initialize in no time, so every
    share prints `^0`): `50^0 49^0 48^0 36^0` at 00:08:10, 48 and 36 reported Running: 50 and 49 tie, a
    walk of the map that puts the later-created share first, so they may not share a bucket (a bucket
    walks its first put first): h50 < h49, the least 0 and 1. At 00:08:20 the Orchestrator's state reports
    50 and 49 Running before the schedule, which lists `52^0 50^0 49^0 48^0 36^0`: 52 alone uninitialized,
    then the initialized ones youngest first (RmJob.compareInvestment's last tie-break), and at 00:08:30
    `53^0 52^0 50^0 ...` alike (52 Running by then): no walk.
    cancel_varyoff, 00:06:50: job 3's `Existing[34]` (34 shares: a map of 64 buckets, doubled at the
    13th and 25th) lists 17 tied shares 58 55 56 ... 57 70: each before a share created earlier or
    after one created later, none may share a bucket, and the least hashes are their places, 0 to 16.
    At 16 buckets hash 16 would be bucket 0, walked with 58 (put first) right after it."""
    from replay.javarm.hash_orders import share_hashes, share_listings, share_map
    from tests.helpers import parsed

    tables = parsed("heldout/seed47-050").tables
    mine = [w for w in share_listings(tables) if w.owner == share_map(8)]
    assert [(w.keys, w.bits) for w in mine] == [((50, 49), 4)]
    got = share_hashes(tables).hash_of
    assert {s: got.get(s) for s in (53, 52, 50, 49)} == {53: None, 52: None, 50: 0, 49: 1}
    put = {s: (0, s) for s in (49, 50)}
    assert all(walk(got, w.keys, w.bits, put) == list(w.keys) for w in mine)

    tables = parsed("corpus/cancel_varyoff").tables
    listed = (58, 55, 56, 62, 63, 64, 69, 66, 68, 60, 59, 61, 65, 67, 71, 57, 70)
    wide = next(w for w in share_listings(tables) if w.cycle == 36 and w.owner == share_map(3))
    assert (wide.keys, wide.bits, map_bits(34)) == (listed, 6, 6)
    got = share_hashes(tables).hash_of
    assert [got[s] for s in listed] == list(range(17))
    put = {s: (0, s) for s in listed}
    assert walk(got, listed, 6, put) == list(listed)
    assert walk(got, listed, 4, put)[:2] == [58, 70]  # the same hashes in a map of 16 buckets


@pytest.mark.parametrize("name", ["h_mega15", pytest.param("i_mega24", marks=pytest.mark.slow)])
def test_hashes_list_every_class_as_the_log_does(name):
    """Ground truth, the log: with the hashes chosen, a HashMap of the size each map had walks its jobs in
    every cycle exactly as the log's lines list them: each class's (`Scheduling job in class`, and the cap
    lines, which name fixed-share and reservation jobs too) and the needy map (i_mega24's class `normal`
    lists 13 jobs at 03:06:10 and walks 32 buckets from then on)."""
    from tests.helpers import parsed

    walks = listings(parsed(name).tables)
    got = hashes_of(walks)
    assert not got.kept_to and got.left == 0
    arrival: dict[int, tuple[int, int]] = {}
    for w in walks:
        for j in w.keys:
            arrival.setdefault(j, (w.cycle, j))
    for w in walks:
        came = {j: (k, j) for k, j in enumerate(w.inserted)} if w.inserted else arrival
        assert walk(got.hash_of, w.keys, w.bits, came) == list(w.keys), (w.cycle, w.owner)
    assert any(w.owner == NEEDY for w in walks) and any(w.owner == "JobDriver" for w in walks)  # caps walk
    if name == "i_mega24":
        assert {w.bits for w in walks if w.owner == "normal" and w.cycle >= 1112} == {5}
        assert max(len(w.keys) for w in walks if w.cycle < 1112) == 12


@pytest.mark.parametrize("name", ["h_mega15", "e_initcap_prediction"])
def test_share_hashes_walk_every_tied_run_as_the_log_lists_it(name):
    """Ground truth, the log: with the share hashes chosen, each job's map of shares, at the size it had
    (these jobs' grow to 128 buckets), walks every run of tied shares its Existing lists print in the
    printed order (a bucket walks the share created first first)."""
    from replay.javarm.hash_orders import share_hashes, share_listings
    from tests.helpers import parsed

    tables = parsed(name).tables
    walks, got = share_listings(tables), share_hashes(tables)
    assert not got.kept_to and got.left == 0 and max(w.bits for w in walks) == 7
    for w in walks:
        assert walk(got.hash_of, w.keys, w.bits, {s: (0, s) for s in w.keys}) == list(w.keys), (w.cycle, w.owner)


def test_processes_added_at_once_are_numbered_in_the_logs_share_id_order():
    """Cycle 2 (10 s after cycle 1) adds job 7's shares 12 on b, 11 on a, 13 on a: the harness numbers them
    a, b, a (share ids 11, 12, 13), 10 s plus the shift on its clock; one process added (job 8) has no order."""
    from replay.javarm.order import addition_orders

    t0 = datetime(2015, 1, 1)
    tables = {
        "cycles": pl.DataFrame({"cycle": [1, 2], "ts_start": [t0, t0 + timedelta(seconds=10)]}),
        "schedule": pl.DataFrame({"cycle": [2, 2, 2, 2, 2], "kind": ["addition"] * 4 + ["existing"],
                                  "job_id": [7, 7, 7, 8, 7], "share_id": [12, 11, 13, 20, 12],
                                  "host": ["b", "a", "a", "c", "b"]}),
    }
    assert addition_orders(tables, 60000) == {7: [[70000, "a b a"]]}


def test_machine_walks_are_the_connect_lines_share_order():
    """Ground truth, the logs' connectShare lines, each of which lists the jobs of the machine's shares in
    its map's walk order before the new share is put in (hand-read):
    releases/2.0.0 kept-old-record, n01: `1` at share 2's line (share 1, job 1), `1 2` at share 3's
    (share 2 walked after 1), `2 1 2` at share 4's, 00:01:20: share 3 (job 2), put in since, walks
    first, so 3 < 1 < 2; the RM of the harness walked `1 2 2` there on seeded UUIDs and parted from the
    log at cycle 52 (99.5% of job-cycles).
    corpus defrag_new_processes_counted, np102, 00:01:10: `1 1` at share 4's line (shares 2 and 3 of job
    1), `10 1 1` at share 5's (share 4 of job 10 first), `10 1 1 10` at share 6's (share 5 last): 4 before
    both of job 1's, both before 5, whichever of 2 and 3 is first."""
    from replay.javarm.hash_orders import machine_listings, machine_map, share_hashes
    from tests.helpers import parsed

    tables = parsed("releases/2.0.0/kept-old-record").tables
    n01 = {(w.cycle, w.keys) for w in machine_listings(tables) if w.owner == machine_map("n01.sim.ducc")}
    assert {keys for _, keys in n01} >= {(1, 2), (3, 1)}
    got = share_hashes(tables).hash_of
    assert walk(got, (1, 2, 3), 4, {s: (0, s) for s in (1, 2, 3)}) == [3, 1, 2]

    tables = parsed("corpus/defrag_new_processes_counted").tables
    np102 = {w.keys for w in machine_listings(tables) if w.cycle == 2}
    assert np102 == {(4, 2), (4, 3), (2, 5), (3, 5)}
    got = share_hashes(tables).hash_of
    order = walk(got, (2, 3, 4, 5), 4, {s: (0, s) for s in (2, 3, 4, 5)})
    assert order[0] == 4 and order[-1] == 5
