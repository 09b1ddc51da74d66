"""The order search for node IPs a 2.x log does not show (rmref.node_order), on a hand-built cycle.

Three machines alike (8 quanta free, one pool), three fair-share jobs of one class, oldest first:
J1 (order 4), J2 (order 4), J3 (order 8), one process each. Worked by hand from the RM's What Of
(seed 000, "What Of" and "Virtual Machines"; NodePool.findShares walks the free-space tables from
the job's order up, in HashMap order, and rearrangeVirtual moves a machine to the table of its new
free space):

- J1 finds no machine with 4 free and takes the first machine X met among the three with 8 free;
  X now has 4 free;
- J2 finds X in the table of 4 free and stacks on it;
- J3 takes the first machine Y met among the two left with 8 free.

So the RM's hosts can be J1, J2 on X and J3 on Y for any X != Y, each by an order of the node map
(X first, then Y before the third), and never J1 and J2 on different machines.
"""

from __future__ import annotations

from dataclasses import replace

import rmref.node_order as node_order
from rmref.javahash import node_hash, spread
from rmref.model import CycleInput, Machine
from rmref.node_ips import ips_reproducing
from rmref.node_order import ORDER_BUDGET, order_reproducing, top_capacity
from rmref.whatof import what_of
from tests.unit.test_rmref_behaviours import _cycle, _work

M1, M2, M3 = (Machine(f"m{i}.sim.ducc", "--default--", 8, 32768) for i in (1, 2, 3))
COUNTS = {1: 1, 2: 1, 3: 1}


def _inp(release: str = "2.2.2", machines: tuple[Machine, ...] = (M1, M2, M3)) -> CycleInput:
    return _cycle(release, machines, (_work(1, 4, "normal"), _work(2, 4, "normal"), _work(3, 8, "normal")))


def _placed(inp: CycleInput, ips: dict[str, str] | None = None) -> list[tuple[int, str]]:
    if ips is not None:
        inp = replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines))
    return [(p.job_id, p.host) for p in what_of(inp, COUNTS)]


# the RM's choice: X = m3 (the last to arrive), Y = m2; with no IP rmref meets m2 first
RM = {1: [M3.name], 2: [M3.name], 3: [M2.name]}


def test_without_ips_rmref_meets_another_machine_first():
    assert _placed(_inp()) == [(1, M2.name), (2, M2.name), (3, M1.name)]


def test_the_order_search_finds_ips_giving_the_rms_hosts():
    ips = order_reproducing(_inp(), COUNTS, RM)
    assert ips is not None and set(ips) == {M1.name, M2.name, M3.name}
    assert _placed(_inp(), ips) == [(1, M3.name), (2, M3.name), (3, M2.name)]
    assert ips_reproducing(_inp(), COUNTS, RM) is not None


def test_every_choice_of_x_and_y_is_found_and_an_impossible_one_is_not():
    names = (M1.name, M2.name, M3.name)
    for x in names:
        for y in names:
            if x != y:
                ips = order_reproducing(_inp(), COUNTS, {1: [x], 2: [x], 3: [y]})
                assert ips is not None and _placed(_inp(), ips) == [(1, x), (2, x), (3, y)], (x, y)
    # J2 stacks on J1's machine: no order splits them
    split = {1: [M3.name], 2: [M1.name], 3: [M2.name]}
    assert order_reproducing(_inp(), COUNTS, split) is None
    assert ips_reproducing(_inp(), COUNTS, split) is None


def test_the_search_runs_what_of_at_most_its_budget(monkeypatch):
    runs = []

    def counted(*args: object, **kwargs: object) -> object:
        runs.append(1)
        return what_of(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(node_order, "what_of", counted)
    assert order_reproducing(_inp(), COUNTS, {1: [M3.name], 2: [M1.name], 3: [M2.name]}) is None
    assert 1 < len(runs) <= ORDER_BUDGET
    runs.clear()
    assert order_reproducing(_inp(), COUNTS, RM, budget=1) is None  # rmref's own order only
    assert len(runs) == 1


def test_the_ips_hash_to_the_order_found():
    """Every map of the cycle has at most top_capacity(3) = 8 buckets; the search gives the machines
    the bucket values 0, 1, 2 in the order found: m3 (met first by J1), m2 (by J3), m1."""
    ips = order_reproducing(_inp(), COUNTS, RM)
    assert ips is not None and top_capacity(3) == 8
    assert [spread(node_hash(n, ips[n])) & 7 for n in (M3.name, M2.name, M1.name)] == [0, 1, 2]


def test_a_log_with_ips_never_gets_ips_invented():
    assert ips_reproducing(_inp("3.0.0"), COUNTS, RM) is None  # the release logs them
    known = tuple(replace(m, ip=f"10.0.0.{i}") for i, m in enumerate((M1, M2, M3), 1))
    assert ips_reproducing(_inp("2.2.2", known), COUNTS, RM) is None  # the input has them
