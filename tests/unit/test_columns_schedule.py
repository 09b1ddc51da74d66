"""The schedule, placements, rmcounter and occupancy tables typed in C (replay.parsing.columns_schedule)
against the polars steps they replace (replay.parsing.steps), on hand-worked and generated logs."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns_schedule
from replay.parsing.pipeline import parse
from tests.compiled import both_ways

_HEAD = "01 Jan 2015 00:{m:02d}:{s:02d},000  INFO RM.{cls} - {jid} T[19] {method}  {body}"
_SENT = ("JobManagerConverter", "N/A", "createState", "Schedule sent to Orchestrator")
_MACHINE = "machine       {host}        false     {order}             0             4       16384 {jobs}"
_BUILDERS = {"schedule": "_schedule_pair", "placements": "_schedule_pair", "rmcounter": "_rmcounter",
             "occupancy": "_occupancy"}


def _log(tmp_path: Path, records: list[tuple[str, str, str, str]]) -> str:
    """A log of these records (cls, jid, method, body; a body's further lines after newlines)."""
    lines = [_HEAD.format(m=i // 60 % 60, s=i % 60, cls=c, jid=j, method=m, body=b)
             for i, (c, j, m, b) in enumerate(records)]
    path = tmp_path / "rm.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _share(jid: str, host: str, share: int, order: int, m_order: int, jobs: str = "<none>") -> tuple[str, ...]:
    body = f"share {host}.{share} order {order} " + _MACHINE.format(host=host, order=m_order, jobs=jobs)
    return ("NodePool", jid, "connectShare", body)


def _state(*items: str) -> tuple[str, str, str, str]:
    return ("JobManagerConverter", "N/A", "createState", "\n" + "\n".join(items))


def _job(kind: str, job: int, gb: int, existing: str = "", additions: str = "", removals: str = "") -> str:
    lists = [f"\t{name}[{len(v.split())}]: {v}" for name, v in (("Existing", existing), ("Additions", additions),
                                                             ("Removals", removals))]
    return "\n".join([f"{kind} {job} {gb}GB", *lists])


def _both(path: str, table: str) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """The table built in C and by its polars step, and how many chunks C built it in."""
    return both_ways([path], columns_schedule, _BUILDERS[table]).table(table)


def _cycle(tmp_path: Path) -> str:
    return _log(tmp_path, [
        _share("5", "n1", 7, 2, 4),
        ("NodePool", "5", "findShares", "Connecting new share n1.7"),
        _share("6", "n1", 8, 4, 4, "3 4"),  # the whole machine; the schedule adds it to job 9
        _share("7", "n2", 1, 1, 4),
        _SENT,
        _state(_job("Job", 5, 4, "n1.7^0", "n1.7^0"), _job("Job", 9, 8, additions="n1.8^0^P"), _job("Job", 11, 2),
               "Service 12", "\tRefused: no room"),
    ])


def test_the_schedule_keeps_a_jobs_share_rows_else_its_first(tmp_path):
    compiled, reference, built = _both(_cycle(tmp_path), "schedule")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("cycle", "job_id", "work_type", "memory_gb", "reason", "kind", "host", "share_id",
                           "init_ms", "purged", "refused").rows() == [
        (1, 5, "Job", 4, None, "existing", "n1", 7, 0, False, False),
        (1, 5, "Job", 4, None, "addition", "n1", 7, 0, False, False),
        (1, 9, "Job", 8, None, "addition", "n1", 8, 0, True, False),
        (1, 11, "Job", 2, None, None, None, None, None, None, False),  # no share: its first row
        (1, 12, "Service", None, "no room", None, None, None, None, None, True),
    ]
    assert set(compiled["line"].to_list()) == {6}


def test_a_placement_is_new_whole_or_recovered_and_goes_to_the_job_the_schedule_adds_it_to(tmp_path):
    compiled, reference, built = _both(_cycle(tmp_path), "placements")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("cycle", "job_id", "host", "share_id", "order", "kind", "placed_for", "reassigned",
                           "m_order", "m_jobs", "line").rows() == [
        (1, 5, "n1", 7, 2, "new", None, False, 4, None, 1),
        (1, 9, "n1", 8, 4, "whole_machine", 6, True, 4, [3, 4], 3),
        (1, 7, "n2", 1, 1, "recovered", None, False, 4, None, 4),
    ]


def test_an_eviction_takes_its_order_from_the_first_placement_of_its_share(tmp_path):
    # the share orders columns_schedule hands to stitch: "Removing share" names no order
    path = _log(tmp_path, [_share("5", "n1", 7, 2, 4), _share("5", "n1", 7, 3, 4), _SENT,
                           ("RmJob", "5", "shrinkBy", "Removing share n1.7"), _SENT])
    compiled, reference, built = _both(path, "placements")
    assert built == 1
    evictions = parse([path], chunk_bytes=1).tables["evictions"]
    assert evictions.select("cycle", "host", "share_id", "order").rows() == [(2, "n1", 7, 2)]


def test_a_structure_the_scanner_refuses_sends_schedule_and_placements_the_reference_way(tmp_path):
    # a share glued to its list's colon: replay.parsing.fast reads that record its own way
    path = _log(tmp_path, [_share("5", "n1", 7, 2, 4), _SENT, _state("Job 5 4GB", "\tExisting[1]:n1.7^0",
                                                                     "\tAdditions[0]: ", "\tRemovals[0]: ")])
    for table in ("schedule", "placements"):
        compiled, reference, built = _both(path, table)
        assert built == 0, table
        assert_frame_equal(compiled, reference, check_exact=True)
    assert parse([path]).tables["schedule"].select("job_id", "kind").rows() == [(5, "existing")]


def test_placements_some_of_whose_rows_the_regex_read_go_the_reference_way(tmp_path):
    # a tab: the template refuses the line, the polars regex reads it
    odd = ("NodePool", "5", "connectShare", "share n1.7 order\t2 " + _MACHINE.format(host="n1", order=4, jobs="<none>"))
    path = _log(tmp_path, [odd, _share("6", "n1", 8, 4, 4), _SENT, _state(_job("Job", 6, 4, additions="n1.8^0"))])
    compiled, reference, built = _both(path, "placements")
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("job_id", "share_id", "kind").rows() == [(5, 7, "recovered"), (6, 8, "whole_machine")]


def _rmc(descr: str, *lines: str) -> list[tuple[str, str, str, str]]:
    return [("NodepoolScheduler", "N/A", "apportion_qshares", f"{descr} {line}") for line in lines]


def test_rmcounter_rows_are_the_blocks_entities_numbered_in_their_cycle(tmp_path):
    block = ("RmCounter Start", "maxorder =  3", "entity_names =  bob alice ", "weights      =  2 1 ",
             "wantedby.bob =    1   0   2 ", "vmachines =   0   1   0 ", "RmCounter End")
    path = _log(tmp_path, [*_rmc("countClassShares", *block[:2], "entity_names =  ", *block[5:]),
                           *_rmc("countUserShares", *block), _SENT, *_rmc("countUserShares", *block)])
    compiled, reference, built = _both(path, "rmcounter")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("cycle", "descr", "block", "entity", "weight", "wanted", "vmachines", "maxorder",
                           "line").rows() == [
        (1, "countClassShares", 1, None, None, None, [0, 1, 0], 3, 1),  # a block with no entity: one row
        (1, "countUserShares", 2, "bob", 2, [1, 0, 2], [0, 1, 0], 3, 6),
        (1, "countUserShares", 2, "alice", 1, None, [0, 1, 0], 3, 6),
        (None, "countUserShares", 1, "bob", 2, [1, 0, 2], [0, 1, 0], 3, 14),  # after the last schedule
        (None, "countUserShares", 1, "alice", 1, None, [0, 1, 0], 3, 14),
    ]


_QUERY = ("NodePool", "N/A", "queryMachines", "================ Query Machines Nodepool: {pool} ================")
_TABLE = ("                 Name  Blacklisted Order Active Shares Unused Shares Memory (MB) Jobs\n"
          "-------------------- ------------ ----- ------------- ------------- ----------- ------ ...")


def test_occupancy_rows_take_the_nodepool_of_the_query_before_them(tmp_path):
    rows = ["      n1        false    12             4            8       49152 3 4 [8]",
            "      n2        true     8             0             8       32768 <none>[8]"]
    path = _log(tmp_path, [
        ("NodePool", "N/A", "queryMachines", "\n" + _TABLE + "\n" + rows[0]),  # before any query: no nodepool
        (*_QUERY[:3], _QUERY[3].format(pool="--default--")),
        ("NodePool", "N/A", "queryMachines", "\n" + _TABLE + "\n" + "\n".join(rows)),
        _SENT,
    ])
    compiled, reference, built = _both(path, "occupancy")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("nodepool", "host", "blacklisted", "order", "active", "unused", "memory_mb", "jobs",
                           "free", "line").rows() == [
        (None, "n1", False, 12, 4, 8, 49152, [3, 4], 8, 1),
        ("--default--", "n1", False, 12, 4, 8, 49152, [3, 4], 8, 6),
        ("--default--", "n2", True, 8, 0, 8, 32768, None, 8, 6),  # "<none>": no list
    ]


def test_an_occupancy_table_the_scanner_refuses_goes_the_reference_way(tmp_path):
    odd = "      n1        false    12             4            8       49152 3 x [8]"  # a job that is no number
    path = _log(tmp_path, [("NodePool", "N/A", "queryMachines", "\n" + _TABLE + "\n" + odd), _SENT])
    compiled, reference, built = _both(path, "occupancy")
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)


_HOSTS = st.sampled_from(["n1", "n2", "a.b"])
_SHARE = st.tuples(_HOSTS, st.integers(1, 3))


@st.composite
def _records(draw):
    """A few cycles of connectShare / new-share lines and createState structures over few hosts and
    jobs (repeated jobs in one structure, refusals, purged shares, empty lists)."""
    out: list[tuple[str, str, str, str]] = []
    for _ in range(draw(st.integers(1, 3))):
        for _ in range(draw(st.integers(0, 4))):
            (host, share), jid = draw(_SHARE), draw(st.sampled_from(["1", "2", "3", "N/A"]))
            if draw(st.booleans()):
                out.append(("NodePool", jid, "findShares", f"Connecting new share {host}.{share}"))
            order = draw(st.integers(1, 3))
            out.append(_share(jid, host, share, order, draw(st.sampled_from([order, 4])),
                              draw(st.sampled_from(["<none>", "1", "2 3"]))))
        out.append(_SENT)
        items = []
        for _ in range(draw(st.integers(0, 4))):
            job = draw(st.integers(1, 3))
            if draw(st.booleans()):
                items += [f"Service {job}", "\tRefused: full"]
                continue
            lists = [" ".join(f"{h}.{s}^{draw(st.sampled_from(['0', '10', '5^P']))}"
                              for h, s in draw(st.lists(_SHARE, max_size=2))) for _ in range(3)]
            items.append(_job("Job", job, draw(st.integers(1, 9)), *lists))
        if items:
            out.append(_state(*items))
    return out


@settings(max_examples=40, deadline=None)
@given(_records())
def test_generated_cycles_give_the_reference_schedule_and_placements(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = _log(Path(tmp), records)
        for table in ("schedule", "placements"):
            compiled, reference, built = _both(path, table)
            assert_frame_equal(compiled, reference, check_exact=True)
            # every chunk has cycle lines typed in C (the schedule sent), so its records' columns are read and
            # C builds the table even when it has no rows
            assert built == 1


def test_a_record_without_a_time_sends_the_chunk_the_reference_way(tmp_path):
    path = Path(_log(tmp_path, [_share("5", "n1", 7, 2, 4), _SENT, _state(_job("Job", 5, 4, "n1.7^0"))]))
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0].replace("01 Jan", "30 Feb"), *lines[1:]]) + "\n")  # no such day
    for table in ("schedule", "placements"):
        compiled, reference, built = _both(str(path), table)
        assert built == 0, table
        assert_frame_equal(compiled, reference, check_exact=True)
    assert parse([str(path)]).tables["placements"].select("ts", "job_id", "kind").rows() == [(None, 5, "recovered")]


_ENTITIES = st.lists(st.sampled_from(["bob", "alice", "carol"]), unique=True, max_size=3)


@st.composite
def _rmc_records(draw):
    """RmCounter blocks (with or without entities, wantedby and gbo lines) between published schedules."""
    out: list[tuple[str, str, str, str]] = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            out.append(_SENT)
            continue
        descr, names = draw(st.sampled_from(["countClassShares", "countUserShares"])), draw(_ENTITIES)
        lines = ["RmCounter Start", f"maxorder =  {draw(st.integers(1, 4))}", "entity_names =  " + " ".join(names)]
        if names:  # an empty weights line is no line the reader takes: the template way decides it
            lines.append("weights      =  " + " ".join(str(draw(st.integers(1, 9))) for _ in names))
        lines += [f"wantedby.{n} =    1   {draw(st.integers(0, 3))} " for n in names if draw(st.booleans())]
        lines.append("vmachines =   0   2 ")
        if names and draw(st.booleans()):
            lines += ["Final apportionment:", f"{names[0]} gbo    0   1 "]
        out += _rmc(descr, *lines, "RmCounter End")
    return out


@settings(max_examples=30, deadline=None)
@given(_rmc_records())
def test_generated_rmcounter_blocks_give_the_reference_table(records):
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, built = _both(_log(Path(tmp), records), "rmcounter")
    assert_frame_equal(compiled, reference, check_exact=True)
    assert built == int(any(r != _SENT for r in records))
