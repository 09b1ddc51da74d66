"""A fair-share class's cap (ResourceClass.calculateCap) before and after 2.1.0 (UIMA-4569).

fixtures/releases/2.0.0/class-cap-in-gb is the real 2.0.0 RM (oracle seed 11515 --focus wide,
scenario 4, shrunk): one job of class fair2b wants 438 processes of order 1 at a 5 GB quantum, and
in cycle 5 the class is alone with 28 free machines of 15 quanta. Worked by hand: from 2.1.0 the
cap is Integer.MAX_VALUE over the quantum in KB, 2147483647 // (5 * 1048576) = 409 processes; in
2.0.x over the quantum in GB, 2147483647 // 5, no cap at all: the class gets every one of the 420
free quanta, as truth.jsonl and the log's RmCounter block say the 2.0.0 RM gave it.
"""

from __future__ import annotations

import dataclasses

from replay.model.start import replay_start
from rmref.behaviours import for_release
from rmref.cycle import schedule
from tests.helpers import parsed, truth

NAME = "releases/2.0.0/class-cap-in-gb"


def _count(release: str) -> int:
    tables = parsed(NAME).tables
    start = replay_start(tables)
    inp = next(i for i in start.inputs(tables) if i.cycle == 5)
    config = dataclasses.replace(inp.config, behaviours=for_release(release))
    return schedule(dataclasses.replace(inp, config=config)).how_much.counts[1]


def test_before_2_1_0_a_class_has_no_cap_a_cluster_reaches():
    epoch = dict(parsed(NAME).tables["cycles"].select("cycle", "epoch").iter_rows())[5]
    real = next(r for r in truth(NAME) if r["epoch"] == epoch)
    (job,) = [j for j in real["jobs"] if j["id"] == 1]
    assert _count("2.0.0") == _count("2.0.1") == job["nshares_given"] == 420


def test_from_2_1_0_the_cap_is_the_quantum_in_kb():
    assert _count("2.1.0") == _count("trunk") == 2147483647 // (5 * 1024 * 1024) == 409
