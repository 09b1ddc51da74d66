"""takeFromTheRich's first round meets the machines its sorter ties in the order its log line prints.

fixtures/releases/2.0.0/eligible-order is the real 2.0.0 RM (oracle seed 11515 --focus wide,
scenario 4, shrunk to 10 pieces of work, 54 nodes, 8 cycles). EligibleMachineSorter ranks the
eligible machines by their richest owner's wealth, then by memory; machines equal on both keep the
order of the pool's node map, hashed on IPs a 2.x log never prints. Each takeFromTheRich call
prints the order its first round meets them in (`Eligible machines:`, INFO).

Cycle 7: jobs 10 (order 10) and 9 (order 8) are actually needy, one process each, and job 2's
order-5 processes are the only ones to take. Job 10's second call (rich and poor donors) prints
`n38 n05 n20`, three machines of 12 quanta and one memory: the RM clears share 8 on n38 for it,
then job 9's call finds only n05 and clears shares 128 and 129 there (truth.jsonl's actions). rmref
met n05 first for job 10 and cleared 128 and 129 for it, which left job 9 nothing: a divergence
against the log (n38.8 not taken) and against truth. Read in the printed order, the tie is no
open choice and rmref clears what the RM cleared, for the job it cleared it for.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl
import pytest

from replay.apps.audit import audit
from replay.model.logged import logged_decisions
from tests.helpers import parsed, truth

NAME = "releases/2.0.0/eligible-order"
CYCLE = 7
LEVELS = ("rm.log", "rm-debug.log")


@lru_cache(maxsize=None)
def _audited(level: str):
    tables = parsed(NAME, level).tables
    return tables, audit(tables)


def _truth_actions(tables: pl.DataFrame) -> dict[int, list[tuple[int, int, str, int]]]:
    """Per cycle, truth.jsonl's defragmentation actions as (needy job, donor job, host, share; 0
    for a new process)."""
    cycle_of = {e: c for c, e in tables["cycles"].select("cycle", "epoch").iter_rows()}
    return {cycle_of[r["epoch"]]: [(a["needy_job"], a["donor_job"], a["host"],
                                    a["share"] if a["action"] == "evict" else 0) for a in r["defrag"]["actions"]]
            for r in truth(NAME) if r.get("defrag", {}).get("actions") and r["epoch"] in cycle_of}


@pytest.mark.parametrize("level", LEVELS)
def test_every_cycles_defragmentation_is_truths(level):
    tables, result = _audited(level)
    assert not result.divergences
    ours: dict[int, list[tuple[int, int, str, int]]] = {}
    for c, needy, donor, host, share, _why in result.ref["defrag"]:
        ours.setdefault(c, []).append((needy, donor, host, share))
    expected = _truth_actions(tables)
    assert CYCLE in expected
    assert ours == expected


@pytest.mark.parametrize("level", LEVELS)
def test_the_first_round_meets_the_ties_in_the_printed_order(level):
    tables, result = _audited(level)
    searched = logged_decisions(tables).searched[CYCLE]
    actions = [r for r in result.ref["defrag"] if r[0] == CYCLE]
    firsts: dict[int, str] = {}
    for _c, needy, _donor, host, _share, _why in actions:
        firsts.setdefault(needy, host)
    # each needy job's first clearing is on the first machine its last call printed
    assert firsts and all(host == searched[needy][-1][0] for needy, host in firsts.items())
    # and it is no open choice: the log settles it
    assert not [v for v in result.verified if v.cycle == CYCLE and v.decision == "defrag"]
