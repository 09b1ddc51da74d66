"""The TUI's precomputed views against ground truth, and its small helpers."""

from __future__ import annotations

import asyncio
import gzip

import polars as pl
import pytest

from replay import parse, write_tables
from tests.helpers import SCENARIOS, log_path, parsed, truth
from tests.tui.helpers import SIZE, audit_frames, rows, wait_until
from tui.app import RmReplayApp
from replay.cli import main
from replay.cli.parser import build_parser
from tui.data import build, jobs_frame, line_style, matches
from replay.model.nodes import AWAITING
from tui.views import Deferred, Sliced
from replay.parsing.keys import source_files
from replay.parsing.digest import content_digest
from replay.parsing.logdir import find_inputs
from tui.load import load
from replay.parsing.store import ParquetTables, all_columns

SMALL = [n for n in SCENARIOS if n != "i_mega24"]
# work the RM refused; 2.0.x machines back from a vary-off or a death (a new record, the old one
# kept, processes purged or stranded), and varied on but not yet reported
REFUSED = ["corpus/refused_unknown_class", "corpus/submission_ties", "heldout/seed47-090"]
# reservations whose grant the counting line does not size; jobs completing with a cap logged before
RESERVED = ["corpus/reserve_job_completed", "corpus/reservation_clears_one_size", "unsettled/tally_order",
            "releases/2.2.2/needy-completed", "releases/2.0.0/gen12-004"]
RETURNS = ["releases/2.0.0/kept-old-record", "releases/2.0.0/purged-return", "releases/2.0.0/reservation-kept",
           "releases/2.0.0/varyon-report", "releases/2.0.0/dead-reactivated", "releases/2.0.0/kept-out-of-tables",
           "releases/2.0.0/varyoff-return", "releases/2.0.0/purge-stops"]
CASES = ([(n, "rm.log") for n in SMALL + REFUSED + RESERVED + RETURNS]
         + [(n, "rm-debug.log") for n in ("c_nodepools", "f_node_failure", *RETURNS)])


@pytest.mark.parametrize("name, level", CASES, ids=[f"{n}/{lv}" for n, lv in CASES])
def test_views_match_truth(name, level):
    """Every cycle: the jobs (user, class, shares held, added, removed) and hosts (order, free, status)
    of truth; besides, only the work the RM refused (shown so) and, before 2.1.0, a varied-on machine
    not yet reported (in none of the RM's maps)."""
    b = build(name, parsed(name, level).tables)
    assert b.total == len(truth(name))
    refusals = parsed(name, level).tables["job_events"].filter(pl.col("event") == "refused")
    for rec in truth(name):
        c = rec["cycle"]
        jobs = {r["job_id"]: r for r in b.jobs.at(c).iter_rows(named=True)}
        refused = {j for j, r in jobs.items() if r["state"] == "Refused"}
        assert refused <= set(refusals["job_id"].to_list()), c
        assert set(jobs) - refused == {j["id"] for j in rec["jobs"]}, c
        for j in rec["jobs"]:
            r = jobs[j["id"]]
            assert (r["user"], r["class"], r["held"], r["added"], r["removed"]) == (
                j["user"], j["class"], len(j["shares"]), len(j["added"]), len(j["preempted"])), (c, j["id"])
            # How Much's count and the cap, as logged (a completed job's cap is not)
            assert (r["counted"], r["cap"]) == (j["nshares_given"], None if j["completed"] else j["job_cap"]), (
                c, j["id"])
        nodes = {r["host"]: r for r in b.nodes.at(c).iter_rows(named=True)}
        awaiting = {h for h, r in nodes.items() if r["status"] == AWAITING}
        assert set(nodes) - awaiting == {n["name"] for n in rec["nodes"]}, c
        for n in rec["nodes"]:
            r = nodes[n["name"]]
            assert (r["order"], r["free"], r["status"]) == (n["order"], n["free_qshares"], n["status"]), (c, n["name"])


# logs whose schedule prints memory rounded up to the quantum, one with a second pool of its own quantum
ROUNDED = ["heldout/seed47-120", "corpus/second_toplevel_quantum"]


@pytest.mark.parametrize("name", [*SMALL, *ROUNDED])
def test_jobs_show_the_memory_submitted_and_its_order(name):
    """Every cycle's jobs show truth's memory (as submitted, though the schedule prints it rounded
    up to the quantum) and order (in the quantum of the job's own pool tree)."""
    b = build(name, parsed(name).tables)
    for rec in truth(name):
        jobs = {r["job_id"]: r for r in b.jobs.at(rec["cycle"]).iter_rows(named=True)}
        for j in rec["jobs"]:
            row = jobs[j["id"]]
            assert (row["memory_gb"], row["order"]) == (j["memory"], j["order"]), (rec["cycle"], j["id"])


@pytest.mark.parametrize("name", ["a_tiny", "b_classes", "d_fragmentation", "g_reservations_services"])
def test_first_screen_is_the_whole_views(name, tmp_path):
    """What the first screen shows before the whole views are built (the timeline, a cycle's jobs
    read alone from disk) is exactly the whole views' (themselves held to truth above), and the
    whole views built on the thread, the audit's columns joined in, are the ones built at once."""
    write_tables(parsed(name).tables, tmp_path / "out")
    tables = ParquetTables(tmp_path / "out", all_columns())
    whole = build(name, tables).with_audit(audit_frames(name))
    for c in whole.cycle_list:
        assert jobs_frame(tables, 1, only=c).equals(jobs_frame(tables, 1).filter(pl.col("cycle") == c)), c
    first = build(name, tables, later=True)
    assert isinstance(first.jobs, Deferred) and first.timeline.equals(build(name, tables).timeline)
    first = first.with_audit(audit_frames(name))
    assert first.timeline.equals(whole.timeline)
    for view in ("jobs", "nodes", "defrag", "diff"):
        assert getattr(first, view).frame.equals(getattr(whole, view).frame), view
    c = whole.cycle_list[-1]
    assert first.jobs.at(c).equals(whole.jobs.at(c))


# logs with takings, reservation clearings, vacated purges or processes leaving before a mid-stream log began
TAKINGS = ["d_fragmentation", "corpus/cleared_then_shrunk", "corpus/clearing_nothing_evicted",
           "corpus/freeable_map_order", "corpus/midstream_class_sets_its_doubling", "corpus/needy_submission_tie",
           "corpus/needy_tie_survivor", "corpus/reservation_clearing", "corpus/reservation_clears_one_size",
           "corpus/reservation_share_walk", "heldout/seed47-130", "releases/2.0.0/clears-every-machine-set-aside",
           "releases/2.0.0/reservation-walk", "releases/2.2.2/reservation-ip"]


@pytest.mark.parametrize("name", TAKINGS)
def test_defrag_view_lists_the_shares_defragmentation_took(name):
    """The Defrag view's taken shares are truth's defragmentation evictions, every cycle: not a
    reservation's clearing, a purge of a share already vacated, nor a removal decided before the log."""
    taken = build(name, parsed(name).tables).defrag.frame.filter(pl.col("kind") == "taken")
    shown = sorted((c, j, h, int(d.removeprefix("share "))) for c, j, h, d in
                   taken.select("cycle", "donor_job", "host", "detail").iter_rows())
    assert shown == sorted((r["cycle"], a["donor_job"], a["host"], a["share"]) for r in truth(name)
                           for a in r["defrag"]["actions"] if a["action"] == "evict")


def test_needy_marks_follow_truth():
    """The timeline's needy count is truth's needy jobs where the RM logged them."""
    name = "d_fragmentation"
    b = build(name, parsed(name).tables)
    marked = set(b.timeline.filter(pl.col("needy") > 0)["cycle"].to_list())
    needy = {r["cycle"] for r in truth(name) if r["defrag"]["needy"]}
    assert needy and needy <= marked


def test_sliced_and_matches():
    """Slices are a cycle's rows; the filter matches words on the named columns only."""
    frame = pl.DataFrame({"cycle": [3, 1, 2, 2], "job_id": [7, 1, 12, 2], "user": ["bob", "ann", "Bob", "cy"],
                          "hosts": ["n1 n2", "n3", "n1", ""]})
    s = Sliced(frame)
    assert s.at(2)["job_id"].to_list() == [12, 2] and s.at(9).height == 0
    cols = {"job": "job_id", "user": "user", "host": "hosts"}
    assert matches(frame, "bob", cols)["job_id"].to_list() == [7, 12]
    assert matches(frame, "user:bob host:n2", cols)["job_id"].to_list() == [7]
    assert matches(frame, "job:1", cols)["job_id"].to_list() == [1]  # ids match whole, not 12
    assert matches(frame, "class:x", cols).height == 0


def test_goto_time_and_log_slices():
    """A time goes to the last cycle begun by then; a cycle's raw lines start at its scheduling loop."""
    from tests.tui.helpers import loaded

    lo = loaded("a_tiny")
    b = build(lo.name, lo.tables, lo.lines)
    rec = truth("a_tiny")[9]
    hhmmss = rec["time"].split()[3].split(",")[0]
    assert b.cycle_at_time(hhmmss, 1) == rec["cycle"]
    assert b.cycle_at_time("2015-01-01 " + hhmmss, 1) == rec["cycle"]
    assert b.cycle_at_time("not a time", 1) is None
    lines, n = b.log_at(rec["cycle"])
    assert n == len(lines) and f"-------- {rec['epoch']} ------- Entering scheduling loop" in lines[0]
    assert line_style(lines[0]) != "dim"


def test_parse_directory_opens(tmp_path):
    """A `rmreplay parse -o` directory opens (no raw lines: the Log tab says so)."""
    write_tables(parsed("a_tiny").tables, tmp_path / "out")
    got = load([str(tmp_path / "out")])
    assert got.lines is None and got.tables["cycles"].height == 20

    async def go():
        app = RmReplayApp([str(tmp_path / "out")])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready and app.audit_done)
            assert len(rows(app.query_one("#jobs-table"))) == len(truth("a_tiny")[0]["jobs"])
            await pilot.press("4")
            await pilot.pause()
            assert "not available" in app.query_one("#log-view").text()

    asyncio.run(go())


def test_an_audit_folder_opens_as_its_log(tmp_path, monkeypatch, capsys):
    """`rmreplay tui AUDIT_DIR` browses the log that audit read (its cached parse and stored audit),
    the jobs as truth has them; with the parse gone from the cache, one line before the terminal is taken."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    assert main(["audit", str(log_path("a_tiny")), "-o", str(tmp_path / "a")]) == 0
    got = load([str(tmp_path / "a")])
    assert got.from_cache and got.tables["cycles"].height == 20 and got.audit is not None

    async def go():
        app = RmReplayApp([str(tmp_path / "a")])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready and app.audit_done)
            assert len(rows(app.query_one("#jobs-table"))) == len(truth("a_tiny")[0]["jobs"])

    asyncio.run(go())
    capsys.readouterr()
    assert main(["tui", str(tmp_path / "a"), "--no-cache"]) == 2
    assert "output of `rmreplay audit` of rm.log" in capsys.readouterr().err


def test_cache_key_follows_content(tmp_path, monkeypatch):
    """Same bytes, same key (hashed, or from the memo); one byte changed, another key."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    a = tmp_path / "rm.log"
    a.write_bytes(log_path("a_tiny").read_bytes())
    key = lambda: content_digest(find_inputs([str(a)]).sources)  # noqa: E731
    k1 = key()
    assert (tmp_path / "cache" / "digests.json").exists() and k1 == key()
    a.write_bytes(a.read_bytes().replace(b"nodeB", b"nodeC", 1))  # the same size
    assert key() != k1


def test_cli_keeps_replay_commands(tmp_path, capsys):
    """The TUI is one more registered command (its entry point), beside replay's own."""
    parser = build_parser()
    assert parser.parse_args(["tui", "x.log"]).func.__name__ == "cmd_tui"
    assert main(["parse", str(log_path("a_tiny")), "-o", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "cycles.parquet").exists()
    capsys.readouterr()
    assert main(["tui", str(tmp_path / "missing.log")]) == 2  # before the app takes the terminal
    assert "no such file" in capsys.readouterr().err


def test_cache_key_follows_the_code_the_tables_come_from():
    """The scanner's C and the grammar make the tables too: both are in the key, with subpackages."""
    names = {name for name, _ in source_files()}
    assert {"replay/parsing/csrc/route.c", "replay/parsing/csrc/scan.h", "grammars/rmlog.lark",
            "replay/apps/explain/story.py", "rmref/howmuch.py"} <= names


def test_log_lines_are_read_as_the_parser_reads_them(tmp_path):
    """The Log tab's lines (`parse(keep_lines=True)`): gzip known by its magic (not its name), CR and
    newline dropped, bad bytes replaced, a last line without its newline kept, numbered per file."""
    raw = b"01 Jan 2015 00:00:00,000  INFO RM.A - N/A T[1] m  one\r\nplain \xff line\n\nlast without newline"
    expected = ["01 Jan 2015 00:00:00,000  INFO RM.A - N/A T[1] m  one", "plain \ufffd line", "",
                "last without newline"]
    (tmp_path / "rm.log").write_bytes(gzip.compress(raw, mtime=0))  # gzipped, under a plain name
    (tmp_path / "rm.log.1").write_bytes(raw)
    for engine in ("fast", "polars"):
        got = parse([str(tmp_path)], engine=engine, keep_lines=True).lines
        assert got["file"].to_list() == ["rm.log.1"] * 4 + ["rm.log"] * 4  # a higher suffix is older
        assert got["text"].to_list() == expected * 2
        assert got["line"].to_list() == [1, 2, 3, 4] * 2
        assert got.columns == ["file", "text", "line"]


@pytest.mark.parametrize("engine", ["fast", "polars"])
def test_parse_hands_over_every_line_of_a_rolled_set(tmp_path, engine):
    """Every line of a rolled set of a plain and a gzipped file, in order, whatever the chunking."""
    plain = gzip.decompress(log_path("b_classes").read_bytes())
    cut = plain.index(b"\n", len(plain) // 2) + 1
    (tmp_path / "rm.log.1").write_bytes(plain[:cut])
    (tmp_path / "rm.log").write_bytes(gzip.compress(plain[cut:] + b"a last line\r\ncut mid-li", mtime=0))
    got = parse([str(tmp_path)], engine=engine, chunk_bytes=64 << 10, keep_lines=True).lines
    older = plain[:cut].decode().split("\n")[:-1]
    newer = (plain[cut:].decode() + "a last line\ncut mid-li").split("\n")
    assert got["text"].to_list() == older + newer
    assert got["file"].to_list() == ["rm.log.1"] * len(older) + ["rm.log"] * len(newer)
    assert got["line"].to_list() == list(range(1, len(older) + 1)) + list(range(1, len(newer) + 1))
