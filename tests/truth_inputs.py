"""Cycle inputs built from ground truth (truth.jsonl plus the log's bootstrap), for phase tests.

A phase test wants to check one rmref phase alone, without the log-rebuild's own errors mixed in.
truth.jsonl holds the scheduler's state right *after* each published schedule; the state a cycle
*started* from is that state less the shares it added, with a share pending removal only if the
previous schedule already listed it as a removal. The cap chain is taken from truth (`job_cap`),
so `Work.cap_input` here is only a placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import polars as pl

from rmref import CapInput
from rmref.model import ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work
from tests.conftest import parsed, truth

UNLIMITED = 2147483647


@dataclass(frozen=True)
class TruthCycle:
    """One cycle's input rebuilt from truth, and the truth record of what the RM then decided."""

    input: CycleInput
    caps: dict[int, int]  # job -> actual cap (truth `job_cap`)
    record: dict


def _int(value, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def bootstrap(name: str) -> tuple[Config, tuple[ClassDef, ...], tuple[Nodepool, ...], dict[str, str]]:
    """Configuration, classes, nodepools and host IPs from the fixture's INFO log."""
    tables = parsed(name).tables
    config = dict(tables["config"].select("key", "value").iter_rows())
    pools = tables["nodepools"]
    quantum = pools["quantum"].drop_nulls()
    cfg = Config(
        quantum_gb=int(quantum[0]) if len(quantum) else 15,
        fragmentation_threshold=_int(config.get("fragmentation threshold"), 8),
        defragmentation=str(config.get("do defragmentation", "true")).lower() == "true",
    )
    classes = tuple(
        ClassDef(
            name=r["name"], policy=r["policy"], priority=r["priority"], weight=r["weight"] or 0,
            nodepool=r["nodepool"], init_cap=r["init_cap"] or 0,
            expand_by_doubling=bool(r["expand_by_doubling"]), prediction=bool(r["prediction"]),
            prediction_fudge=r["prediction_fudge"] or 0, cap=_int(r["cap"], UNLIMITED),
            max_allotment=_int(r["max_allotment"], UNLIMITED),
        )
        for r in tables["classes"].iter_rows(named=True)
    )
    nodepools = tuple(Nodepool(r["name"], r["parent"], r["search_order"] or 100)
                      for r in pools.iter_rows(named=True))
    ips = dict(tables["nodes"].filter(pl.col("ip").is_not_null()).select("host", "ip").unique("host", keep="first").iter_rows())
    return cfg, classes, nodepools, ips


@lru_cache(maxsize=None)
def truth_cycles(name: str) -> tuple[TruthCycle, ...]:
    """Every cycle of the fixture as (input, truth caps, truth record)."""
    cfg, classes, nodepools, ips = bootstrap(name)
    out = []
    prev_removals: set[tuple[int, int]] = set()
    needy: tuple[int, ...] = ()
    for rec in truth(name):
        machines = tuple(
            Machine(n["name"], n["nodepool"], n["order"], n["memory_kb"] // 1024, ips.get(n["name"], ""),
                    bool(n["online"]), bool(n["blacklisted"]))
            for n in rec["nodes"]
        )
        work = []
        for j in rec["jobs"]:
            added = set(j["added"])
            shares = tuple(
                Share(s["id"], j["id"], s["host"], s["order"], pending_removal=(j["id"], s["id"]) in prev_removals)
                for s in j["shares"] if s["id"] not in added
            )
            cap = CapInput(remaining=j["remaining"], threads=1, current=len(shares),
                           max_processes=j["max_shares"], initialized=j["initialized"], projected=0,
                           init_cap=0, expand_by_doubling=False, use_prediction=False,
                           completed=j["completed"], refused=j["refused"])
            work.append(Work(j["id"], j["type"], j["user"], j["class"], j["order"], j["memory"], cap,
                             submit_seq=j["id"], shares=shares))
        inp = CycleInput(rec["cycle"], cfg, classes, nodepools, machines, tuple(work), needy)
        out.append(TruthCycle(inp, {j["id"]: j["job_cap"] for j in rec["jobs"]}, rec))
        prev_removals = {(j["id"], s) for j in rec["jobs"] for s in j["preempted"]}
        needy = tuple(sorted(int(k) for k in rec["defrag"]["needy"]))
    return tuple(out)
