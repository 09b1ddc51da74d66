"""Node IPs for the Java RM in the loop where the log shows none (replay.javarm.node_walks).

Before 3.0.0 the RM's log names no node IP, yet the RM walks its machines in the hash order of
their names and IPs: takeFromTheRich prints such a walk, and What Of's placements follow another.
Ground truth: the oracle scenario each fixture's log came from (the IPs the real RM ran with,
scenario.json) and the log's own walks and placements (connectShare lines).

- corpus/midstream_unnamed_in_a_later_band (2.1.0): cycle 154's takeFromTheRich walks pool np1's
  four machines (two of its own, two of subpool np1a): a map cloned from two entries (4 buckets)
  then given two more, so 8 buckets, under which the real IPs put np101 and np102 in one bucket.
  The harness's one IP for every node walked np101 first, and cleared another machine.
- releases/2.0.0/eligible-order: 46 machines walked in a map of 128 buckets, and What Of's first
  placements (job 1's three processes on np114) follow the same hashes in maps of fewer buckets.
"""

from __future__ import annotations

import pytest

from replay.javarm.node_walks import COMMON_IP, freeable_listings, node_ips, rich_listings
from replay.model.logged import logged_decisions
from replay.model.start import bootstrap
from rmref.javahash import node_hash, spread
from tests.helpers import count_assembled, parsed, scenario

CASES = ("corpus/midstream_unnamed_in_a_later_band", "releases/2.0.0/eligible-order")
# logs before 3.0.0 that print walks of node maps: takeFromTheRich's (some across deaths and returns,
# which before 2.1.0 take a machine out of its pool's map) and 2.0.x countFreeableMachines'
PRINTING = (*CASES, "corpus/defrag_rehashed_ties", "releases/2.0.0/a_tiny",
            "releases/2.0.0/clears-another-set-aside", "releases/2.0.0/dead-out-of-tables",
            "releases/2.0.0/reservation-walk", "releases/2.2.2/many-alike-machines", "releases/2.2.2/needy-completed")


def _walks(name: str):
    tables = parsed(name).tables
    boot = bootstrap(tables)
    return rich_listings(tables, boot) + freeable_listings(tables, boot.config.behaviours)


def _walked(hosts: tuple[str, ...], bits: int, ip_of) -> list[int]:
    """Each machine's bucket in the walked map's table under these IPs."""
    return [spread(node_hash(h, ip_of(h))) & ((1 << bits) - 1) for h in hosts]


@pytest.mark.parametrize("name", PRINTING)
def test_the_real_ips_walk_as_printed_in_the_tables_modelled(name):
    """Under the IPs the real RM ran with, every walk of a node map the log prints is in bucket order of
    the table its map had (the modelled capacity: the needy job's pool's machines in its maps then, a
    clone and puts; a map filled as machines arrived): a machine never in a lower bucket than the one met
    before it (one bucket: the order they were put in)."""
    real = {n["name"]: n["ip"] for n in scenario(name)["nodes"]}
    walks = _walks(name)
    assert walks
    for w in walks:
        buckets = _walked(w.hosts, w.bits, real.__getitem__)
        assert buckets == sorted(buckets), (w.cycle, w.bits)


def test_a_clone_of_two_machines_then_two_more_has_8_buckets():
    """Cycle 154's map (np1's two machines cloned, np1a's two put in) has 8 buckets, not HashMap's
    default 16: under the real IPs the printed order is not the buckets' order at 16."""
    name = CASES[0]
    real = {n["name"]: n["ip"] for n in scenario(name)["nodes"]}
    (walk,) = {(w.hosts, w.bits) for w in _walks(name)}
    hosts, bits = walk
    assert hosts == ("np1a01.sim.ducc", "np1a02.sim.ducc", "np101.sim.ducc", "np102.sim.ducc") and bits == 3
    at16 = _walked(hosts, 4, real.__getitem__)
    assert at16 != sorted(at16)


@pytest.mark.parametrize("name", CASES)
def test_the_ips_chosen_walk_and_place_as_the_log(name):
    """The IPs chosen put every printed walk in strictly increasing buckets (one IP for all did not), and
    under them rmref's What Of places every process of every cycle where the log's RM did."""
    tables = parsed(name).tables
    found = node_ips(tables)
    assert found is not None and found.agree == found.placing > 0
    assert not found.hashes.kept_to
    for w in _walks(name):
        chosen = _walked(w.hosts, w.bits, lambda h: found.ip_of.get(h, COMMON_IP))
        assert all(a < b for a, b in zip(chosen, chosen[1:], strict=False))
    w = _walks(name)[0]
    common = _walked(w.hosts, w.bits, lambda h: COMMON_IP)
    assert common != sorted(common)


def test_the_search_reads_no_cycle_past_its_runs(monkeypatch):
    """Each cycle the search reaches costs a run of What Of, so with `budget` runs it reaches the
    first `budget` cycles What Of placed in (the log's connectShare lines) and no further: the log
    is assembled up to the last of those only (a long log's inputs are not held), and the search
    still counts every cycle of the log in which What Of placed, and says it did not search them all."""
    tables = parsed("releases/2.0.0/clears-another-set-aside").tables
    placing = sorted(c for c, placed in logged_decisions(tables).connected.items() if placed)
    assert len(placing) > 3
    assembled = count_assembled(monkeypatch)
    found = node_ips(tables, budget=3)
    assert found is not None and (found.placing, found.agree) == (len(placing), None)
    assert max(assembled) == placing[2], (assembled[-3:], placing[:3])


def test_a_log_that_prints_its_ips_is_left_as_it_is():
    """From 3.0.0 the log names each node's IP: the harness takes those (no IPs chosen)."""
    assert node_ips(parsed("releases/3.0.0/gen12-004").tables) is None
