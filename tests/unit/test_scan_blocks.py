"""The multi-line blocks the compiled scanner reads itself (RmCounter blocks, the published schedule,
the DEBUG occupancy tables and schedule sections) against the general path and the grammar:
hand-worked blocks, then Hypothesis over generated ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing.chunks import Piece
from replay.parsing.pipeline import parse
from replay.parsing.routing import route
from replay.parsing.scan import occupancy_rows, rmcounter_rows, section_rows
from replay.parsing.scanned import scan_records


# -- RmCounter blocks: the scanner's assembly against the general one ---------------------------

_NAMES = ["low", "high", "J7", "bob", "42"]
_RMC = "01 Jan 2015 00:01:00,000  INFO RM.NodepoolScheduler - N/A T[19] apportion_qshares  "
_SENT = "01 Jan 2015 00:01:00,000  INFO RM.JobManagerConverter - N/A T[19] createState  Schedule sent to Orchestrator"
_ints = st.lists(st.integers(-5, 99), max_size=5).map(lambda xs: " ".join(f"{x:3d}" for x in xs))
_rmc_line = st.one_of(
    st.just("RmCounter Start"), st.just("RmCounter End"), st.just("Final apportionment:"),
    st.integers(0, 90).map(lambda n: f"maxorder =  {n}"),
    st.lists(st.sampled_from(_NAMES), max_size=4).map(lambda ns: "entity_names =  " + " ".join(ns) + " "),
    _ints.map(lambda v: f"weights      =  {v} "), _ints.map(lambda v: f"vmachines = {v}"),
    st.tuples(st.sampled_from(_NAMES), _ints).map(lambda t: f"wantedby.{t[0]} = {t[1]}"),
    st.tuples(st.sampled_from(_NAMES), _ints).map(lambda t: f"{t[0]} gbo {t[1]}"),
    _ints.map(lambda v: f"vshares {v}"), _ints.map(lambda v: f"nshares {v}"),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.sampled_from(["countClassShares", "countJobShares"]), _rmc_line),
                          st.just(("", "sent")), st.just(("countJobShares", "weights = 1 x"))),
                min_size=1, max_size=40),
       st.booleans())
def test_rmcounter_blocks_the_scanner_assembles_are_the_general_ones(tmp_path_factory, lines, canonical):
    if canonical:  # mostly lines every template takes; else now and then one it refuses
        lines = [ln for ln in lines if ln[1] != "weights = 1 x"]
    text = "\n".join([*(_SENT if body == "sent" else f"{_RMC}{descr} {body}" for descr, body in lines), _SENT]) + "\n"
    log = tmp_path_factory.mktemp("rmc") / "rm.log"
    log.write_text(text)
    fast_tables = parse(str(log), engine="fast").tables
    general = parse(str(log), engine="polars").tables
    assert_frame_equal(fast_tables["rmcounter"], general["rmcounter"])
    assert_frame_equal(fast_tables["unparsed"], general["unparsed"])


def test_the_scanner_assembles_rmcounter_blocks_itself():
    """A hand-worked block: the scanner's path is the one taken, and its rows are right."""
    body = ["countJobShares RmCounter Start", "countJobShares maxorder =  3", "countJobShares entity_names =  a b a ",
            "countJobShares weights      =  5   7 ", "countJobShares wantedby.a =    1   2",
            "countJobShares wantedby.a =    3", "countJobShares vmachines =   0   4", "countJobShares RmCounter End"]
    text = "\n".join(_RMC + b for b in body) + "\n"
    _, recs = scan_records([Piece(0, 1, text.encode())])
    rows = rmcounter_rows(route(recs.records), recs.blocks)
    assert rows is not None
    assert rows.select("entity", "weight", "wanted", "vmachines", "maxorder", "given").rows() == [
        ("a", 5, [3], [0, 4], 3, None), ("b", 7, None, [0, 4], 3, None), ("a", None, [3], [0, 4], 3, None)]


# -- the published schedule: the scanner's reading against the general one ---------------------

_STATE = "01 Jan 2015 00:01:00,000  INFO RM.JobManagerConverter - N/A T[19] createState  "
_share = st.tuples(st.sampled_from(["h1", "sys2-15", "a.b.c"]), st.integers(0, 30), st.integers(0, 9999),
                   st.booleans()).map(lambda t: f"{t[0]}.{t[1]}^{t[2]}" + ("^P" if t[3] else ""))
_shares = st.lists(_share, max_size=3).map(" ".join)
_job = st.tuples(st.sampled_from(["Reservation", "Job", "Service"]), st.integers(1, 99), st.integers(1, 64),
                 st.sampled_from(["", " ", "  waiting for defrag", " Refused: no room"]))
_canonical_job = st.one_of(
    _job.flatmap(lambda j: st.tuples(_shares, _shares, _shares, _shares).map(lambda s: [
        f"{j[0]} {j[1]} {j[2]}GB{j[3]} ", f"\tExisting[{len(s[0].split())}]: {s[0]} ",
        f"\tAdditions[1]: {s[1]}", *([f"\t   {s[3]}"] if s[3] else []), f"\tRemovals[0]: {s[2]}", ""])),
    st.tuples(st.sampled_from(["Job", "Reservation"]), st.integers(1, 99), st.sampled_from(["no room", "x  y"])).map(
        lambda t: [f"{t[0]} {t[1]} ", f"\tRefused: {t[2]}", ""]),
)
_odd_line = st.sampled_from(["\tExisting[1]:h.1^0", "\tAdditions[1]: h.1^0x", "Job  5 2GB", "\t\th.1^0", "\tRefused:",
                             "Job 5 2GBx", "\t h.1^0", "\tRemovals[0]: junk h.2^0", "Job 7", "\tExisting[1]: h^1.2^0"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_canonical_job, max_size=3),
                          st.lists(st.tuples(st.integers(0, 12), _odd_line), max_size=2)), min_size=1, max_size=4))
def test_schedules_the_scanner_reads_are_the_general_ones(tmp_path_factory, records):
    text = []
    for jobs, odd in records:
        lines = [ln for job in jobs for ln in job]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_STATE + "Schedule sent to Orchestrator", _STATE, *lines]
    log = tmp_path_factory.mktemp("sched") / "rm.log"
    log.write_text("\n".join(text) + "\n")
    fast_tables = parse(str(log), engine="fast").tables
    general = parse(str(log), engine="polars").tables
    assert_frame_equal(fast_tables["schedule"], general["schedule"])
    assert_frame_equal(fast_tables["unparsed"], general["unparsed"])


def test_a_block_of_many_entities_is_assembled_as_the_general_path_does(tmp_path):
    """Thousands of entities (a busy class), wantedby and gbo lines out of order and repeated."""
    names = [f"J{i}" for i in range(1500)]
    order = names[::-1] + names[::7]
    body = (["countJobShares RmCounter Start", "countJobShares maxorder =  3",
             "countJobShares entity_names =  " + " ".join(names),
             "countJobShares weights      =  " + " ".join(str(i % 9 + 1) for i in range(1400))]
            + [f"countJobShares wantedby.{n} =    {i % 5}   {i % 3}" for i, n in enumerate(order)]
            + ["countJobShares vmachines =   0   4", "countJobShares Final apportionment:"]
            + [f"countJobShares {n} gbo  {i}" for i, n in enumerate(names[::3])] + ["countJobShares RmCounter End"])
    log = tmp_path / "rm.log"
    log.write_text("\n".join([*(_RMC + b for b in body), _SENT]) + "\n")
    fast_tables, general = parse(str(log), engine="fast").tables, parse(str(log), engine="polars").tables
    assert fast_tables["rmcounter"].height == 1500
    assert_frame_equal(fast_tables["rmcounter"], general["rmcounter"])


# -- the DEBUG tables: the vectorised readers against the grammar ------------------------------

_QUERY = "01 Jan 2015 00:01:00,000  INFO RM.NodePool - N/A T[19] queryMachines  "
_SCHEDULE = "01 Jan 2015 00:01:00,000 DEBUG RM.Scheduler - N/A T[19] schedule  "
_OCC_HEADER = "                 Name  Blacklisted Order Active Shares Unused Shares Memory (MB) Jobs"
_OCC_RULE = "-------------------- ------------ ----- ------------- ------------- ----------- ------ ..."
_machine = st.tuples(st.sampled_from(["sys290-14", "nodeB.sim.ducc", "h.1"]), st.sampled_from(["false", "true"]),
                     st.integers(0, 80), st.integers(0, 80), st.lists(st.integers(1, 99), max_size=3),
                     st.sampled_from(["", "[3]", " [12]"])).map(
    lambda m: f"{m[0]:>20} {m[1]:>12} {m[2]:5d} {m[3]:13d} {m[3]:13d} {m[2] * 1024:11d} "
              + (" ".join(map(str, m[4])) or "<none>") + m[5])
_odd_occ = st.sampled_from(["", "   ", "\tsys1\tfalse\t4\t0\t4\t4096\t<none>", " h false 4 0 4 4096",
                            "= false 4 0 4 4096 <none>", " h false 4 0 4 4096 <none>[x]", " h false -4 0 4 4096 1 -2",
                            _OCC_HEADER, "----- ...",
                            # the shapes the compiled reader refuses and leaves to the polars handler
                            " h false 4 0 4 4096 1 2[3]", " h false 4 0 4 4096 <none> 1", " h false 4 0 4 4096 [3]",
                            " wantedby.x false 4 0 4 4096 <none>", " h := 4 0 4 4096 <none>",
                            " h false 4 0 4 4096 <none>\r", " h false 4 0 4 4096 1 [2] [3]",
                            " h false 4 0 4 4096 " + " ".join(str(i) for i in range(1, 70)) + " [1]",
                            " h false 4 0 4 1234567890123456789 <none>", " h false 4 0 4 4096 <none> [3] ",
                            " h\u00e9 false 4 0 4 4096 <none>", "- ...", "-- -x ..."])
_JOB_HEADER = ("            ID                        JobName       User      Class Shares Order QShares NTh Memory "
               "nQuest Ques Rem InitWait Max P/Nst")
_job_row = st.tuples(st.sampled_from(["J", "R", "S"]), st.integers(1, 999), st.sampled_from(["job7", "Job_Driver"]),
                     st.sampled_from(["bob", "System"]), st.integers(0, 60)).map(
    lambda j: f"   {j[0]}{'_' * 9}{j[1]} {j[2]:>30} {j[3]:>10} {'normal':>10} {j[4]:6d}     2       2   0      "
              f"2      0        0        0         1")
_section = st.tuples(st.sampled_from(["Expanded", "Shrunken", "Stable", "Dormant", "Reserved"]),
                     st.one_of(st.just(None), st.lists(_job_row, max_size=3))).map(
    lambda s: [f"{s[0]}:", "   <none>"] if s[1] is None else [f"{s[0]}:", _JOB_HEADER, *s[1]])
_odd_sched = st.sampled_from(["", "Stable :", "   <none>", _JOB_HEADER, "Other:", "   J_5 job bob normal 1 2",
                              "   X_5 job bob normal 0 2 2 0 2 0 0 0 1",
                              # the shapes the compiled reader refuses and leaves to the polars handler
                              "Stable: :", "Stable::", "   J_ job bob normal 0 2 2 0 2 0 0 0 1",
                              "   J_5 job == normal 0 2 2 0 2 0 0 0 1", "   J_5 job bob normal 0 2 2 0 2 0 0 x 1",
                              "   J_5 job bob normal 0 2 2 0 2 0 0 wantedby.x 1", "\tStable:", "Stable:\r",
                              "   J_5 job bob normal 0 2 2 0 2 0 0 0 1 extra", "   <none> x",
                              "   ?5 job b\u00e9b normal 0 2 2 0 2 0 0 0 1", "   R5 job bob normal 0 2 2 0 2 0 0 0 -1"])


def _same_as_grammar(tmp_path_factory, text: str, tables: tuple[str, ...]) -> None:
    log = tmp_path_factory.mktemp("debug") / "rm.log"
    log.write_text(text)
    fast_tables, general = parse(str(log), engine="fast").tables, parse(str(log), engine="lark").tables
    for name in (*tables, "unparsed"):
        assert_frame_equal(fast_tables[name], general[name])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_machine, max_size=4), st.lists(st.tuples(st.integers(0, 6), _odd_occ), max_size=2),
                          st.booleans()), min_size=1, max_size=3))
def test_occupancy_tables_read_as_the_grammar_reads_them(tmp_path_factory, tables):
    text = []
    for rows, odd, with_header in tables:
        lines = [*([_OCC_HEADER, _OCC_RULE] if with_header else []), *rows, ""]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_QUERY, *lines]
    _same_as_grammar(tmp_path_factory, "\n".join(text) + "\n", ("occupancy",))


def _occupancy_scan(lines: list[str]):
    _, recs = scan_records([Piece(0, 1, "\n".join([_QUERY, *lines, ""]).encode())])
    return occupancy_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)


def test_the_scanner_reads_canonical_schedule_sections_itself():
    """A hand-worked pretty-printed schedule: the compiled reader takes it, with these rows (a
    header with no job row is a row of its own, with its section), and refuses another shape."""
    _, recs = scan_records([Piece(0, 1, "\n".join([
        _SCHEDULE, "Expanded:", "   <none>", "", "Stable :", _JOB_HEADER,
        "   J_________17 job7 bob normal 60 2 2 0 2 0 0 0 1", "   S_3 Job_Driver System normal -1 2 2 0 2 0 0 0 1",
        "Dormant:", _JOB_HEADER, "", ""]).encode())])
    rows, failed = section_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)
    assert failed.is_empty()
    none = [None] * 14
    assert rows.rows() == [
        (0, "Expanded", *none),
        (0, "Stable", "J", "17", "job7", "bob", "normal", "60", "2", "2", "0", "2", "0", "0", "0", "1"),
        (0, "Stable", "S", "3", "Job_Driver", "System", "normal", "-1", "2", "2", "0", "2", "0", "0", "0", "1"),
        (0, "Dormant", *none)]
    _, recs = scan_records([Piece(0, 1, "\n".join([_SCHEDULE, "Stable:", _JOB_HEADER, "Other:", ""]).encode())])
    rows, failed = section_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)
    assert rows.is_empty() and failed["rec"].to_list() == [0]


def test_the_scanner_reads_canonical_occupancy_tables_itself():
    """Hand-worked tables: the compiled reader takes the canonical ones, with these fields, and
    leaves any other shape to the polars handler (the Hypothesis test above holds both to the grammar)."""
    rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE, "   sys1  false  79  0  79  80896 <none>[79]",
                                    "   sys2  true  31  30  1  31744 1 2 [1]", "   sys3  false  -4  0  4  4096 7",
                                    "", " "])
    assert failed.is_empty()
    assert rows.rows() == [
        (0, "sys1", "false", "79", "0", "79", "80896", None, "79"),
        (0, "sys2", "true", "31", "30", "1", "31744", ["1", "2"], "1"),
        (0, "sys3", "false", "-4", "0", "4", "4096", ["7"], None)]
    assert rows.columns == ["rec", "m_host", "m_blacklisted", "m_order", "m_active", "m_unused", "memory_mb",
                            "m_jobs_list", "free"]
    rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE])  # a table with no machine: one row, no fields
    assert failed.is_empty() and rows.rows() == [(0, *[None] * 8)]
    for odd in (" h false 4 0 4 4096 1 2[3]", "\th false 4 0 4 4096 <none>", " h false 4 0 4 4096", ""):
        rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE, odd, " h false 4 0 4 4096 <none>"])
        assert rows.is_empty() and failed["rec"].to_list() == [0], odd


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_section, min_size=1, max_size=5),
                          st.lists(st.tuples(st.integers(0, 12), _odd_sched), max_size=2)),
                min_size=1, max_size=3))
def test_debug_schedule_sections_read_as_the_grammar_reads_them(tmp_path_factory, records):
    text = []
    for sections, odd in records:
        lines = [ln for i, sec in enumerate(sections) for ln in ([""] if i else []) + sec]
        lines[0] = " " + lines[0]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_SCHEDULE, *lines, "", ""]
    _same_as_grammar(tmp_path_factory, "\n".join(text) + "\n", ("jobs",))
