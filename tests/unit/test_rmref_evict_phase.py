"""The eviction phase on hand-worked cycles: shrink, purge, reservation clearing."""

from __future__ import annotations

from rmref.caps import CapInput
from rmref.constants import ALREADY_LEAVING, DEAD, PURGE, PURGE_LEAVING, RESERVATION, SHRINK, VARIED_OFF
from rmref.cycle import publish
from rmref.evictions import evictions, held_count
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work

CAP = CapInput(remaining=100, threads=1, current=0, max_processes=100, initialized=True, projected=0,
               init_cap=0, expand_by_doubling=False, use_prediction=False)
CLASSES = (ClassDef("normal", FAIR_SHARE, 10, 100, "--default--"),
           ClassDef("fixed", FIXED_SHARE, 5, 0, "--default--"),
           ClassDef("reserve", RESERVE, 5, 0, "--default--"))
HOSTS = ("a", "b", "c")


def share(sid: int, job: int, host: str = "a", investment: int = 0, **kw) -> Share:
    return Share(sid, job, host, order=1, investment=investment, **kw)


def job(job_id: int, shares: tuple[Share, ...], cls: str = "normal", work_type: str = "Job") -> Work:
    return Work(job_id, work_type, "alice", cls, 1, 15, CAP, shares=shares)


def cycle(*work: Work, offline: tuple[str, ...] = (), why: str = DEAD) -> CycleInput:
    """Hosts a, b, c; those in `offline` went down (`why`) since the previous cycle ("": earlier)."""
    machines = tuple(Machine(h, "--default--", 4, 61440, online=h not in offline, varied_off=(
        h in offline and why == VARIED_OFF), disabled=why if h in offline else "") for h in HOSTS)
    return CycleInput(1, Config(), CLASSES, (Nodepool("--default--", None),), machines, work)


def taken(evs) -> set[tuple[int, int, str]]:
    return {(e.job_id, e.share_id, e.reason) for e in evs}


def test_a_job_counted_2_holding_4_loses_the_2_least_invested():
    j = job(1, (share(1, 1, investment=900), share(2, 1, investment=100),
                share(3, 1, investment=500), share(4, 1, investment=50)))
    assert taken(evictions(cycle(j), {1: 2})) == {(1, 4, SHRINK), (1, 2, SHRINK)}


def test_an_initializing_process_goes_before_any_initialized_one():
    j = job(1, (share(1, 1, investment=0), share(2, 1, initialized=False, init_ms=60000),
                share(3, 1, initialized=False, init_ms=5000)))
    assert taken(evictions(cycle(j), {1: 1})) == {(1, 3, SHRINK), (1, 2, SHRINK)}


def test_a_non_preemptable_fixed_share_job_is_never_shrunk():
    fixed = job(1, (share(1, 1), share(2, 1)), cls="fixed")
    reserve = job(2, (share(3, 2, host="b"),), cls="reserve", work_type="Reservation")
    assert evictions(cycle(fixed, reserve), {1: 0, 2: 0}) == ()


def test_a_job_at_or_under_its_count_or_not_counted_keeps_everything():
    j1 = job(1, (share(1, 1), share(2, 1)))
    j2 = job(2, (share(3, 2),))
    assert evictions(cycle(j1, j2), {1: 2}) == ()
    assert evictions(cycle(j1, j2), {1: 5, 2: 1}) == ()


def test_shares_already_pending_removal_are_not_held():
    """Counted 3, holding 4 of which 1 is already leaving: nothing more to give up."""
    j = job(1, (share(1, 1, investment=9), share(2, 1, investment=8), share(3, 1, investment=7),
                share(4, 1, investment=1, pending_removal=True)))
    assert held_count(j) == 3
    assert evictions(cycle(j), {1: 3}) == ()


def test_shrink_by_re_picks_a_share_already_leaving():
    """shrinkBy sorts every assigned share, the leaving one included: over by 1, the least invested
    share is the one already leaving, so the RM marks it again and nothing new goes this cycle."""
    j = job(1, (share(1, 1, investment=9), share(2, 1, investment=8), share(3, 1, investment=7),
                share(4, 1, investment=1, pending_removal=True)))
    assert taken(evictions(cycle(j), {1: 2})) == {(1, 4, ALREADY_LEAVING)}
    # over by 2: the leaving share and the next least invested, of which only the latter is new
    assert taken(evictions(cycle(j), {1: 1})) == {(1, 4, ALREADY_LEAVING), (1, 3, SHRINK)}


def test_a_dead_host_purges_its_work_but_not_reservations_and_the_purge_counts_against_the_overage():
    j = job(1, (share(1, 1, host="a", investment=900), share(2, 1, host="b", investment=1),
                share(3, 1, host="b", investment=2)))
    res = job(2, (share(4, 2, host="a"),), cls="reserve", work_type="Reservation")
    got = taken(evictions(cycle(j, res, offline=("a",)), {1: 1, 2: 1}))
    # the purge of share 1 leaves the job 1 over its count: its least invested share goes
    assert got == {(1, 1, PURGE), (1, 2, SHRINK)}


def test_a_host_that_dies_purges_a_share_already_leaving_once_more():
    """NodePool.disable walks every share the machine holds: a share shrinkBy took in an earlier
    cycle (still listed in Removals) is purged again, as the RM logs it (seed 31 scenarios 019
    and 111: "Host dead: Service purge" for a share already in the Removals). It was not held and
    its removal was published before, so nothing new goes: job 1, counted 1, keeps its share on b."""
    j = job(1, (share(1, 1, host="a", pending_removal=True), share(2, 1, host="b")))
    got = evictions(cycle(j, offline=("a",)), {1: 1})
    assert taken(got) == {(1, 1, PURGE_LEAVING)}
    assert publish((), got, ()) == {}


def test_a_host_down_since_an_earlier_cycle_purges_nothing_more():
    """disable runs once, when the host dies or is varied off; later cycles only see its shares
    leave."""
    j = job(1, (share(1, 1, host="a", pending_removal=True), share(2, 1, host="b")))
    assert evictions(cycle(j, offline=("a",), why=""), {1: 1}) == ()


def test_a_varied_off_host_keeps_its_fixed_work_and_a_dead_one_does_not():
    fair = job(1, (share(1, 1, host="a"), share(2, 1, host="b")))
    fixed = job(2, (share(3, 2, host="a"),), cls="fixed", work_type="Service")
    assert taken(evictions(cycle(fair, fixed, offline=("a",), why=VARIED_OFF), {1: 1, 2: 1})) == {(1, 1, PURGE)}
    assert taken(evictions(cycle(fair, fixed, offline=("a",)), {1: 1, 2: 1})) == {(1, 1, PURGE), (2, 3, PURGE)}


def test_clearing_a_host_for_a_reservation_takes_only_what_an_over_count_job_must_lose():
    over = job(1, (share(1, 1, host="c", investment=900), share(2, 1, host="c", investment=800),
                   share(3, 1, host="a", investment=1)))
    at_count = job(2, (share(4, 2, host="c"),))
    got = taken(evictions(cycle(over, at_count), {1: 2, 2: 1}, clear_hosts=("c",)))
    # job 1 is over by one: the share on the cleared host goes instead of its least invested one
    assert got == {(1, 1, RESERVATION)}
