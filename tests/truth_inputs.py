"""Cycle inputs built from ground truth (truth.jsonl plus the log's bootstrap), for phase tests.

A phase test wants to check one rmref phase alone, without the log-rebuild's own errors mixed in.
truth.jsonl holds the scheduler's state right *after* each published schedule; the state a cycle
*started* from is that state less the shares it added, with a share pending removal only if the
previous schedule already listed it as a removal. The cap chain is taken from truth (`job_cap`),
so `Work.cap_input` here is only a placeholder. The global allotment comes from the fixture's
resources (ducc.properties), independently of what the log rebuild infers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache

from replay.model.start import bootstrap, cycle_inputs
from rmref import CapInput
from rmref.constants import DEAD, VARIED_OFF
from rmref.model import CycleInput, Machine, Share, Work
from tests.helpers import FIXTURES, parsed, truth

UNLIMITED = 2147483647


@dataclass(frozen=True)
class TruthCycle:
    """One cycle's input rebuilt from truth, and the truth record of what the RM then decided."""

    input: CycleInput
    caps: dict[int, int]  # job -> actual cap (truth `job_cap`)
    record: dict


@lru_cache(maxsize=None)
def _log_inputs(name: str) -> dict[int, CycleInput]:
    return {ci.cycle: ci for ci in cycle_inputs(parsed(name).tables)}


@lru_cache(maxsize=None)
def truth_cycles(name: str) -> tuple[TruthCycle, ...]:
    """Every cycle of the fixture as (input, truth caps, truth record).

    The state (machines, shares held and pending removal, the needy list, the work and its
    classes) is truth's. What only the log has is taken from the log's own rebuild of the same
    cycle: the order the RM's maps were filled in (node arrival, the job table), and per process
    whether it had reported initialization and its investment rank.
    """
    boot = bootstrap(parsed(name).tables)
    global_allotment, users = _allotments(name)  # from resources: a check on what the log rebuild infers
    cfg = replace(boot.config, global_allotment=global_allotment, user_allotments=users)
    classes, nodepools = boot.classes, boot.nodepools
    logs = _log_inputs(name)
    ips = {m.name: m.ip for log in logs.values() for m in log.machines}
    out = []
    prev_removals: set[tuple[int, int]] = set()
    prev_status: dict[str, str] = {}
    needy: tuple[int, ...] = ()
    for rec in truth(name):
        log = logs.get(rec["cycle"])
        arrival = {m.name: i for i, m in enumerate(log.machines)} if log else {}
        table = {w.job_id: i for i, w in enumerate(log.work)} if log else {}
        logged_share = {(sh.job_id, sh.share_id): sh for w in log.work for sh in w.shares} if log else {}
        machines = tuple(sorted(
            (Machine(n["name"], n["nodepool"], n["order"], n["memory_kb"] // 1024, ips.get(n["name"], ""),
                     bool(n["online"]), bool(n["blacklisted"]), varied_off=n["status"] == "offline",
                     disabled=_disabled(prev_status.get(n["name"], "online"), n["status"]))
             for n in rec["nodes"]),
            key=lambda m: arrival.get(m.name, len(arrival))))
        prev_status = {n["name"]: n["status"] for n in rec["nodes"]}
        work = []
        for j in sorted(rec["jobs"], key=lambda j: (table.get(j["id"], len(table)), j["id"])):
            added = set(j["added"])
            shares = []
            for sh in j["shares"]:
                if sh["id"] in added:
                    continue
                seen = logged_share.get((j["id"], sh["id"]))
                shares.append(Share(sh["id"], j["id"], sh["host"], sh["order"],
                                    pending_removal=(j["id"], sh["id"]) in prev_removals,
                                    initialized=seen.initialized if seen else True,
                                    init_ms=seen.init_ms if seen else 0, investment=seen.investment if seen else 0,
                                    map_rank=seen.map_rank if seen else 0))
            cap = CapInput(remaining=j["remaining"], threads=1, current=len(shares),
                           max_processes=j["max_shares"], initialized=j["initialized"], projected=0,
                           init_cap=0, expand_by_doubling=False, use_prediction=False,
                           completed=j["completed"], refused=j["refused"])
            work_type = "ManagedReservation" if j.get("ap") else j["type"]
            work.append(Work(j["id"], work_type, j["user"], j["class"], j["order"], j["memory"], cap,
                             submit_seq=j["id"], shares=tuple(shares)))
        inp = CycleInput(rec["cycle"], cfg, classes, nodepools, machines, tuple(work), needy)
        out.append(TruthCycle(inp, {j["id"]: j["job_cap"] for j in rec["jobs"]}, rec))
        prev_removals = {(j["id"], sh) for j in rec["jobs"] for sh in j["preempted"]}
        # the RM's needy list: every job detectFragmentation found potentially needy
        needy = tuple(j["id"] for j in rec["jobs"] if j["in_needy_list"])
    return tuple(out)


def _disabled(before: str, now: str) -> str:
    """Machine.disabled from a node's status in the previous record and in this one: the RM
    disabled it when it died, or when an administrator varied off a machine that was online."""
    if now == "unresponsive" and before != "unresponsive":
        return DEAD
    return VARIED_OFF if now == "offline" and before == "online" else ""


def _allotments(name: str) -> tuple[int, tuple[tuple[str, int], ...]]:
    """ducc.rm.global_allotment (GB) from the fixture's ducc.properties, and the per-user overrides."""
    props = (FIXTURES / name / "resources" / "ducc.properties").read_text()
    found = re.search(r"^\s*ducc\.rm\.global_allotment\s*=\s*(\d+)", props, re.M)
    users = []
    for key, value in parsed(name).tables["config"].select("key", "value").iter_rows():
        if m := re.fullmatch(r"user\.(.+)\.max-allotment", key):
            users.append((m.group(1), int(value)))
    return (int(found.group(1)) if found else UNLIMITED), tuple(sorted(users))


def expected_placements(record: dict) -> Counter:
    """What Of's placements, (job, host, order) with multiplicity, as truth shows them.

    Truth's `added` is the published result of What Of *and* defragmentation, which runs after it:
    a `cancel_pending` share was placed for the donor and taken back (never reaches `added`); a
    `reassign_pending` share was placed for the donor and handed to the needy job (`added` lists
    it under the needy job). Both are put back where What Of placed them.
    """
    out: Counter = Counter()
    for j in record["jobs"]:
        added = set(j["added"])
        out.update((j["id"], s["host"], s["order"]) for s in j["shares"] if s["id"] in added)
    for a in record["defrag"]["actions"]:
        if a["action"] in ("cancel_pending", "reassign_pending"):
            out[(a["donor_job"], a["host"], a["order"])] += 1
        if a["action"] == "reassign_pending":
            out[(a["needy_job"], a["host"], a["order"])] -= 1
    return +out


def removals(record: dict) -> set[tuple[int, str, int]]:
    """(job, host, share id) of every share the published schedule lists as removed."""
    hosts = {(j["id"], s["id"]): s["host"] for j in record["jobs"] for s in j["shares"]}
    return {(j["id"], hosts.get((j["id"], s), "?"), s) for j in record["jobs"] for s in j["preempted"]}


def defrag_evictions(record: dict) -> set[tuple[int, str, int]]:
    """(donor job, host, share id) of the shares defragmentation evicted this cycle."""
    return {(a["donor_job"], a["host"], a["share"]) for a in record["defrag"]["actions"] if a["action"] == "evict"}
