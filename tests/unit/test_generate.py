"""The scenario generator's wide focus draws what docs/oracle.md says it draws."""

from __future__ import annotations

import re

from tests.oracle.generate import generate, scenario_seed


def _job_orders(scen: dict, quantum: int) -> dict[str, set[int]]:
    """Share orders of each class's jobs: memory over the quantum, rounded up (Scheduler.calcShareOrder)."""
    out: dict[str, set[int]] = {}
    for w in scen["work"]:
        if w["type"] == "job":
            out.setdefault(w["class"], set()).add(-(-w["memory_gb"] // quantum))
    return out


def test_wide_runs_three_to_five_orders_side_by_side_in_a_class():
    """20-130 nodes, 200-460 cycles; each fair-share class in the default pool tree draws 3-5 share
    orders (fewer only when its tree's largest node allows fewer) and its jobs use only those."""
    seen_three = False
    for i in range(8):
        scen = generate(scenario_seed(9, i), "wide")
        assert 20 <= len(scen["nodes"]) <= 130
        assert 200 <= scen["max_cycles"] <= 460
        quantum = int(scen["properties"]["ducc.rm.share.quantum"])
        drawn = {c: {int(o) for o in orders.split(", ")}
                 for c, orders in re.findall(r"(\S+) orders \[([\d, ]+)\]", scen["description"])}
        assert drawn
        used = _job_orders(scen, quantum)
        for klass, orders in drawn.items():
            assert len(orders) <= 5
            if "alt" not in klass:  # (the alt pool may set a quantum of its own)
                assert used[klass] <= orders
                seen_three |= len(used[klass]) >= 3
    assert seen_three


def test_a_seed_gives_the_same_scenario():
    """Deterministic: the same seed and focus give the same scenario."""
    assert generate(scenario_seed(3, 7), "wide") == generate(scenario_seed(3, 7), "wide")
