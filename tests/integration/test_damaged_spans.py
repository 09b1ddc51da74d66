"""Spans lost from a bundled log (tests/damaged.py `spliced`), as a bad copy leaves it: the log
ends inside a cycle, two lines cut at either end of the span run together, a node's death and
return and a job's submission fall on the far side of a gap.

Ground truth: truth.jsonl, the real RM's state after every published schedule, says the RM agreed
with itself in every cycle of these logs. So no divergence may be reported on a damaged copy: the
cycles the damage touches are `input damaged` or not audited, with the reason said, and every
audited cycle's counts are truth's (`agrees_with_truth`). Each span was found by cutting the
bundled logs at random byte offsets; each case failed (an RM divergence, or a traceback) before
its fix.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from replay import parse
from replay.apps.audit import audit
from replay.cli import main
from replay.model.damage import (
    BAD_BYTES, GAP, NUL, SECOND_SCHEDULE, SHORT_BLOCK, UNENTERED, UNKNOWN_METHOD, UNPARSED, UNRETURNED, between_gaps,
    damaged_cycles,
)
from replay.model.inputs import job_descriptions
from replay.model.leaving import starts_midstream
from replay.model.machines.inventory import dead_before_log, disabled_before_log
from replay.model.machines.liveness import liveness_events
from replay.model.published import PublishedShares, published_schedule
from replay.model.settings import infer_global_allotment
from replay.model.start import bootstrap, machine_inventory
from replay.model.stranded import Stranded
from replay.parsing.store import ParquetTables, all_columns
from tests.cuts import Cut
from tests.damaged import agrees_with_truth, lines, spliced
from tests.helpers import log_path, scenario, truth


def garbled(name: str, out: Path, start: int, stop: int) -> Path:
    """The fixture's INFO log with the random bytes of `tests.cuts` spliced in at `start` (as many
    as `stop - start`), as the cut's report line names them."""
    out.write_bytes(Cut(out, "garbage", start, stop).apply(b"".join(lines(name))))
    return out


def _audited(name: str, log: Path):
    tables = parse([log]).tables
    result = audit(tables)
    agrees_with_truth(name, tables, result)
    return tables, result


def test_a_log_that_ends_inside_a_cycle_leaves_that_cycle_unaudited(tmp_path):
    # a_tiny up to its 10th cycle's "Scheduling loop returns" line, not included: every record is
    # whole (a record cut short is unparsed, and damages its cycle anyway), the cycle is not
    text = b"".join(lines("a_tiny"))
    sent = [m.end() for m in re.finditer(rb"Schedule sent to Orchestrator\n", text)]
    returns = text.index(b"Scheduling loop returns", sent[9])
    log = tmp_path / "ends.log"
    log.write_bytes(text[:text.rindex(b"\n", 0, returns) + 1])
    tables, result = _audited("a_tiny", log)
    last = tables["cycles"]["cycle"].max()
    assert last == 10 and [r for r, *_ in result.damaged[last].reasons] == [UNRETURNED]
    assert sorted(result.cycles) == list(range(1, 10))


def test_two_lines_run_together_are_an_unparsed_line(tmp_path):
    # the span ends inside a doEvictions line: what is left of it, "...  INFO" + "ult--)", begins
    # with a time stamp but is no record; it follows a generic message, which takes continuation
    # lines, so only its time stamp gives it away
    name = "corpus/fixed_classes_map_order"
    log = spliced(name, tmp_path / "joined.log", 17459, 17930)
    joined = log.read_bytes().splitlines()[146]
    assert joined == b"01 Jan 2015 00:01:00,000  INFOult--)"
    tables, result = _audited(name, log)
    unparsed = tables["unparsed"]
    assert unparsed.select("line", "cycle").rows() == [(147, 1)]
    assert unparsed["reason"][0].startswith("unexpected line inside a NodePool.reset record")
    assert [r for r, *_ in result.damaged[1].reasons] == [UNPARSED]
    for engine in ("polars", "lark"):
        other = parse([log], engine=engine).tables
        for table in tables:
            assert_frame_equal(tables[table], other[table], check_exact=True)


def test_a_node_that_dies_and_returns_after_a_gap_was_alive_at_its_start(tmp_path):
    # after the gap n02 is first heard from, then dies (epoch 65), then returns: it was alive when
    # the audit starts again, and the RM places job 8 on it at epoch 34
    name = "heldout/seed47-000"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 210783, 384068))
    assert result.damaged and 15 in result.cycles


def test_a_death_before_a_return_is_no_death_before_the_log():
    # a dies, then returns: alive when the log began; b and c first come back: dead then
    nodes = pl.DataFrame({"host": ["a", "b", "a", "b", "c", "a"],
                          "event": ["heartbeat", "recover_node", "death", "death", "reactivate", "recover_node"]})
    assert dead_before_log({"nodes": nodes}) == {"b", "c"}


def test_work_whose_class_a_gap_hid_is_not_audited(tmp_path):
    # job 4, a reservation of class rsva deferred for want of hosts, was submitted before the gap;
    # after it no line names its class, and every phase reads a job's class
    name = "heldout/seed47-060"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 1036816, 1219123))
    hidden = {c for c, why in result.skipped.items() if why.startswith("the class of job 4 is not in the log")}
    after = {c for c in tables["cycles"]["cycle"].to_list() if c > max(result.damaged)}
    assert len(hidden) == 105 and hidden <= after


def test_a_cycle_whose_loop_entry_is_lost_is_damaged_and_the_audit_starts_again_after_it(tmp_path):
    # the span takes epoch 35's "Entering scheduling loop" line and a process's state change; the
    # line left, a reconcileProcess whose body runs into a class name, has no known shape. It is
    # a line of cycle 30 all the same, and what the log said before the span (a machine's use) is
    # no evidence after it: cycle 31 is audited as the first of a log that starts mid-stream
    name = "corpus/purge_of_leaving_shares"
    tables, result = _audited(name, spliced(name, tmp_path / "lost.log", 199799, 208910))
    assert tables["unparsed"].select("line", "cycle").rows() == [(1440, 30)]
    assert tables["unparsed"]["reason"][0] == ("known message JobManagerConverter.reconcileProcess with a body of "
                                                "no known shape")
    assert [r for r, *_ in result.damaged[30].reasons] == [UNPARSED, UNENTERED]
    assert 31 in result.cycles


def test_an_rmcounter_block_whose_lines_are_lost_damages_its_cycle(tmp_path):
    # 2.2.2's a_tiny: the span takes the lines of cycle 6's first countClassShares block after its
    # Start line (every block the RM prints names its entities, weights, wants, machines and max
    # order: none of the 186 bundled logs has one without), and what is left of its last line runs
    # into a defragmentation line: "apportion_qFullEviction", a method NodepoolScheduler never logs
    name = "releases/2.2.2/a_tiny"
    tables, result = _audited(name, spliced(name, tmp_path / "block.log", 74620, 80622))
    assert [r for r, *_ in result.damaged[6].reasons] == [UNKNOWN_METHOD, SHORT_BLOCK]
    assert tables["rmcounter"].filter(pl.col("entity").is_null())["cycle"].to_list() == [6]


def test_a_parse_directory_finds_a_short_rmcounter_block_without_reading_the_vectors_whole(tmp_path, monkeypatch):
    # the same span, parsed to a directory: its damage is the in-memory tables' (cycle 6's short
    # block), found with the null check pushed into the read, so the blocks' vectors (tens of MB on
    # a long log) are never whole in memory for it
    name = "releases/2.2.2/a_tiny"
    log = spliced(name, tmp_path / "block.log", 74620, 80622)
    assert main(["parse", str(log), "-o", str(tmp_path / "out")]) == 0
    narrowed: list[tuple[str, tuple[str, ...]]] = []
    read = ParquetTables.narrow
    monkeypatch.setattr(ParquetTables, "narrow", lambda self, table, columns: (
        narrowed.append((table, tuple(columns))) or read(self, table, columns)))
    on_disk = damaged_cycles(ParquetTables(tmp_path / "out", all_columns()))
    assert on_disk == damaged_cycles(parse([log]).tables)
    assert on_disk[6].reasons[1][0] == SHORT_BLOCK
    assert not [columns for table, columns in narrowed if table == "rmcounter" and "wanted" in columns]


def test_a_line_cut_inside_its_time_stamp_is_unparsed_too(tmp_path):
    # the cut falls after "01 Jan 2015 00:29": the line left begins with the date, not a whole stamp
    name = "heldout/seed47-160"
    log = spliced(name, tmp_path / "stamp.log", 2381608, 2388191)
    tables, result = _audited(name, log)
    joined = tables["unparsed"].filter(pl.col("text").str.starts_with("01 Jan 2015 00:29heduler"))
    assert joined.height == 1 and joined["cycle"][0] in result.damaged


def test_a_cut_rmcounter_block_tells_the_machines_nothing(tmp_path):
    # g_reservations_services: a block cut short (no vmachines) used to end the audit in a TypeError
    # while the machines were inferred from the first priority band's blocks
    name = "g_reservations_services"
    _audited(name, spliced(name, tmp_path / "band.log", 1065464, 1086190))


def test_what_each_part_between_gaps_assumed_is_printed_once(tmp_path, capsys):
    # the parts before and after the gap each list what they assumed (the settings, read from the
    # whole log, alike): each is printed once
    name = "heldout/seed47-060"
    log = spliced(name, tmp_path / "gap.log", 1036816, 1219123)
    assert main(["audit", str(log), "--no-cache", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    block = out[out.index("assumed or inferred"):].split("\n\n")[0].splitlines()[1:]
    block = [line for line in block if line.startswith("  ")]
    assert any("ducc.rm.global_allotment" in line for line in block)
    assert len(block) == len(set(block))


def test_jobs_listed_by_a_class_no_line_names_are_no_evidence_of_a_tie(tmp_path):
    # after each span, jobs submitted before it have no submission row: grouped under one unknown
    # class, a fixed-share class's and a reservation class's counting lines read as one listing out
    # of id order, a tie of every job with job 1 (the RM's counting lines name each job's class)
    name = "corpus/needy_submission_tie"
    for start, stop in ((387675, 582180), (836734, 951761)):
        _audited(name, spliced(name, tmp_path / f"tie{start}.log", start, stop))


@pytest.mark.parametrize(("name", "start", "stop"), [
    ("releases/2.0.0/varyoff-return", 1526810, 1721811),
    ("releases/2.0.0/purge-stops", 101729, 222844),
])
def test_machines_only_the_occupancy_table_names_after_a_gap_are_there(tmp_path, name, start, stop):
    # the real 2.0.0 RM: the span takes the arrival of every node (cycle 1) and the first cycles;
    # after it, machines that hold nothing are named by the occupancy table alone (the 2.0.0 RM
    # prints it at INFO), though every counter of their pool counts them: 7 of order 1
    # (varyoff-return), n02 of order 63 (purge-stops). Not taken as there, How Much divided less
    # free space than the RM's (a vary-off after the gap took the rest), and then every cycle after
    # the gap was audited for caps only. Listed, they are there, sized by the table: the cycles
    # after the gap are audited for the machines, and every decision is truth's (`_audited`)
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", start, stop))
    after = [c for c in result.cycles if c > max(result.damaged)]
    # (a cycle's evictions may still wait on whether a process there before the gap had reported)
    assert after and not any(c in result.skipped_kinds.get(k, {}) for k in ("counts", "placements") for c in after)
    listed = set(tables["occupancy"]["host"]) - set(tables["schedule"]["host"].drop_nulls())
    assert listed  # the precondition: machines no line but the table names
    said = [a.value for a in result.assumed if a.setting == "nodes"]
    assert said and all(v.endswith("there before the log began, all sized by the log") for v in said), said


def test_a_schedule_whose_send_line_is_lost_damages_the_cycle_it_falls_in(tmp_path):
    # the span runs from epoch 23's counters to epoch 37's schedule: that loop's "Schedule sent"
    # line is lost, so its schedule (jobs 2 and 3, submitted in the span: no line gives their
    # memory) reads as a second schedule of the cycle before, which used to end in a TypeError
    name = "releases/2.0.0/reservation-walk"
    tables, result = _audited(name, spliced(name, tmp_path / "sent.log", 183620, 383370))
    assert [r for r, *_ in result.damaged[17].reasons] == [SECOND_SCHEDULE]
    assert result.damaged[17].first[2] == 1706 and sorted(result.cycles) == list(range(1, 17))


def test_an_allotment_deferral_names_its_user_when_the_submission_is_lost(tmp_path):
    # after the gap no line submits job 6 of dan, whose own allotment (ducc.users: 32 GB) its
    # deferrals print: it is no evidence of the global allotment, which the scenario leaves unset.
    # Taken for it, rmref deferred job 14 of ann in cycle 28, where the RM gave it a process
    name = "heldout/seed47-030"
    log = spliced(name, tmp_path / "gap.log", 216075, 394976)
    tables = parse([log]).tables
    after = between_gaps(tables, max(damaged_cycles(tables)), None)
    assert infer_global_allotment(after, {"dan", "eve", "gus"}).value == "2147483647"
    result = audit(tables)
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())[28]
    want = {j["id"]: j["nshares_given"] for r in truth(name) if r["epoch"] == epoch for j in r["jobs"]}
    assert [n for c, job, _o, n in result.ref["counts"] if (c, job) == (28, 14)] == [want[14]] == [1]
    assert not [d for d in result.divergences if d.decision == "counts"]


def test_a_bad_byte_in_the_rms_own_method_name_damages_its_cycle(tmp_path):
    # one random byte (0xCA) inside "whatOfFairShare": a lone bad byte is read as U+FFFD (a name
    # in a legacy encoding), but no user names the RM's methods, and job 12's counting line, now
    # a message of no method the RM has, told the RM's count of nothing
    name = "heldout/seed47-030"
    log = garbled(name, tmp_path / "byte.log", 980332, 980333)
    tables, result = _audited(name, log)
    assert list(result.damaged) == [52] and [r for r, *_ in result.damaged[52].reasons] == [BAD_BYTES]
    assert result.damaged[52].first[2] == 8742


def test_a_bad_virtual_machine_list_line_sizes_its_node(tmp_path):
    # after the gap np2a01 (order 80) is varied off and holds work: no line but rearrangeVirtual's
    # "bad virtual machine list. np2a01.sim.ducc order 5 v_order 75 r_order 80" states its order,
    # and its free space (75) used to index a table of an unsized machine (an IndexError)
    name = "corpus/bad_machine_list_keeps_counts"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 40263, 83911))
    part = between_gaps(tables, max(result.damaged), None)
    node = next(h for h in machine_inventory(part, bootstrap(part)).hosts if h.name == "np2a01.sim.ducc")
    orders = {n["name"]: n["order"] for r in truth(name) for n in r["nodes"]}
    assert node.order == orders["np2a01.sim.ducc"] == 80 and node.evidence.startswith("bad virtual machine list")


def test_processes_whose_report_the_log_after_a_restart_does_not_show_leave_shrinkby_unaudited(tmp_path):
    # 219 bytes of garbage cut cycle 41's RmCounter block short: the audit starts again there. Job
    # 4's processes n03.25 and n02.44 are still initializing (no line ever shows them report; the
    # schedule prints "^0" for them), but from cycle 41 nothing says so: the replay takes them as
    # having reported, as for any process there when a log begins, and says so. From cycle 70 job
    # 4 is counted fewer than it holds, and shrinkBy's choice rests on it: the RM took n02.44,
    # rmref (taking both as reported) n02.48, reported as 68 divergences of the RM
    name = "heldout/seed47-070"
    log = garbled(name, tmp_path / "garbage.log", 730794, 731013)
    tables, result = _audited(name, log)
    assert [r for r, *_ in result.damaged[41].reasons] == [NUL, SHORT_BLOCK]
    said = [a for a in result.assumed if a.setting == "processes there before the log began"]
    assert [a.value for a in said] == ["2 of 11 taken as having reported"]
    assert said[0].evidence.endswith("job 4 n02.sim.ducc.44, job 4 n03.sim.ducc.25")
    for kind in ("evictions", "defrag", "schedule"):
        skipped = result.skipped_kinds[kind]
        assert set(range(70, 104)) <= set(skipped) and min(skipped) > 41, kind
        assert {why.split(", there")[0] for why in skipped.values()} == {
            "job 4 is counted fewer processes than it holds, and whether its n03.sim.ducc.25, n02.sim.ducc.44"}
    assert 70 in result.cycles and 70 not in result.skipped_kinds.get("counts", {})
    clean = audit(parse([log_path(name)]).tables)
    assert not [a for a in clean.assumed if a.setting == "processes there before the log began"]


def test_nodes_whose_arrival_order_decides_the_node_map_are_named(tmp_path):
    # after the gap n11 is heard from before n09 (they arrived n09 first, cycle 1 of the whole
    # log); their hashes on name and IP share a bucket of the RM's node map, which meets them in
    # arrival order: in cycle 28 the RM places job 14 on n09, and rmref, taking them in the order
    # first heard from, on n11. The replay must say what it took, and the other order, which
    # reproduces the RM's placement, is a verified choice, not an RM divergence (truth.jsonl)
    name = "heldout/seed47-030"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 216075, 394976))
    said = [a for a in result.assumed if a.setting == "nodes' arrival order"]
    assert [a.value for a in said] == ["2 node(s) in the order first heard from"]
    assert said[0].evidence.endswith(": n11.sim.ducc, n09.sim.ducc")
    arrived = parse([log_path(name)]).tables["nodes"].filter(pl.col("event") == "arrive")["host"].to_list()
    assert arrived.index("n09.sim.ducc") < arrived.index("n11.sim.ducc")
    by_order = [v for v in result.verified if "in the order they arrived" in v.detail]
    assert [(v.cycle, v.job_id, v.decision) for v in by_order] == [(28, 10, "placements"), (28, 14, "placements")]
    assert by_order[1].logged == "[('n09.sim.ducc', 3)]" and by_order[1].reference == "[('n11.sim.ducc', 3)]"
    assert "taken to have arrived n09.sim.ducc, then n11.sim.ducc" in by_order[1].detail
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())[28]
    real = next(r for r in truth(name) if r["epoch"] == epoch)
    assert [s["host"] for j in real["jobs"] if j["id"] == 14 for s in j["shares"]] == ["n09.sim.ducc"]


def test_a_class_block_cut_short_leaves_its_cap_settings_to_the_logged_caps(tmp_path):
    # the span starts inside class normal's block, after its doubling line and before its prediction
    # line: prediction unread is not prediction off (it read as False: 13 RM divergences)
    name = "releases/3.0.0/a_tiny"
    log = spliced(name, tmp_path / "boot.log", 5113, 178332)
    assert b"Expand By Doubling  : true" in log.read_bytes()[:5113]
    tables, result = _audited(name, log)
    normal = tables["classes"].filter(pl.col("name") == "normal").row(0, named=True)
    assert normal["prediction"] is None  # the line the cut took
    said = {(a.setting, a.value, a.source) for a in result.assumed}
    # the class's own line is assumed, named as its block names it; the two it read are not
    assert ("class normal: Use Prediction", "true", "inferred") in said
    assert not any(s.startswith(("ducc.rm.prediction", "ducc.rm.initialization", "ducc.rm.expand", "class normal: I",
                                 "class normal: E")) for s, *_ in said)
    boot = next(c for c in bootstrap(tables).classes if c.name == "normal")
    assert boot.expand_by_doubling and boot.prediction  # the doubling read, the prediction inferred


def test_garbage_between_a_schedule_sent_line_and_the_next_loop_damages_both_cycles(tmp_path):
    # 54 random bytes inside the header of the first line of cycle 7's published schedule (after
    # its "Schedule sent" line, which numbers the next cycle's lines): the unread record may be
    # cycle 7's schedule as well as cycle 8's, so both are damaged (cycle 7's lost schedule read
    # as 3 RM divergences)
    name = "corpus/cleared_then_shrunk"
    log = garbled(name, tmp_path / "garbage.log", 63353, 63407)
    assert b"Schedule sent to Orchestrator\n" in log.read_bytes()[63200:63353]
    tables, result = _audited(name, log)
    assert list(result.damaged) == [7, 8]
    assert {d.first[2] for d in result.damaged.values()} == {537}


def test_bad_bytes_in_the_class_name_of_a_published_schedules_line_damage_both_cycles(tmp_path):
    # 4 random bytes inside "RM.JobManagerConverter" of the first line of cycle 17's published
    # schedule: the line is read as a message of a scrambled class (not an unparsed line), and may be
    # cycle 17's schedule as well as cycle 18's input (6 RM divergences in cycle 17 before)
    name = "a_tiny"
    log = garbled(name, tmp_path / "garbage.log", 208773, 208777)
    tables, result = _audited(name, log)
    assert list(result.damaged) == [17, 18]
    assert {r for d in result.damaged.values() for r, *_ in d.reasons} == {BAD_BYTES}


def test_work_of_a_class_whose_definition_is_lost_is_not_audited(tmp_path):
    # class debug's lines taken from the boot section (its block and its row of the RM's class
    # table, whole lines: no line is unreadable): the nodepool still lists the class and the RM
    # schedules its jobs, which it would have refused in a class it did not know; rmref, refusing
    # them, read 41 cycles as RM divergences
    text = b"".join(lines("b_classes"))
    start = text.index(b"\n", text.index(b"printClass  Class debug") - 80) + 1
    stop = text.index(b"\n", text.index(b"printClass  Class fixed") - 80) + 1
    row = text.index(b"\n", text.index(b"initClasses         debug FIXED_SHARE") - 80) + 1
    log = tmp_path / "boot.log"
    log.write_bytes(text[:start] + text[stop:row] + text[text.index(b"\n", row) + 1:])
    tables, result = _audited("b_classes", log)
    assert tables["unparsed"].is_empty() and "debug" not in tables["classes"]["name"].to_list()
    lost = {c for c, why in result.skipped.items() if why.startswith("the definition of class debug (")}
    debug = set(tables["counts"].filter(pl.col("class") == "debug")["cycle"].to_list())
    assert lost == debug and len(lost) == 41 and result.cycles


def test_a_boot_section_cut_into_the_cycles_leaves_nothing_to_blame_on_the_rm(tmp_path, capsys):
    # tests.cuts seed 14: the span runs from inside class fair11c's block to cycle 3, taking the
    # definitions of five classes the nodepool lists (143 RM divergences before)
    name = "releases/2.1.0/gen12-004"
    log = spliced(name, tmp_path / "boot.log", 3650, 108315)
    assert main(["audit", str(log)]) == 2
    err = capsys.readouterr().err
    assert "nothing to audit: the definition of class" in err and "lines lost from the boot section" in err


def test_a_node_reactivated_after_a_gap_that_took_its_death_keeps_its_processes(tmp_path):
    # the real 2.0.0 RM (tests.cuts seed 15): the span takes epochs 17-26, with n02's death (its
    # disable, which purged service 2's process n02.2); after the gap the schedule still lists n02.2
    # (^P) and at epoch 33 "Host reactivated n02.sim.ducc" brings back the same record, n02.2 still
    # on it (15 of 64 quanta held). The RM reactivates only a record it holds unresponsive, so the
    # reactivation alone says the node was disabled: without it rmref read n02 as empty, and job 1's
    # counts and schedule in cycles 19-25 as 14 RM divergences
    name = "releases/2.0.0/dead-reactivated"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 103110, 176394))
    events = tables["nodes"].filter(pl.col("host") == "n02.sim.ducc")["event"].to_list()
    assert "disable" not in events and "reactivate" in events
    reactivated = tables["nodes"].filter(pl.col("event") == "reactivate")["cycle"][0]
    assert {c for c in result.cycles if c >= reactivated} == set(range(reactivated, 26))
    # cycle 11 (whose loop never returns) is a part of the log on its own, and damaged: what the
    # replay would have taken for it (machines no line names: its counters are epoch 26's) is said
    # of no audited cycle, and not said
    assert sorted(result.damaged) == [11, 12] and result.damaged[11].after_gap
    assert not [a for a in result.assumed if a.setting == "nodes (unnamed)"]


def test_an_unread_published_schedule_damages_the_cycle_that_starts_from_it(tmp_path):
    # tests.cuts seed 16: 137 random bytes with a NUL in the schedule cycle 20 (epoch 25) published,
    # inside service 4's entry, whose Removals line gives n03.3 (takeFromTheRich's pick) as leaving.
    # The record is unread, so cycle 21 started from cycle 19's schedule: n03.3 not leaving, job 4
    # held 2 counted 1, and rmref's shrinkBy took n03.25, 3 RM divergences. Cycle 21's input is the
    # schedule cycle 20 published: both cycles are damaged
    name = "heldout/seed47-070"
    log = garbled(name, tmp_path / "garbage.log", 354011, 354148)
    tables, result = _audited(name, log)
    first = tables["unparsed"].row(0, named=True)
    assert (first["line"], first["cycle"]) == (2993, 20) and first["text"].endswith("createState  ")
    assert list(result.damaged) == [20, 21] and {d.first[2] for d in result.damaged.values()} == {2993}
    assert 22 in result.cycles


def test_a_node_varied_on_after_a_gap_that_took_its_vary_off_was_off_at_its_start(tmp_path):
    # tests.cuts seed 16: the span takes epochs 32-42, with nothing of ca02's vary-off (epoch 25,
    # before it) after it; at epoch 45 "VaryOn: ... Machine marked online: ca02.sim.ducc", which the
    # RM prints only for a machine it holds offline. Taken as online from the restart, ca02 gave How
    # Much 12 free quanta the RM did not have in cycle 28 (epoch 44): 2 RM divergences
    name = "corpus/cancel_varyoff"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 496770, 634854))
    part = between_gaps(tables, max(result.damaged), None)
    events = part["nodes"].filter(pl.col("host") == "ca02.sim.ducc")["event"].to_list()
    assert "vary_off" not in events and "vary_on" in events
    host = next(h for h in machine_inventory(part, bootstrap(part)).hosts if h.name == "ca02.sim.ducc")
    assert host.varied_off and not host.dead
    assert {28, 29} <= set(result.cycles)


@pytest.mark.parametrize(("name", "start", "stop", "job", "share"), [
    ("corpus/shrink_map_order", 128503, 128769, 1, "np103.sim.ducc.6"),
    ("unsettled/tally_order", 56871, 57010, 3, "n04.sim.ducc.13"),
])
def test_a_report_lost_in_unread_lines_leaves_shrinkby_unaudited(tmp_path, name, start, stop, job, share):
    # tests.cuts seed 15 (cuts 472, 368): random bytes inside the record before reconcileProcess's
    # "New process <share> ... Running" (the process's report) run it into one unread record. No
    # line says the process reported after it, so rmref took it as still initializing, and shrinkBy
    # and takeFromTheRich took it first where the RM took another: 8 and 5 RM divergences
    log = garbled(name, tmp_path / "garbage.log", start, stop)
    assert f"process  {share} ".encode() in b"".join(lines(name))[start - 40:start + 400]
    tables, result = _audited(name, log)
    host, sid = share.rsplit(".", 1)
    assert tables["processes"].filter((pl.col("host") == host) & (pl.col("share_id") == int(sid))).is_empty()
    skipped = result.skipped_kinds["evictions"]
    assert skipped and min(skipped) > max(result.damaged)
    assert {why.split(" had reported")[0] for why in skipped.values()} == {f"whether job {job}'s {share}"}
    assert set(skipped) <= set(result.cycles)


def test_a_purge_line_of_a_node_whose_death_line_is_unread_says_it_died(tmp_path):
    # tests.cuts seed 15: 162 random bytes after handleDeadNodes' "***Purging machine*** np204" run
    # it and NodePool.disable's "Host disabled: np204" into one unread record (cycle 45, damaged).
    # disable's "Host dead: Service purge: np204" lines after it are read: the RM prints "Host
    # dead:" only for a node nodeLeaves disables (a vary-off prints "Host offline:"). Taken as
    # alive, np204 gave How Much 16 free quanta the RM did not have in cycle 46: 1 RM divergence
    name = "corpus/dead_host_repurges_leaving"
    log = garbled(name, tmp_path / "garbage.log", 328219, 328381)
    tables, result = _audited(name, log)
    np204 = tables["nodes"].filter(pl.col("host") == "np204.sim.ducc")
    assert not {"death", "disable"} & set(np204["event"].to_list())
    assert set(np204.filter(pl.col("event") == "purge")["down"].to_list()) == {"Host dead:"}
    assert list(result.damaged) == [45] and 46 in result.cycles


def test_the_lines_of_a_disable_stand_for_the_death_or_vary_off_that_made_it():
    nodes = pl.DataFrame({"cycle": [1, 1, 2, 2, 3], "host": ["a", "a", "b", "b", "c"],
                          "event": ["purge", "completed", "not_purged", "vary_off", "purge"],
                          "down": ["Host dead:", "Host dead:", "Host offline:", None, "Host dead/offline:"]},
                         schema_overrides={"cycle": pl.UInt32})
    assert liveness_events(nodes).select("host", "event").rows() == [
        ("a", "death"), ("a", "death"), ("b", "vary_off"), ("b", "vary_off")]


def test_a_managed_reservation_the_schedule_prints_as_a_service_keeps_its_type_after_a_gap(tmp_path):
    # tests.cuts seed 16: after the span no line submits job 10 (M.10, a managed reservation on
    # np1a02), and the schedule prints its DuccType, Service. Taken as a service (its own service
    # id), it did not keep job 6, a fixed-share job, off np1a02 (Machine.hasVerticalConflict: both
    # service id 0), and rmref placed job 6's new processes there in cycles 6, 8 and 10, where the
    # RM placed none: 6 RM divergences. Its counting line says M.10
    name = "heldout/seed47-190"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 168222, 242212))
    part = between_gaps(tables, max(result.damaged), None)
    assert part["jobs"].filter(pl.col("job_id") == 10).is_empty()
    assert set(part["schedule"].filter(pl.col("job_id") == 10)["work_type"].drop_nulls()) == {"Service"}
    described = job_descriptions(part).filter(pl.col("job_id") == 10)
    assert described["type_code"].to_list() == ["M"]
    assert {6, 8, 10} <= set(result.cycles)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    for c in (6, 8, 10):
        real = next(r for r in truth(name) if r["epoch"] == epochs[c])
        assert {s["host"] for j in real["jobs"] if j["id"] == 6 for s in j["shares"]} == {"np1a01.sim.ducc"}


def test_five_nodes_whose_arrival_order_is_open_are_tried_in_every_order(tmp_path):
    # tests.cuts seed 16: after the span five nodes of one bucket of the RM's node map are heard from
    # in an order that is not their arrival order; the RM placed job 8 on n09 (cycle 11) and n11
    # (cycle 12), rmref on n12. The order that reproduces the RM's placement was not among the
    # first 24 of the 120 tried: 4 RM divergences
    name = "heldout/seed47-030"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 125430, 243913))
    assert len(result.arrival_open) == 5
    by_order = [(v.cycle, v.job_id) for v in result.verified if "in the order they arrived" in v.detail]
    assert by_order == [(11, 8), (12, 8)]
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    real = next(r for r in truth(name) if r["epoch"] == epochs[11])
    assert [s["host"] for j in real["jobs"] if j["id"] == 8 for s in j["shares"]][2:] == ["n09.sim.ducc"] * 2


@pytest.mark.parametrize(("start", "stop"), [(115065, 203853), (138100, 289337), (103377, 264027)])
def test_a_user_with_an_allotment_of_its_own_is_named_by_the_cap_lines_after_a_gap(tmp_path, start, stop):
    # tests.cuts seeds 17 and 18: the span takes job 2's submission (dan, whose ducc.users entry
    # gives fixeda an allotment of 64 GB); after it only its cap lines ("initJobCap dan ...") name
    # its user. Its allotment checks, against 64 GB, read as the global allotment (24 GB, the only
    # other user's): `rmreplay audit` infers the settings from the whole log, and job 1 was granted
    # more than the RM gave it in cycles 6-11, before the gap (6 RM divergences)
    name = "corpus/user_allotment_override"
    log = spliced(name, tmp_path / "gap.log", start, stop)
    tables = parse([log]).tables
    assert infer_global_allotment(tables, {"dan"}).value == "24"
    result = audit(tables)  # as the command runs it: the settings read once, from the whole log
    agrees_with_truth(name, tables, result)
    assert result.damaged and min(result.cycles) < min(result.damaged) < max(result.cycles)


@pytest.mark.parametrize(("kind", "start", "stop", "first"), [("span", 5302, 31734, 1), ("garbage", 28121, 28289, 5)])
def test_nodes_no_counter_sizes_are_not_given_the_known_nodes_order(tmp_path, kind, start, stop, first):
    # tests.cuts seed 18: the log (or its part after cycle 4, whose loop is never entered) starts
    # after the nodes arrived, and prints no RmCounter block (no fair-share work): six nodes no line
    # sizes. Their one candidate order was the other nodes' (24), which no counter supported: taken
    # for it, n03 and n12 (order 80) and four of order 20 changed findMachines' walk, and reservation
    # job 1 went to n13 where the RM put it on n07 (2 RM divergences)
    name = "corpus/reservation_arrival_order"
    log = (spliced(name, tmp_path / "cut.log", start, stop) if kind == "span"
           else garbled(name, tmp_path / "cut.log", start, stop))
    tables, result = _audited(name, log)
    assert not [a for a in result.assumed if a.setting.startswith("node n") and a.setting.endswith(".sim.ducc")]
    skipped = result.skipped_kinds["placements"]
    assert min(skipped) == first and set(skipped) == {c for c in result.cycles if c >= first}
    assert {why for why in skipped.values()} == {"the order of node(s) n01.sim.ducc, n03.sim.ducc, n04.sim.ducc "
                                                 "could not be inferred (the counters do not tell it)"}
    orders = {n["name"]: n["order"] for r in truth(name) for n in r["nodes"]}
    assert sorted(orders[h] for h in ("n01.sim.ducc", "n03.sim.ducc", "n12.sim.ducc")) == [20, 80, 80]


def test_a_node_added_again_after_its_vary_off_was_cut_away_strands_its_processes(tmp_path):
    # the real 2.0.0 RM (tests.cuts seed 17): 101 random bytes cut cycle 8's RmCounter block short,
    # and the audit starts again there: n01's vary-off (cycle 7, NodePool.disable, which kept
    # reservation 1's process on the old record) is before it. At cycle 13 "Host added n01" makes a
    # new, empty record: the RM makes one only for a node it holds none of, so the node held
    # before was disabled, and its process is stranded. Taken on the new record, it left job 2 no
    # free quantum: 5 RM divergences in cycles 13 and 14
    name = "releases/2.0.0/reservation-kept"
    tables, result = _audited(name, garbled(name, tmp_path / "garbage.log", 51324, 51425))
    assert list(result.damaged) == [8] and {13, 14} <= set(result.cycles)
    part = between_gaps(tables, max(result.damaged), None)
    events = part["nodes"].filter(pl.col("host") == "n01.sim.ducc")["event"].to_list()
    assert "disable" not in events and "arrive" in events
    assert Stranded(part)(1, 1, "n01.sim.ducc", 13)


def test_processes_before_a_restart_whose_first_schedule_is_unread_are_there_before_it(tmp_path):
    # tests.cuts seed 19: 225 random bytes run cycle 37's published schedule and its "Scheduling
    # loop returns" line into one unread record, and the audit starts again at cycle 37. The
    # processes there before it are those the next schedule lists (cycle 38's), not the none the
    # unread one lists: taken as new to the part, job 1's n01.1, n01.4 and n02.9 had never reported
    # and shrinkBy took n02.9 in cycle 39, where the RM took the newest, n02.41 (truth.jsonl): 4 RM
    # divergences in cycles 39 and 82
    name = "corpus/reservation_clearing"
    tables, result = _audited(name, garbled(name, tmp_path / "garbage.log", 717417, 717642))
    assert list(result.damaged) == [37, 38] and result.damaged[37].after_gap
    part = between_gaps(tables, 37, None)
    assert PublishedShares(published_schedule(part)).first_listed([37, 38, 39]) == 38
    assert {39, 82} <= set(result.cycles)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    real = next(r for r in truth(name) if r["epoch"] == epochs[39])
    assert [(s["host"], s["id"]) for j in real["jobs"] if j["id"] == 1 for s in j["shares"] if s["evicted"]] == [
        ("top02.sim.ducc", 41)]
    assert [(host, sid) for c, job, host, sid, _why in result.ref["evictions"] if (c, job) == (39, 1)] == [
        ("top02.sim.ducc", 41)]


def test_a_class_block_cut_before_its_priority_is_a_definition_lost(tmp_path):
    # the real 2.0.0 RM (tests.cuts seed 20): the span runs from inside class fair18b's block, after
    # its Policy line, to cycle 1: its priority, weight and nodepool are lost, and How Much's
    # priority bands compared None with an int (a TypeError). A class the RM schedules with no
    # priority in the configuration rmref read is a definition lost: its work is not audited
    name = "releases/2.0.0/defrag-residual"
    tables, result = _audited(name, spliced(name, tmp_path / "boot.log", 1815, 17983))
    fair18b = tables["classes"].filter(pl.col("name") == "fair18b").row(0, named=True)
    assert fair18b["policy"] == "FAIR_SHARE" and fair18b["priority"] is None
    assert "fair18b" not in {c.name for c in bootstrap(tables).classes}
    lost = {c for c, why in result.skipped.items() if why.startswith("the definition of class fair18b (")}
    assert lost and result.cycles and not lost & set(result.cycles)


def test_the_part_before_a_gap_is_read_under_the_settings_the_command_reads(tmp_path):
    # heldout seed47-000 (its scenario sets ducc.rm.global_allotment=100; no line of the log states
    # it) with a span removed (tests.cuts seed 18): the 16 cycles before the gap hold no allotment
    # line, those after it 22 checks against 100 GB. `rmreplay audit` read the part before the gap
    # under the whole log's settings, audit(tables) under its own (the documented default, no
    # limit): two readings of one log. Both read the settings once, from the whole log, as the
    # scenario ran them
    name = "heldout/seed47-000"
    log = spliced(name, tmp_path / "gap.log", 264448, 273682)
    tables = parse([log]).tables
    result = audit(tables)
    assert 0 < min(result.damaged) < max(result.cycles)  # the precondition: a gap, cycles on either side
    assert main(["audit", str(log), "--no-cache", "-o", str(tmp_path / "out")]) == 0
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    assert written["assumed"] == json.loads(json.dumps(result.report()["assumed"]))
    allotments = {a.value for a in result.assumed if a.setting == "ducc.rm.global_allotment"}
    assert allotments == {scenario(name)["properties"]["ducc.rm.global_allotment"]}
    agrees_with_truth(name, tables, result)


def test_a_part_after_a_gap_reads_the_settings_of_the_rm_that_wrote_the_whole_log(tmp_path):
    # tests.cuts seed 17: a gap is lines lost, not a restart (that is an epoch going back): the RM
    # on either side of it is one, with one configuration. The part after the gap (cycles 98 on),
    # read alone, has no allotment line, so no global allotment, where the scenario ran one of
    # 64 GB, as the whole log reads it. In 18 of 193 gapped copies (tests.cuts seeds 17-24) a
    # part's own reading differed from the whole log's, 28 settings in all (the global allotment
    # read as the default, a quantum of 1 or 3 for 4): the whole log's was the scenario's each time
    name, setting = "heldout/seed47-070", "ducc.rm.global_allotment"
    log = spliced(name, tmp_path / "gap.log", 2040455, 2098776)
    tables = parse([log]).tables
    result = audit(tables)
    assert min(result.damaged) < max(result.cycles)  # the precondition: cycles audited after the gap
    assert {a.value for a in result.assumed if a.setting == setting} == {scenario(name)["properties"][setting]}
    agrees_with_truth(name, tables, result)


def test_a_line_run_into_another_under_a_method_its_class_never_logs_damages_its_cycle(tmp_path):
    # tests.cuts seed 20: the span (inside cycle 147) runs "countFr", a countFreeableMachines line
    # cut short, into the tail of a howMuchFairShare line: no loop, block or schedule is short, and
    # the line parses as a message of NodePool, a method it never logs. The span took the counting
    # lines of jobs 5, 7 and 16, so rmref's counts of them read as 3 RM divergences in cycle 147
    name = "heldout/seed47-170"
    log = spliced(name, tmp_path / "span.log", 2998215, 3002284)
    tables, result = _audited(name, log)
    assert list(result.damaged) == [147] and [r for r, *_ in result.damaged[147].reasons] == [UNKNOWN_METHOD]
    joined = log.read_bytes().splitlines()[result.damaged[147].first[2] - 1]
    assert joined.startswith(b"01 Jan 2015 00:25:20,000  INFO RM.NodePool - 10 T[19] countFr    3       0   8")
    assert {146, 148} <= set(result.cycles) and not result.damaged[147].after_gap


@pytest.mark.parametrize(("start", "stop", "diverged"), [(61921, 243416, {8, 9}), (81495, 223832, set(range(11, 16)))])
def test_a_node_first_shown_holding_a_purged_process_was_down_when_the_part_began(tmp_path, start, stop, diverged):
    # tests.cuts seeds 22 and 23, the real 2.0.0 RM: each span takes n02's death (epoch 26, where
    # NodePool.disable purged service 2's n02.2). After the gap every schedule lists n02.2 purged
    # (^P), and no line shows n02 go down or come back. Taken as up, n02 had the purged process's 15
    # quanta free too (in 2.0.x a purged process is off a machine that came back), so How Much
    # divided 64 free quanta where the RM divided 49 (truth.jsonl): 4 and 10 RM divergences in the
    # cycles `diverged`
    name = "releases/2.0.0/dead-reactivated"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", start, stop))
    part = between_gaps(tables, max(result.damaged), None)
    assert disabled_before_log(part) == {"n02.sim.ducc": "n02.sim.ducc.2"}
    assert disabled_before_log(parse([log_path(name)]).tables) == {}  # the whole log shows the death first
    assert diverged <= set(result.cycles)
    said = [a for a in result.assumed if a.setting == "nodes down before the log began"]
    assert [a.value for a in said] == ["1 node(s) taken as dead"] and said[0].evidence.endswith(": n02.sim.ducc.2")


def test_machines_whose_ips_a_gap_hid_tie_in_takefromtherich_in_the_order_the_rm_printed(tmp_path):
    # tests.cuts seed 24, a DUCC 3.0.0 log (node IPs logged as each node arrives): after the gap no
    # line names a node's IP. In cycle 23 takeFromTheRich met np1a01 and np103 (ben's processes on
    # both, the same memory), which the RM meets in the order of a node map hashed on their IPs;
    # rmref hashed them with no IP and took from np1a01 where the RM (truth.jsonl) took from np103:
    # 2 RM divergences. Its first round meets them in the order its `Eligible machines:` line
    # prints, which the audit now follows: no longer a choice to verify
    name = "corpus/shrink_map_order"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 302417, 330063))
    assert tables["nodes"].filter(pl.col("cycle") > 22)["ip"].drop_nulls().len() == 0
    assert not [v for v in result.verified if v.cycle == 23 and v.decision == "defrag"]
    assert not [d for d in result.divergences if d.cycle == 23]
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())[23]
    real = next(r for r in truth(name) if r["epoch"] == epoch)
    evicted = {(s["host"], s["id"]) for j in real["jobs"] if j["id"] == 1 for s in j["shares"] if s["evicted"]}
    assert {("np103.sim.ducc", 13), ("np103.sim.ducc", 14)} <= evicted
    assert not {("np1a01.sim.ducc", 25), ("np1a01.sim.ducc", 26)} & evicted
    ours = {(host, sid) for c, _needy, donor, host, sid, _why in result.ref["defrag"] if c == 23 and donor == 1}
    assert {("np103.sim.ducc", 13), ("np103.sim.ducc", 14)} <= ours
    assert not {("np1a01.sim.ducc", 25), ("np1a01.sim.ducc", 26)} & ours


def test_machines_whose_order_rests_on_a_memory_the_log_does_not_state_tie_in_takefromtherich(tmp_path):
    # tests.cuts seed 24, a DUCC 3.0.0 log: after the gap no line states np103's memory, taken as
    # order x quantum (56 GB; the scenario's is 63, as np1a01's). In cycle 13 takeFromTheRich met
    # np1a01 (63 GB, stated) and np103 (ben's processes on both): EligibleMachineSorter puts the
    # larger first, and rmref took from np1a01 where the RM (truth.jsonl) took from np103: 2 RM
    # divergences. Their order is open (rmref.take_from_the_rich._open_pair, MEMORY), and the call's
    # `Eligible machines:` line prints the RM's: rmref clears np103 itself (the unit test of
    # test_rmref_defrag.py holds the open order where no line prints it)
    name = "corpus/shrink_map_order"
    tables, result = _audited(name, spliced(name, tmp_path / "gap.log", 27709, 129137))
    assert [a.value for a in result.assumed if a.setting == "node np103.sim.ducc memory"] == ["57344 MB"]
    assert not [v for v in result.verified if v.cycle == 13 and v.decision == "defrag"]
    ours = {(host, sid) for c, _needy, donor, host, sid, _why in result.ref["defrag"] if c == 13 and donor == 1}
    assert {("np103.sim.ducc", 13), ("np103.sim.ducc", 14)} <= ours
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())[13]
    real = next(r for r in truth(name) if r["epoch"] == epoch)
    evicted = {(s["host"], s["id"]) for j in real["jobs"] if j["id"] == 1 for s in j["shares"] if s["evicted"]}
    assert {("np103.sim.ducc", 13), ("np103.sim.ducc", 14)} <= evicted
    assert not {("np1a01.sim.ducc", 25), ("np1a01.sim.ducc", 26)} & evicted


@pytest.mark.parametrize(("name", "start", "stop"), [("corpus/midstream_varied_off_idle", 14235, 209550),
                                                     ("heldout/seed47-080", 21592, 514083),
                                                     ("releases/2.0.0/varyon-report", 16462, 68599)])
def test_a_log_that_shows_the_rm_start_and_then_a_later_loop_has_a_gap_after_the_start(tmp_path, name, start, stop):
    # the span runs from the line before the first loop's entry to a later loop's: the log shows the
    # RM start (its banner, the nodes arriving) and then loop 24 (25), where the RM counts its loops
    # from 1. No two cycles of the copy straddle the loss, so no epoch jumps between them. Read as a
    # log from the RM's start, midstream_varied_off_idle's n06 was online (its vary-off is in the
    # span), and How Much divided its 9 free quanta where the RM (truth.jsonl) had none: 30 RM
    # divergences; seed47-080's job 7 was new, with no cap history: 8. tests.cuts seed 28 found the
    # third (the real 2.0.0 RM: the span, from inside the first loop, also leaves a line unread and
    # an RmCounter block short): 30. The first cycle is after a gap, and the lines the RM wrote as
    # it started are the other side of it
    log = spliced(name, tmp_path / "gap.log", start, stop)
    tables = parse([log]).tables
    first = tables["cycles"].row(0, named=True)
    assert first["epoch"] > 1 and not tables["nodes"].filter(pl.col("event") == "arrive").is_empty()
    damage = damaged_cycles(tables)
    assert GAP in [r for r, *_ in damage[first["cycle"]].reasons] and damage[first["cycle"]].after_start
    part = between_gaps(tables, first["cycle"], None, after_start=True)
    assert part["nodes"].filter(pl.col("event") == "arrive").is_empty()
    _tables, result = _audited(name, log)
    assert set(result.cycles) == set(tables["cycles"]["cycle"]) - {first["cycle"]}
    assert not damaged_cycles(parse([log_path(name)]).tables)  # the whole log: loop 1 follows the start


def test_a_node_that_arrives_in_the_first_cycle_after_a_gap_may_have_been_there_before(tmp_path):
    # tests.cuts seed 26, the real 2.0.0 RM: the span takes n01's vary-on and loops 88-101; n01's
    # "Host added" (a new record) falls in the first cycle after the gap, and np1a02, idle since
    # the RM started, is named after it only by two occupancy tables. A node arriving in the part's
    # first cycle made it read as a log from the RM's start, whose nodes all arrive: nothing was
    # inferred from the counters, and How Much divided 74 free quanta where the RM (truth.jsonl)
    # divided 104, np1a02's 30 among them: 3 RM divergences in cycle 84. The part after a gap
    # starts mid-stream, whatever arrives in its first cycle (the log's bootstrap shows the RM
    # start, and fewer Orchestrator states after it than the part's first loop counts)
    name = "releases/2.0.0/kept-old-record"
    log = spliced(name, tmp_path / "gap.log", 1023660, 1192001)
    tables, result = _audited(name, log)
    resume = max(c for c, d in result.damaged.items() if d.after_gap)
    part = between_gaps(tables, resume, None)
    assert not part["nodes"].filter((pl.col("event") == "arrive") & (pl.col("cycle") == resume)).is_empty()
    assert starts_midstream(part) and not starts_midstream(parse([log_path(name)]).tables)
    assert max(result.cycles) == 84 and 84 in result.skipped_kinds.get("counts", {})
