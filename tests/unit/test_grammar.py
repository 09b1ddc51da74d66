"""The grammar on an example record body of each family (as the RM writes it), and the fast
paths against it: each vectorised regex gives the row the grammar gives."""

from __future__ import annotations

import polars as pl
import pytest

from replay.parsing import fast
from replay.parsing.grammar import parse_body, parse_header

MACHINE = "node12.example.com        false     3             0             3       48128 <none>"

EXAMPLES = {
    "prj_cap": ("alice O 2 T 148626 NTh 12 TI 18626 TR 12802.5 R 9.3732e-04 QR 1748 P 139 F 1609 "
                "ST 1552572301224 return 403",
                {"user": "alice", "prj_t": "148626", "prj_r": "9.3732e-04", "prj_return": "403"}),
    "prj_cannot_predict": ("mary Cannot predict cap: init_wait true || time_per_item 0.0",
                           {"user": "mary", "init_wait": "true", "time_per_item": "0.0"}),
    "init_job_cap": ("alice O 2 Base cap: 7 Expected future cap: 403 potential cap 7 actual cap 6",
                     {"order": "2", "base_cap": "7", "expected_cap": "403", "potential_cap": "7", "actual_cap": "6"}),
    "connect_share": (f"share node12.example.com.470 order 2 machine   {MACHINE}",
                      {"host": "node12.example.com", "share_id": "470", "order": "2", "m_order": "3",
                       "memory_mb": "48128"}),
    "node_added": ("Nodepool: --default-- Host added: --default-- :  node12.example.com Nodefile: "
                   f"/home/ducc/ducc_runtime/resources/ducc.nodes shares  3 total    6:   {MACHINE}",
                   {"nodepool": "--default--", "host": "node12.example.com", "share_order": "3", "count": "6"}),
    "node_missed": ("*** Missed heartbeat *** node14.example.com count[ 2 ]",
                    {"host": "node14.example.com", "count": "2"}),
    "node_death": ("***Purging machine*** node14.example.com due to missed heartbeats. THreshold: 6",
                   {"host": "node14.example.com", "count": "6"}),
    "node_purge": ("Nodepool: --default-- Host dead: Job purge: node14.example.com",
                   {"nodepool": "--default--", "work_type": "Job", "host": "node14.example.com"}),
    # rearrangeVirtual, as the real RM printed it (seed 31 scenario 058): `count` is the machine's free space
    "node_virtual_fill": ("n08.sim.ducc found a share of size 30 on a machine with only 2 free slots - set free=0",
                          {"host": "n08.sim.ducc", "count": "2"}),
    "node_bad_virtual": ("ERROR: bad virtual machine list. n08.sim.ducc order 0 v_order 0 r_order 32",
                         {"host": "n08.sim.ducc", "count": "0", "share_order": "32"}),
    # findNodepoolByRule at DEBUG (3.0.0 pool_rule): the rule, then the name (or IP) it missed
    "node_rule_miss": ("no match by ip:  rx.* 10.0.0.3", {"text": "ip:  rx.* 10.0.0.3", "host": None}),
    "node_heartbeat": ("0 node12.example.com node12 10.1.2.12", {"host": "node12.example.com", "ip": "10.1.2.12"}),
    "what_of_fair_share": ("Scheduling job in class  normal : 4 shares given, order 2",
                           {"class": "normal", "shares_given": "4", "order": "2"}),
    "how_much_fair_share": ("Scheduling job in class  normal : J______7483                         "
                            "mega-2      alice     normal"
                            "      3     2       6   4     28   1868     1748    false         7",
                            {"job_id": "7483", "type_code": "J", "user": "alice", "shares": "3", "max_processes": "7"}),
    "rmc_wanted": ("countClassShares wantedby.normal =    7   0   7   0 ",
                   {"descr": "countClassShares", "entity": "normal", "values_list": ["7", "0", "7", "0"]}),
    "rmc_names": ("countUserShares entity_names =  alice mary ", {"names_list": ["alice", "mary"]}),
    "frag_row": ("--default--                 mary      3    0       1      1  2 POTENTIALLY NEEDY",
                 {"user": "mary", "pure_fs": "3", "needed": "1", "potentially_needy": "POTENTIALLY NEEDY"}),
    "frag_needy": ("NP: --default-- User:       mary Pure fs:   3 needed   1 O[2] ACTUALLY NEEDY",
                   {"nodepool": "--default--", "user": "mary", "needed": "1", "order": "2"}),
    "evict_row": ("4       4      0     2", {"counted": "4", "current": "4", "needed": "0", "order": "2"}),
    "job_update": ("tot: 1868 Running -> Running compl: 120 err: 0 rem: 1748 mean: 12469.000000 skew: 12802.500000",
                   {"total": "1868", "state_to": "Running", "remaining": "1748", "skew": "12802.500000"}),
    "proc_state": ("Process 31377 node12.example.com.461 State: Initializing -> Running 18626 0",
                   {"pid": "31377", "share_id": "461", "state_to": "Running", "init_ms": "18626"}),
    "proc_new": ("New process  node12.example.com.470 0 Starting <null>", {"share_id": "470", "pid": "<null>"}),
    "fixed_granted": ("+++++ nodepool --default-- class fixed order 2 shares 1Q2", {"class": "fixed", "nqm": "1Q2"}),
    "rich_eligible": ("Eligible machines: node12.example.com ", {"hosts_list": ["node12.example.com"]}),
    "shrink_by": ("Removing share node13.example.com.466", {"host": "node13.example.com", "share_id": "466"}),
}


@pytest.mark.parametrize("family", sorted(EXAMPLES))
def test_catalog_examples_parse(family):
    body, want = EXAMPLES[family]
    rows = parse_body(family, body.strip())
    assert isinstance(rows, list) and len(rows) == 1, rows
    assert {k: rows[0].get(k) for k in want} == want


@pytest.mark.parametrize("family", sorted(f for f in EXAMPLES if f in fast.REGEXES))
def test_fast_regex_gives_the_grammar_row(family):
    body = EXAMPLES[family][0].strip()
    part = pl.DataFrame({"rec": [0], "body": [body]}, schema={"rec": pl.UInt32, "body": pl.String})
    rows, failed = fast.fast_rows(family, part, pl.DataFrame())
    assert failed.height == 0
    got = {k: v for k, v in rows.drop("rec").row(0, named=True).items() if v is not None}
    lark_row = {k: v for k, v in parse_body(family, body)[0].items() if v is not None}
    assert got == lark_row


def test_create_state_example_with_refusal_wrap_and_purge():
    body = (
        "Reservation 7434 45GB \n\tExisting[1]: node11.example.com.1^0 \n\tAdditions[0]: \n\tRemovals[0]: \n"
        "Job 7486 30GB Waiting for defragmentation.\n\tExisting[0]: \n\tAdditions[0]: \n\tRemovals[0]: \n"
        "Job 7490\n\tRefused: User 'carol' not authorized to use class 'fixed'\n"
        "Job 7499 15GB \n\tExisting[12]: " + " ".join(f"n{i:02d}.example.com.{800 + i}^150{i:02d}" for i in range(10))
        + " \n\tn11.example.com.811^15001^P n12.example.com.812^0 "
        "\n\tAdditions[1]: n12.example.com.812^0 \n\tRemovals[0]: "
    )
    rows = parse_body("schedule_state", body)
    refused = [r for r in rows if r.get("job_id") == "7490"]
    why = "User 'carol' not authorized to use class 'fixed'"
    assert refused == [{"work_type": "Job", "job_id": "7490", "reason": why}]
    big = [r for r in rows if r.get("job_id") == "7499" and r.get("kind") == "Existing"]
    assert len(big) == 12 and big[10]["purged"] == "true" and big[10]["init_ms"] == "15001"
    assert [r["reason"] for r in rows if r["job_id"] == "7486"] == ["Waiting for defragmentation."] * 3


def test_occupancy_table_example():
    body = ("Name  Blacklisted Order Active Shares Unused Shares Memory (MB) Jobs\n"
            "-------------------- ------------ ----- ------------- ------------- ----------- ------ ...\n"
            "  node11.example.com        false     3             3             0       48128 7434 \n"
            "  node12.example.com        false     3             2             1       48128 7483 [1]\n"
            "  node14.example.com        false     3             0             3       48128 <none>[3]")
    rows = parse_body("occupancy_table", body)
    assert [(r["m_host"], r.get("m_jobs_list"), r.get("free")) for r in rows] == [
        ("node11.example.com", ["7434"], None), ("node12.example.com", ["7483"], "1"),
        ("node14.example.com", None, "3")]


def test_scheduling_tables_example():
    body = ("Scheduling Tables:\n --------------------------------------------------------------------------------\n"
            "Nodepool --default-- depth 0: \n             Order    0    1    2    3 \n"
            "  nMachinesByOrder    0    0    0    4 \n  vMachinesByOrder    0    0    0    0 \n"
            "    nSharesByOrder    0   12    4    4 \n"
            "--------------------------------------------------------------------------------")
    rows = parse_body("pool_tables", body)
    assert [(r["table_row"], r["values_list"]) for r in rows] == [
        ("nMachinesByOrder", ["0", "0", "0", "4"]), ("vMachinesByOrder", ["0", "0", "0", "0"]),
        ("nSharesByOrder", ["0", "12", "4", "4"])]


def test_header_with_padded_na_and_two_duccid_overload():
    h = parse_header("14 Mar 2019 10:15:32,377  WARN RM.JobManagerConverter - 7483 T[55] reconcileProcess "
                     "471  share not found?")
    assert (h["level"], h["cls"], h["jid"], h["tid"], h["method"], h["body"]) == (
        "WARN", "JobManagerConverter", "7483", "55", "reconcileProcess", "471  share not found?")
    h = parse_header("14 Mar 2019 10:15:32,102  INFO RM.Scheduler - N/A  T[61] schedule  "
                     "Run scheduler 0 with top-level nodepool --default--")
    assert h["jid"] == "N/A" and h["method"] == "schedule"
    assert parse_header("\tExisting[1]: node11.example.com.1^0") is None


def test_a_body_the_grammar_rejects_is_reported_not_raised():
    got = parse_body("init_job_cap", "alice O two Base cap: x")
    assert isinstance(got, str) and got.startswith("init_job_cap:")


@pytest.mark.parametrize(("family", "body", "want"), [
    # upstream NodePool.countFreeableMachines and NodepoolScheduler.takeFromTheRich print these:
    # a host followed by free text (the shapes the bundled corpus logs hold)
    ("freeable_bypass", "Bypass because machine n03.sim.ducc is not freeable",
     {"host": "n03.sim.ducc", "because": "is not freeable"}),
    ("freeable_bypass", "Bypass because machine n01.sim.ducc already counted.",
     {"host": "n01.sim.ducc", "because": "already counted."}),
    # 2.0.x's countFreeableMachines (later releases print "Setting up H for eviction")
    ("freeable_evict", "Setting up n04.sim.ducc to clear for reservation", {"host": "n04.sim.ducc"}),
    ("rich_bypass", "Bypass  n03.sim.ducc : for reservation, machine contains non-preemptable processes",
     {"host": "n03.sim.ducc", "text": "for reservation, machine contains non-preemptable processes"}),
    ("rich_bypass", "Bypass  sub02.sim.ducc : RESERVE policy requires exact match for order",
     {"host": "sub02.sim.ducc", "text": "RESERVE policy requires exact match for order"}),
    ("rich_bypass", "Bypass n03.sim.ducc : too small for request of order 4", {"host": "n03.sim.ducc", "order": "4"}),
])
def test_a_host_then_free_text_parses(family, body, want):
    rows = parse_body(family, body)
    assert isinstance(rows, list) and len(rows) == 1, rows
    assert {k: rows[0].get(k) for k in want} == want
