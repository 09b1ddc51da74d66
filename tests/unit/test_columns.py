"""The tables the compiled scanner types itself (replay.parsing.columns, csrc/caps.c) against the
polars steps they replace (replay.parsing.steps), on hand-worked and Hypothesis-generated logs."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns
from replay.parsing.pipeline import parse
from tests.compiled import both_ways

_HEAD = "01 Jan 2015 00:{m:02d}:{s:02d},000  INFO RM.{cls} - {jid} T[19] {method}  {body}"
_SENT = ("JobManagerConverter", "N/A", "createState", "Schedule sent to Orchestrator")


def _log(tmp_path, records: list[tuple[str, str, str, str]]) -> str:
    lines = [_HEAD.format(m=i // 60 % 60, s=i % 60, cls=c, jid=j, method=m, body=b)
             for i, (c, j, m, b) in enumerate(records)]
    path = tmp_path / "rm.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _both(path: str, table: str = "job_caps") -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """The table built in C and by its polars step (replay.parsing.steps), and how many chunks C built."""
    return both_ways([path], columns._BUILDERS, table).table(table)


def test_a_cap_takes_its_jobs_last_projection_in_the_cycle(tmp_path):
    prj = "bob O 2 T 10 NTh 4 TI 5 TR {tr} R 0.5 QR 7 P 1 F 2 ST 3 return 8"
    cap = "bob O 2 Base cap: 10 Expected future cap: 20 potential cap 30 actual cap {a}"
    path = _log(tmp_path, [
        ("RmJob", "7", "getPrjCap", "bob Cannot predict cap: init_wait true || time_per_item NaN"),
        ("RmJob", "7", "getPrjCap", prj.format(tr="1.5E-3")),
        ("RmJob", "8", "getPrjCap", "bob Cannot predict cap: init_wait false || time_per_item -Infinity"),
        ("RmJob", "7", "initJobCap", cap.format(a=1)),
        ("RmJob", "8", "initJobCap", cap.format(a=2)),
        ("RmJob", "9", "initJobCap", cap.format(a=3)),  # no projection: nulls
        ("RmJob", "9", "getPrjCap", "bob Initialization time is 0, project cap and investment will be inaccurate."),
        _SENT,
        ("RmJob", "7", "initJobCap", cap.format(a=4)),  # after the last schedule: no cycle, nothing carried
    ])
    compiled, reference, built = _both(path)
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    rows = compiled.select("job_id", "actual_cap", "prj_kind", "prj_tr", "init_wait", "time_per_item",
                           "init_time_zero").rows()
    assert rows[0] == (7, 1, "predicted", 1.5e-3, None, None, False)
    assert rows[1][:5] == (8, 2, "cannot_predict", None, False) and rows[1][5] == -math.inf
    assert rows[2] == (9, 3, None, None, None, None, True)  # the zero line comes after, in the same cycle
    assert rows[3] == (7, 4, None, None, None, None, False) and compiled["cycle"].to_list() == [1, 1, 1, None]


def test_a_chunk_the_scanner_does_not_take_whole_goes_the_reference_way(tmp_path, monkeypatch):
    cap = "bob O 2 Base cap: 10 Expected future cap: 20 potential cap 30 actual cap {a}"
    # a tab: the template refuses the record, the regex or the grammar reads it, so the chunk's
    # caps are assembled by steps.caps, the scanner's rows first as before
    path = _log(tmp_path, [("RmJob", "7", "initJobCap", cap.format(a=1)),
                           ("RmJob", "7", "initJobCap", cap.format(a=2).replace(" cap: 10", " cap:\t10")),
                           ("RmJob", "8", "initJobCap", cap.format(a=3))])
    compiled, reference, built = _both(path)
    assert built == 0 and compiled["actual_cap"].to_list() == [1, 2, 3]
    assert_frame_equal(compiled, reference, check_exact=True)
    # two files in one chunk: rows in two blocks
    second = tmp_path / "b"
    second.mkdir()
    first = _log(tmp_path, [("RmJob", "7", "initJobCap", cap.format(a=1))])
    other = _log(second, [("RmJob", "7", "initJobCap", cap.format(a=2)), _SENT])
    built_before = []
    monkeypatch.setitem(columns._BUILDERS, "job_caps", lambda *a: built_before.append(1))
    both = parse([first, other]).tables["job_caps"]
    assert not built_before and both["actual_cap"].to_list() == [1, 2]


_NUM = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(allow_nan=False).map(repr).map(
    lambda t: t.replace("inf", "Infinity")),
    st.sampled_from(["NaN", "-NaN", "Infinity", "-Infinity", "+1.5", "1.", "1e5", "0.1E-3", "1e400", "-0.0"]))
_INT = st.integers(-(10**18) + 1, 10**18 - 1).map(str)
_ORDER = st.integers(0, 10**18 - 1).map(str)  # the route's `O \d+`
_JID = st.sampled_from(["1", "2", "3", "N/A", "007"])
_USER = st.sampled_from(["bob", "alice", "true"])


@st.composite
def _record(draw):
    kind = draw(st.sampled_from(["prj", "cannot", "zero", "cap", "sent"]))
    user, jid = draw(_USER), draw(_JID)
    if kind == "sent":
        return _SENT
    if kind == "prj":
        f = [draw(_ORDER), *[draw(_INT) for _ in range(8)]]
        return ("RmJob", jid, "getPrjCap", f"{user} O {f[0]} T {f[1]} NTh {f[2]} TI {f[3]} TR {draw(_NUM)} "
                f"R {draw(_NUM)} QR {f[4]} P {f[5]} F {f[6]} ST {f[7]} return {f[8]}")
    if kind == "cannot":
        wait = draw(st.sampled_from(["true", "false", "found", "x"]))
        return ("RmJob", jid, "getPrjCap", f"{user} Cannot predict cap: init_wait {wait} || time_per_item {draw(_NUM)}")
    if kind == "zero":
        return ("RmJob", jid, "getPrjCap", f"{user} Initialization time is 0, project cap and investment will be "
                "inaccurate.")
    f = [draw(_ORDER), *[draw(_INT) for _ in range(4)]]
    return ("RmJob", jid, "initJobCap", f"{user} O {f[0]} Base cap: {f[1]} Expected future cap: {f[2]} "
            f"potential cap {f[3]} actual cap {f[4]}")


@settings(max_examples=60)
@given(st.lists(_record(), min_size=1, max_size=40))
def test_generated_cap_records_give_the_reference_table(records):
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, built = _both(_log(Path(tmp), records))
    assert_frame_equal(compiled, reference, check_exact=True)
    # every cap record is routed and templated: the C code builds the table (one chunk)
    assert built == (1 if any(c == "RmJob" for c, _, _, _ in records) else 0)


_NS = "NodepoolScheduler"


def _frag(jid: str, method: str, body: str) -> tuple[str, str, str, str]:
    return (_NS, jid, method, body)


def test_defrag_rows_take_their_headers_class_and_a_job_keeps_its_first(tmp_path):
    header = "Nodepool User PureFS NSh Counted Needed O Class: {c}"
    path = _log(tmp_path, [
        _frag("N/A", "detectFragmentation", header.format(c="normal")),
        _frag("1", "detectFragmentation", "--default-- bob 46 4 4 0 1"),
        _frag("N/A", "detectFragmentation", header.format(c="urgent")),
        _frag("2", "detectFragmentation", "--default-- amy 46 4 4 0 2 POTENTIALLY NEEDY"),
        _frag("1", "detectFragmentation", "--default-- bob 46 4 4 0 1"),  # listed again: keeps "normal"
        _frag("N/A", "detectFragmentation", "NP --default-- After check: virtual free Space 0 3 -1"),
        _frag("N/A", "takeFromTheRich", "Eligible machines: h1 h2"),
        _frag("2", "doFinalEvictions", "Satisfied needs of job by taking from the rich."),
        _frag("2", "clearShare", "Donate h1.7 from 12"),
        _SENT,
        _frag("1", "detectFragmentation", "--default-- bob 46 4 4 0 1"),  # a new cycle: no header yet
    ])
    compiled, reference, built = _both(path, "defrag")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled["class"].to_list() == ["normal", "normal", "urgent", "urgent", "normal", None, None, "urgent",
                                           "urgent", None]
    assert compiled["kind"].to_list()[5:9] == ["free_space", "eligible_machines", "satisfied", "clear_share"]
    assert compiled["values"][5].to_list() == [0, 3, -1] and compiled["hosts"][6].to_list() == ["h1", "h2"]
    assert compiled["detail"].to_list()[7:9] == ["the rich.", "Donate"]
    assert compiled["potentially_needy"].to_list()[1:4] == [None, None, True]
    assert (compiled["share_id"][8], compiled["donor_job"][8]) == (7, 12)


def test_needy_jobs_keep_their_ids_and_ids_beyond_int64_go_the_reference_way(tmp_path):
    for ids, built, expected in (("[4 17 ]", 1, [4, 17]), ("[]", 1, []), ("NONE", 1, None),
                                 ("[4 12345678901234567890 ]", 0, None)):
        path = _log(tmp_path, [_frag("N/A", "expandNeedyJobs", f"NP[ --default-- Expand needy jobs. {ids}"), _SENT])
        compiled, reference, n = _both(path, "defrag")
        assert n == built, ids
        assert_frame_equal(compiled, reference, check_exact=True)
        if built:
            assert compiled.select("kind", "nodepool", "detail").row(0) == (
                "expand_needy", "--default--", "Expand needy jobs.")
            assert (compiled["job_ids"][0].to_list() if expected is not None else compiled["job_ids"][0]) == expected


_WORD = st.sampled_from(["--default--", "bob", "h1", "normal", "urgent", "x.y"])


@st.composite
def _defrag_record(draw):
    jid = draw(st.sampled_from(["N/A", "1", "2", "3"]))
    n = [draw(st.integers(-5, 50)) for _ in range(6)]
    words = " ".join(draw(st.lists(_WORD, max_size=4)))
    ints = " ".join(str(i) for i in draw(st.lists(st.integers(-(10**18) + 1, 10**18 - 1), max_size=4)))
    return draw(st.sampled_from([
        _SENT,
        _frag("N/A", "detectFragmentation", f"Nodepool User PureFS NSh Counted Needed O Class: {draw(_WORD)}"),
        _frag(jid, "detectFragmentation", f"{draw(_WORD)} {draw(_WORD)} {n[0]} {n[1]} {n[2]} {n[3]} {abs(n[4])}"
              + draw(st.sampled_from(["", " POTENTIALLY NEEDY"]))),
        _frag(jid, "detectFragmentation", f"NP {draw(_WORD)} After check: cumulative free Space {ints}"),
        _frag(jid, "detectFragmentation", f"vMachines: {ints}"),
        _frag(jid, "takeFromTheRich", f"Eligible machines: {words}"),
        _frag(jid, "takeFromTheRich", f"Candidate machine: {draw(_WORD)}"),
        _frag(jid, "doFinalEvictions", f"Job {abs(n[5])} is a candidate with processes[ {n[0]} ] qshares[ {n[1]} ]"),
        _frag(jid, "clearShare", f"Reassign expanded share {draw(_WORD)}.{abs(n[2])} from {n[3]}"),
        _frag(jid, "expandNeedyJobs", f"NP[ {draw(_WORD)} Expand needy jobs. NONE"),
        _frag(jid, "expandNeedyJobs", f"NP[ {draw(_WORD)} Expand needy fixed. [{ints} ]"),
        _frag(jid, "insureFullEviction", "NEEDY JOBS DETECTED"),
    ]))


@settings(max_examples=60)
@given(st.lists(_defrag_record(), min_size=1, max_size=40))
def test_generated_defrag_records_give_the_reference_table(records):
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, built = _both(_log(Path(tmp), records), "defrag")
    assert_frame_equal(compiled, reference, check_exact=True)
    assert built == (1 if any(c == _NS for c, _, _, _ in records) else 0)


def test_plain_tables_are_their_rows_typed(tmp_path):
    fair = "Scheduling job in class normal : J_____{j} job{j} bob normal 0 2 0 4 15 10 10 {w} 3"
    path = _log(tmp_path, [
        ("NodepoolScheduler", "N/A", "howMuchFairShare", fair.format(j=7, w="true")),
        ("NodepoolScheduler", "N/A", "howMuchFairShare", fair.format(j=8, w="false")),
        ("JobManagerConverter", "7", "jobUpdate", "tot: 10 Running -> Running compl: 3 err: x rem: 7 mean: 1.5 "
         "skew: NaN"),
        ("JobManagerConverter", "N/A", "jobUpdate", "tot: 10 Running -> Running compl: 3 err: 0 rem: 7 mean: 0x10 "
         "skew: 0"),  # not a number the grammar reads: the regexes and lark decide that record
        ("Scheduler", "7", "signalCompletion", "Job completion signal: because"),
        ("JobManagerConverter", "7", "reconcileProcess", "New process h1.3 2048 Running 1234"),
        ("JobManagerConverter", "N/A", "reconcileProcess", "Process 99 h1.3 State: Starting -> Running 12 34"),
        _SENT,
    ])
    for table, built in (("jobs", 1), ("processes", 1), ("job_events", 0)):
        compiled, reference, n = _both(path, table)
        assert n == built, table
        assert_frame_equal(compiled, reference, check_exact=True)
    jobs = parse([path]).tables["jobs"]
    assert jobs.select("job_id", "source", "init_wait", "max_processes").rows() == [
        (7, "howMuchFairShare", True, 3), (8, "howMuchFairShare", False, 3)]
    processes = parse([path]).tables["processes"]
    assert processes.select("job_id", "event", "share_id", "rss", "pid", "init_ms").rows() == [
        (7, "new", 3, 2048, "1234", None), (None, "state", 3, None, "99", 12)]


def test_a_value_the_c_code_does_not_read_sends_the_chunk_the_reference_way(tmp_path):
    update = "tot: 10 Running -> Running compl: 3 err: {e} rem: 7 mean: 1.5 skew: NaN"
    for errors, built in (("0", 1), ("x", 0), ("+4", 0), ("12345678901234567890", 0)):
        # `errors` is any token in the template: the C code types only -?\d{1,18}; polars' cast
        # (the reference) reads the rest (null, 4, null)
        path = _log(tmp_path, [("JobManagerConverter", "7", "jobUpdate", update.format(e=errors)),
                               ("Scheduler", "7", "signalCompletion", "Job completion signal: because"), _SENT])
        compiled, reference, n = _both(path, "job_events")
        assert n == built, errors
        assert_frame_equal(compiled, reference, check_exact=True)
        assert compiled["detail"].to_list() == [None, "because"]


def test_recovery_and_state_events_and_added_nodes_are_typed_in_c(tmp_path):
    jmc = "JobManagerConverter"
    path = _log(tmp_path, [
        ("NodePool", "N/A", "nodeArrives", "Nodepool: --default-- Host added: --default-- :  sys534-1 Nodefile: "
         "<null> shares 31 total   62:   sys534-1   false   31   0   31   31744 <none>"),
        (jmc, "N/A", "recoverFromOrchestrator", "Receive: RES Reservation Received processes[ 0 ] Completed: false"),
        (jmc, "N/A", "recoverFromOrchestrator", "Recovered[ 3 ] nodes from OR state."),
        (jmc, "N/A", "eventArrives", "There are no active jobs in map so can't build up state."),
        (jmc, "N/A", "eventArrives", "Orchestrator event is discarded: scheduler is paused"),
        (jmc, "1", "eventArrives", "[R] State:  WaitingForResources -> Assigned"),
        (jmc, "3", "jobUpdate", "Max shares adjusted from 10 to 2147483647 (incoming) 0"),
        (jmc, "3", "jobUpdate", "Max shares adjusted from 10 to 5 (incoming)"),
        _SENT,
    ])
    for table in ("nodes", "job_events"):
        compiled, reference, n = _both(path, table)
        assert n == 1, table
        assert_frame_equal(compiled, reference, check_exact=True)
    nodes = parse([path]).tables["nodes"]
    assert nodes.select("event", "host", "nodepool", "share_order", "count", "memory_mb").rows() == [
        ("arrive", "sys534-1", "--default--", 31, 62, 31744)]
    events = parse([path]).tables["job_events"]
    assert events.select("job_id", "event", "tag", "state_from", "state_to", "max_processes", "count",
                         "detail").rows() == [
        (None, "recover", None, None, None, None, None, "RES Reservation Received processes[ 0 ] Completed: false"),
        (None, "recovered_nodes", None, None, None, None, 3, None),
        (None, "no_active", None, None, None, None, None, "so can't build up state."),
        (None, "discarded", None, None, None, None, None, "scheduler is paused"),
        (1, "state", "[R]", "WaitingForResources", "Assigned", None, None, None),
        (3, "max_shares", None, None, None, 2147483647, None, "0"),
        (3, "max_shares", None, None, None, 5, None, None)]


_JOB_HEADER = ("            ID                        JobName       User      Class Shares Order QShares NTh Memory "
               "nQuest Ques Rem InitWait Max P/Nst")


def _schedule(*lines: str) -> tuple[str, str, str, str]:
    """A DEBUG pretty-printed schedule (sched_sections): an empty body, the sections below it."""
    return ("Scheduler", "N/A", "schedule", "\n".join(["", " Expanded:", _JOB_HEADER, *lines, "", "Shrunken:",
                                                        "   <none>", ""]))


def test_the_debug_schedules_jobs_join_the_jobs_typed_in_c(tmp_path):
    fair = "Scheduling job in class normal : J_____{j} job7 bob normal 0 2 0 4 15 10 10 true 3"
    row = "   J_________{j}    job{j}   amy   urgent   1   2   2   4   15   10   0   {w}   {m}"
    rows = [row.format(j=8, w="false", m=5), row.format(j=9, w="true", m=5)]
    for own, lines, built in (
        (7, rows, 1),
        # joined, but a job id beyond int64 the C code refuses: the joined rows go the reference way
        (12345678901234567890, rows, 0),
        # schedules the scanner refuses (the polars path reads them): the chunk's jobs the reference way
        (7, [*rows, "   odd line"], 0), (7, [row.format(j=8, w="true", m=12345678901234567890)], 0),
    ):
        path = _log(tmp_path, [("NodepoolScheduler", "7", "howMuchFairShare", fair.format(j=own)), _schedule(*lines),
                               _SENT])
        compiled, reference, n = _both(path, "jobs")
        assert n == built, (own, lines)
        assert_frame_equal(compiled, reference, check_exact=True)
    path = _log(tmp_path, [("NodepoolScheduler", "7", "howMuchFairShare", fair.format(j=7)), _schedule(*rows), _SENT])
    jobs = parse([path]).tables["jobs"]
    assert jobs.select("job_id", "source", "section", "type_code", "user", "init_wait", "max_processes").rows() == [
        (7, "howMuchFairShare", None, "J", "bob", True, 3), (8, "schedule", "Expanded", "J", "amy", False, 5),
        (9, "schedule", "Expanded", "J", "amy", True, 5)]


@st.composite
def _jobs_record(draw):
    def job() -> str:
        # now and then a value the C code or the scanner refuses (a chunk then goes the reference way)
        return (f"{draw(st.sampled_from(['J_____', 'R_', 'S']))}{draw(st.integers(1, 99))} job bob normal "
                f"{draw(st.integers(-3, 9))} 2 0 4 15 10 10 {draw(st.sampled_from(['true', 'false', 'x']))} "
                f"{draw(st.sampled_from(['3'] * 20 + ['12345678901234567890']))}")

    rows = [f"   {job()}" for _ in range(draw(st.integers(0, 3)))]
    return draw(st.sampled_from([
        _SENT, _SENT, ("NodepoolScheduler", draw(st.sampled_from(["N/A", "7"])), "howMuchFairShare",
                       f"Scheduling job in class normal : {job()}"),
        _schedule(*rows), _schedule(*rows), _schedule(*rows), _schedule(*rows, "   odd line"),
    ]))


@settings(max_examples=60)
@given(st.lists(_jobs_record(), min_size=1, max_size=8))
def test_generated_schedules_and_jobs_give_the_reference_table(records):
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, _ = _both(_log(Path(tmp), records), "jobs")
    assert_frame_equal(compiled, reference, check_exact=True)


def test_counts_take_their_policy_from_the_method_and_shares_given_from_the_kind(tmp_path):
    path = _log(tmp_path, [
        (_NS, "2", "whatOfFairShare", "Scheduling job in class low : 4 shares given, order 3"),
        (_NS, "1", "howMuchFixed", "Scheduling job to class: JobDriver"),
        (_NS, "1", "countSingleFixedProcess", "Counting shares for J.1 in class JobDriver"),
        (_NS, "1", "countSingleFixedProcess", "+++++ nodepool --default-- class JobDriver order 2 shares 3Q2"),
        (_NS, "1", "countSingleFixedProcess", "[stable] assigned 5 processes, 10 QS"),
        (_NS, "1", "countSingleReservation", "[stable] assigned 6 processes, 12 QS"),
        _SENT,
    ])
    compiled, reference, built = _both(path, "counts")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("job_id", "policy", "kind", "shares_given").rows() == [
        (2, "FAIR_SHARE", "given", 4), (1, "FIXED_SHARE", "class", None), (1, "FIXED_SHARE", "counting", None),
        (1, "FIXED_SHARE", "granted", 3), (1, "FIXED_SHARE", "stable", 5), (1, "RESERVE", "stable", 6)]
