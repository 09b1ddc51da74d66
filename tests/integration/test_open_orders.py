"""A decision that rests on a node order a mid-stream log leaves open is no RM divergence (truth.jsonl).

fixtures/cuts/open_order_defrag: an INFO log of the real 3.0.0 RM (oracle seed 12121, focus
fragmentation, scenario 7) cut between two cycles, 95% of the cycles in, audited with its
ducc.classes only. The counters leave eight nodes of order 11 or 32 (alike, or inferences that
fit as well); the one taken gives n11 order 32, where truth has 11 (and n03, taken as 11, 32).
Needy job 31 wants a process of order 31: on n11 as order 32 rmref's takeFromTheRich takes ten
of job 21's processes, where the RM took nothing. The RM is not at fault: the log does not give
n11's order.
"""

from __future__ import annotations

import gzip
import json

from replay import parse
from replay.apps.audit import audit
from replay.model.resources import read_resources
from tests.helpers import FIXTURES

CUT = FIXTURES / "cuts" / "open_order_defrag"


def _audited():
    tables = dict(parse([CUT / "rm.log.gz"]).tables)
    tables.update(read_resources(CUT / "resources"))
    with gzip.open(CUT / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    return audit(tables), records, epochs


def test_a_takeFromTheRich_on_an_open_order_is_left_out_not_a_divergence():
    result, records, epochs = _audited()
    orders = {n["name"]: n["order"] for n in records[epochs[result.cycles[0]]]["nodes"]}
    assert (orders["n11.sim.ducc"], orders["n03.sim.ducc"]) == (11, 32)  # what the log leaves open
    taken = {a.setting: a.value for a in result.assumed}
    assert taken["node n11.sim.ducc"].startswith("order 32 taken of 11 or 32")
    assert not result.divergences, result.divergences[:2]
    # truth: the RM's defragmentation took nothing in any of these cycles
    assert all(not records[epochs[c]]["defrag"]["actions"] for c in result.cycles)
    for kind in ("defrag", "schedule"):
        left_out = result.skipped_kinds.get(kind, {})
        assert set(left_out) == set(result.cycles), kind
        assert all("n11.sim.ducc (taken as order 32, of 11 or 32)" in why for why in left_out.values())
    # what did not diverge stays audited, and agrees with truth
    assert not result.skipped_kinds.get("counts")
    counted = {(c, j): n for c, j, _o, n in result.ref["counts"]}
    given = {(c, j["id"]): j["nshares_given"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert counted and all(given[k] == n for k, n in counted.items())
