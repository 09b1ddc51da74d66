"""What Of on hand-built cycles, and the Java HashMap model checked against a real JVM.

The JVM facts below were printed by OpenJDK (HashMap is unchanged from 8 in these respects) from
a key class whose hashCode is DuccNode's: 31 + (31 * (31 + ip.hashCode()) + name.hashCode()).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from rmref import CapInput
from rmref.javahash import JavaHashMap, node_hash, spread, string_hash
from rmref.model import (FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, Config, CycleInput, Machine,
                         Nodepool, Share, Work)
from rmref.whatof import unschedulable_free, what_of, what_of_choices

A = Machine("nodeA.sim.ducc", "--default--", 8, 32768, "10.0.0.1")
B = Machine("nodeB.sim.ducc", "--default--", 8, 32768, "10.0.0.2")
C = Machine("nodeC.sim.ducc", "--default--", 12, 49152, "10.0.0.3")
NORMAL = ClassDef("normal", FAIR_SHARE, 10, 100, "--default--")
POOLS = (Nodepool("--default--", None),)
_CAP = CapInput(remaining=100, threads=1, current=0, max_processes=100, initialized=True, projected=0,
                init_cap=0, expand_by_doubling=False, use_prediction=False, completed=False, refused=False)


def _work(job_id, order, cls="normal", shares=(), work_type="Job", submit=None):
    return Work(job_id, work_type, "u", cls, order, order * 4, _CAP, submit_seq=job_id if submit is None else submit,
                shares=tuple(Share(i, job_id, h, order) for i, h in shares))


def _cycle(machines, work, classes=(NORMAL,), pools=POOLS, needy=()):
    return CycleInput(1, Config(quantum_gb=4), tuple(classes), pools, tuple(machines), tuple(work), needy)


def _placed(inp, counts):
    return [(p.job_id, p.host, p.order) for p in what_of(inp, counts)]


# ---- the Java HashMap model -------------------------------------------------------------------

def test_hashes_are_javas():
    assert string_hash("hello") == 99162322
    assert string_hash("Aa") == string_hash("BB") == 2112
    assert node_hash("nodeA.sim.ducc", "10.0.0.1") == -1389228047 & 0xFFFFFFFF
    assert node_hash("nodeB.sim.ducc", "10.0.0.2") == -1585741521 & 0xFFFFFFFF


def test_clone_of_a_small_map_iterates_in_a_smaller_table():
    """JVM: {A, B} (16 buckets) iterates A, B; its clone (4 buckets) iterates B, A."""
    m = JavaHashMap()
    for k in (A, B, C):
        m.put(k.name, node_hash(k.name, k.ip))
    m.remove(C.name)
    assert list(m) == [A.name, B.name] and m.capacity == 16
    # by hand: spread(hash) & 3 is 3 for A and 0 for B
    assert spread(node_hash(A.name, A.ip)) & 3 == 3 and spread(node_hash(B.name, B.ip)) & 3 == 0
    clone = m.clone()
    assert list(clone) == [B.name, A.name] and clone.capacity == 4


def test_put_all_into_a_map_without_a_table_sizes_it_by_the_source():
    """JVM (17.0.15): new HashMap().putAll({A, B}) and a clone of an empty map .putAll({A, B})
    iterate B, A (4 buckets) although put A, put B iterates A, B (NodePool.getAllMachines of a
    pool with no nodes of its own)."""
    src = JavaHashMap()
    for k in (A, B):
        src.put(k.name, node_hash(k.name, k.ip))
    for target in (JavaHashMap(), JavaHashMap().clone()):
        target.put_all(src.entries())
        assert list(target) == [B.name, A.name] and target.capacity == 4
    assert list(src) == [A.name, B.name]


def test_put_all_of_twelve_keys_takes_thirty_two_buckets_where_puts_take_sixteen():
    keys = [(f"h{i * 7919 % 1000}.example.com", f"192.168.{i % 3}.{i}") for i in range(1, 13)]
    put_all, put = JavaHashMap(), JavaHashMap()
    put_all.put_all((name, node_hash(name, ip)) for name, ip in keys)
    for name, ip in keys:
        put.put(name, node_hash(name, ip))
    jvm_put_all = [919, 757, 28, 190, 352, 676, 433, 514, 595, 271, 109, 838]
    jvm_put = [919, 433, 514, 757, 28, 595, 190, 352, 271, 109, 838, 676]
    assert list(put_all) == [f"h{n}.example.com" for n in jvm_put_all] and put_all.capacity == 32
    assert list(put) == [f"h{n}.example.com" for n in jvm_put] and put.capacity == 16


def test_growth_removal_and_reinsertion_follow_the_jvm():
    keys = [(f"h{i * 7919 % 1000}.example.com", f"192.168.{i % 3}.{i}") for i in range(1, 21)]
    m = JavaHashMap()
    for name, ip in keys:
        m.put(name, node_hash(name, ip))
    jvm_all = [704, 919, 866, 757, 28, 190, 352, 461, 676, 623, 433, 514, 595, 271, 542, 109, 838, 947, 380, 785]
    assert list(m) == [f"h{n}.example.com" for n in jvm_all] and m.capacity == 32
    for i in range(0, 20, 4):  # a re-put goes to the tail of its bucket
        m.remove(keys[i][0])
        m.put(keys[i][0], node_hash(*keys[i]))
    jvm_readded = [704, 919, 866, 757, 28, 190, 352, 461, 676, 623, 433, 514, 595, 542, 271, 109, 838, 380, 947, 785]
    assert list(m) == [f"h{n}.example.com" for n in jvm_readded]
    for i in range(20):
        if i % 5:
            m.remove(keys[i][0])
    jvm_left = [f"h{n}.example.com" for n in (704, 919, 514, 109)]
    assert list(m) == jvm_left and list(m.clone()) == jvm_left and m.clone().capacity == 8


def _naive_order(ops):
    """The HashMap's iteration order by its definition alone (module docstring), every lookup a
    walk of the whole table: what JavaHashMap's bucket index must agree with."""
    table, size = [[] for _ in range(16)], 0
    for op, key, h in ops:
        where = next(((b, i) for b in table for i, (_, k) in enumerate(b) if k == key), None)
        if op == "remove":
            if where:
                del where[0][where[1]]
                size -= 1
            continue
        bucket = table[spread(h) & (len(table) - 1)]
        if any(k == key for _, k in bucket):
            continue
        bucket.append((h, key))
        if len(bucket) > 8 and len(table) < 64:
            table = _doubled(table)
        size += 1
        if size > len(table) * 3 // 4:
            table = _doubled(table)
    return [k for b in table for _, k in b]


def _doubled(table):
    grown = [[] for _ in range(2 * len(table))]
    for b in table:
        for entry in b:
            grown[spread(entry[0]) & (len(grown) - 1)].append(entry)
    return grown


@given(st.lists(st.tuples(st.sampled_from(["put", "put", "remove"]), st.integers(0, 60), st.integers(0, 3)),
                max_size=200))
def test_the_map_iterates_as_its_definition_says(ops):
    """Any run of puts and removes (a key put again under another hash too, which the RM's map
    would then hold twice) iterates as the naive model does."""
    named = [(op, f"node{k}", string_hash(f"node{k}") + 977 * alt * (k % 2)) for op, k, alt in ops]
    m = JavaHashMap()
    for op, key, h in named:
        m.put(key, h) if op == "put" else m.remove(key)
    assert list(m) == _naive_order(named)
    assert len(m) == len(list(m))


# ---- What Of ----------------------------------------------------------------------------------

def test_equal_free_machines_first_in_clone_order_wins():
    """A and B are both wholly free (8): the clone of that 2-entry map lists B first (see above)."""
    inp = _cycle([A, B], [_work(1, 1)])
    assert _placed(inp, {1: 1}) == [(1, B.name, 1)]


def test_vertical_stacking_fills_the_smallest_fitting_space_then_moves_on():
    """3 order-1 processes: B has 2 free (6 used), A 8 free; the walk starts at free size 1 and
    takes min(needed, free) on each machine: 2 on B (size 2), then 1 on A (size 8)."""
    inp = _cycle([A, B], [_work(1, 1), _work(2, 6, shares=[(1, B.name)])])
    assert _placed(inp, {1: 3, 2: 1}) == [(1, B.name, 1), (1, B.name, 1), (1, A.name, 1)]


def test_order_two_skips_spaces_too_small_and_stacks_by_whole_processes():
    """An order-3 job needing 3: B has 5 free (one fits: 5 // 3), A 8 free (two fit), C 12 (four)."""
    inp = _cycle([A, B, C], [_work(1, 3), _work(2, 3, shares=[(1, B.name)])])
    assert _placed(inp, {1: 3, 2: 1}) == [(1, B.name, 3), (1, A.name, 3), (1, A.name, 3)]


def test_oldest_job_places_first():
    """Jobs 1 and 2 both want one order-8 process; only B and A are free; the older job (by
    submit_seq) gets the first machine in hash order."""
    inp = _cycle([A, B], [_work(1, 8, submit=2), _work(2, 8, submit=1)])
    assert _placed(inp, {1: 1, 2: 1}) == [(2, B.name, 8), (1, A.name, 8)]


def test_processes_being_removed_still_occupy_the_machine_but_not_the_job():
    """Job 1 holds one process on B that is pending removal: B has only 4 free, and the job still
    needs 2 to reach its count of 2."""
    shares = (Share(1, 1, B.name, 4, pending_removal=True),)
    work = Work(1, "Job", "u", "normal", 4, 16, _CAP, submit_seq=1, shares=shares)
    inp = _cycle([A, B], [work])
    assert _placed(inp, {1: 2}) == [(1, B.name, 4), (1, A.name, 4)]


def test_subpool_jobs_first_then_parent_jobs_spill_into_subpools():
    """Pool big (child of --default--) holds C; --default-- holds A. The big-class job places
    first; the default job fills A and then spills into big."""
    pools = (Nodepool("--default--", None), Nodepool("big", "--default--"))
    big_c = Machine(C.name, "big", 12, 49152, C.ip)
    big_cls = ClassDef("normal-big", FAIR_SHARE, 10, 100, "big")
    inp = _cycle([A, big_c], [_work(1, 4), _work(2, 4, cls="normal-big")], classes=(NORMAL, big_cls), pools=pools)
    assert _placed(inp, {1: 3, 2: 2}) == [(2, C.name, 4), (2, C.name, 4), (1, A.name, 4), (1, A.name, 4),
                                          (1, C.name, 4)]


def test_better_priority_tier_places_first():
    urgent = ClassDef("urgent", FAIR_SHARE, 5, 400, "--default--")
    inp = _cycle([A], [_work(1, 8), _work(2, 8, cls="urgent", submit=9)], classes=(NORMAL, urgent))
    assert _placed(inp, {1: 1, 2: 1}) == [(2, A.name, 8)]


def test_fixed_share_avoids_stacking_non_service_work_unless_it_has_nothing():
    """Fixed job 1 (service id 0) already runs on B; B has room but holds id-0 work, so its
    second process goes to A. Fixed job 3 has nothing yet and every machine has id-0 work:
    the horizontal pass finds nothing, the vertical pass stacks it."""
    fixed = ClassDef("fixed", FIXED_SHARE, 5, 0, "--default--")
    inp = _cycle([A, B], [_work(1, 2, cls="fixed", shares=[(1, B.name)])], classes=(fixed,))
    assert _placed(inp, {1: 2}) == [(1, A.name, 2)]
    inp = _cycle([A, B], [_work(2, 2, shares=[(1, A.name)]), _work(1, 2, cls="fixed", shares=[(2, B.name)]),
                          _work(3, 2, cls="fixed")], classes=(NORMAL, fixed))
    assert _placed(inp, {1: 1, 2: 1, 3: 1}) == [(3, B.name, 2)]


def test_reservation_takes_a_wholly_free_machine_of_its_exact_order():
    reserve = ClassDef("reserve", RESERVE, 1, 0, "--default--")
    inp = _cycle([A, B, C], [_work(1, 1, shares=[(1, B.name)]), _work(2, 8, cls="reserve")],
                 classes=(NORMAL, reserve))
    assert _placed(inp, {1: 1, 2: 1}) == [(2, A.name, 8)]


def test_needy_jobs_expand_before_older_jobs():
    inp = _cycle([A], [_work(1, 8), _work(2, 8)], needy=(2,))
    assert _placed(inp, {1: 1, 2: 1}) == [(2, A.name, 8)]


def test_offline_machines_are_never_chosen():
    inp = _cycle([A, Machine(B.name, "--default--", 8, 32768, B.ip, online=False)], [_work(1, 1)])
    assert _placed(inp, {1: 1}) == [(1, A.name, 1)]


def test_a_varied_off_machine_with_stale_free_space_can_hide_free_machines():
    """NodePool.rearrangeVirtual on a machine reset skipped (varied off, still holding a process,
    free space 7 left from before: "bad virtual machine list ... v_order 7 r_order 8") lowers the
    count of 7-free machines to -1 and stops without a recount. By hand: after job 2's first
    process B moves from the 8-free count to the 7-free one, the recount sees 0 machines at every
    size (7-free: -1 + 1), so findShares skips every size: job 2 still stacks its second process
    on B (its count on B was taken before), job 3 gets nothing though B has 6 free (seed 29
    scenario 115)."""
    off = replace(A, online=False, varied_off=True, stale_free=7)
    work = (_work(1, 1, shares=((1, A.name),)), _work(2, 1), _work(3, 1))
    counts = {1: 0, 2: 2, 3: 1}  # job 1 keeps nothing: its process is being purged
    assert _placed(_cycle((off, B), work), counts) == [(2, B.name, 1), (2, B.name, 1)]
    assert _placed(_cycle((B,), work[1:]), counts) == [(2, B.name, 1), (2, B.name, 1), (3, B.name, 1)]


def test_a_dead_machine_left_with_no_free_space_stays_out_of_the_tables():
    """A dead machine still holding a process, whose free space the log shows as 0 ("v_order 0"):
    there is no map of size 0, so it never enters the tables and B stays the one 8-free machine.
    Taken as wholly free instead (the size unknown), it would lower the 8-free count and move
    into the 7-free map, leaving nSharesByOrder[8] = 0: findShares would skip B's size and place
    nothing (seed 29 scenario 135, where the dead machine in the map reordered the walk)."""
    dead = replace(A, online=False, stale_free=0)
    work = (_work(1, 1, shares=((1, A.name),)), _work(2, 1))
    counts = {1: 0, 2: 1}
    assert _placed(_cycle((dead, B), work), counts) == [(2, B.name, 1)]
    assert _placed(_cycle((replace(dead, stale_free=None), B), work), counts) == []


def test_defragmentation_reads_the_stale_free_space_accounting_leaves():
    """NodePool.reset skips a varied-off machine, so its virtual share order is the stale value
    accounting leaves: logged as 0 ("set free=0"), there is no table of size 0 and it stays 0, where
    counting its order less its process would give 8 - 1 = 7 (seed 43 scenario 030: defragmentation
    took it as an eligible machine with room and cleared nothing). Unknown, it starts wholly free
    and accounting moves it to 7. A schedulable machine is not reported."""
    work = (_work(1, 1, shares=((1, A.name),)),)
    off = replace(A, online=False, varied_off=True)
    assert unschedulable_free(_cycle((replace(off, stale_free=0), B), work)) == {A.name: 0}
    assert unschedulable_free(_cycle((off, B), work)) == {A.name: 7}
    assert unschedulable_free(_cycle((A, B), work)) == {}


def test_what_of_starts_where_how_muchs_accounting_left_a_dead_machine():
    """A dead machine keeps its stale free space through both phases' resets, and its fixed-share
    process is accounted by How Much, then again by What Of. By hand: A (8 quanta, dead, 8 free
    left) holds one order-1 fixed process; B has 8 free and D 7, so maps of sizes 8 and 7 exist.
    How Much moves A silently 8 -> 7; What Of starts at 7 and, a map of 7 existing, moves it
    again to 6 (seed 9909 scenario 5, where the RM then printed What Of's 1 for How Much's 2)."""
    fixed = ClassDef("fixed", FIXED_SHARE, 5, 0, "--default--")
    dead = replace(A, online=False, stale_free=8)
    d = Machine("nodeD.sim.ducc", "--default--", 7, 28672, "10.0.0.4")
    work = (_work(1, 1, cls="fixed", shares=((1, A.name),)),)
    assert unschedulable_free(_cycle((dead, B, d), work, classes=(NORMAL, fixed))) == {A.name: 6}


def test_machines_two_jobs_of_one_fixed_share_class_left_alike_are_met_in_an_open_order():
    """The real trunk RM (oracle seed 12323, focus wide, scenario 5, epoch 107): np114 holds fixed-share
    jobs 32 (1 quantum) and 35 (2), np121 job 40 (3), all of class fixeda; both are left 9 free and
    share a bucket (3 of 16, and of the clone's 4). Accounting walks class fixeda's jobs in its job
    map (keyed by random ids; howMuchFixed lists them oldest first), so which joined the 9-free map
    first no line says: the RM put new job 42 on np121, rmref, walking 32, 35, 40, on np114. That
    order is a tie of the class's jobs, which the RM's pick is one way of; jobs of a fair-share class,
    whose map order the log shows, leave none."""
    np114 = Machine("np114.sim.ducc", "--default--", 12, 12 * 4096, "10.2.0.15")
    np121 = Machine("np121.sim.ducc", "--default--", 12, 12 * 4096, "10.2.0.22")
    assert {spread(node_hash(m.name, m.ip)) & 15 for m in (np114, np121)} == {3}
    fixed = ClassDef("fixeda", FIXED_SHARE, 5, 0, "--default--")

    def cycle(cls, policy_of_old):
        old = [_work(32, 1, cls=policy_of_old, shares=[(255, np114.name)], work_type="Service"),
               _work(35, 2, cls=policy_of_old, shares=[(283, np114.name)], work_type="Service"),
               _work(40, 3, cls=policy_of_old, shares=[(294, np121.name)], work_type="Service")]
        return _cycle([np114, np121], old + [_work(42, 1, cls=cls, work_type="Service")], classes=(NORMAL, fixed))

    got = what_of_choices(cycle("fixeda", "fixeda"), {32: 1, 35: 1, 40: 1, 42: 1})
    assert [(p.job_id, p.host) for p in got.placements] == [(42, np114.name)]
    assert [(t.job_id, t.hosts, t.got, t.walked_in) for t in got.ties] == [
        (42, (np114.name, np121.name), (1, 0), "fixeda")]
    assert got.ties[0].admits({np121.name: 1})  # the RM's
    settled = what_of_choices(cycle("fixeda", "normal"), {32: 1, 35: 1, 40: 1, 42: 1})
    assert [(p.job_id, p.host) for p in settled.placements] == [(42, np114.name)] and not settled.ties
