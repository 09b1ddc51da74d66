"""The parsed tables agree with truth.jsonl (read from the real RM's objects) cycle by cycle."""

from __future__ import annotations

from collections import defaultdict

import polars as pl
import pytest

from tests.helpers import SCENARIOS, parsed, scenario, truth


def _by_cycle_job(df: pl.DataFrame) -> dict[tuple[int, int], pl.DataFrame]:
    return {(c, j): g for (c, j), g in df.group_by("cycle", "job_id")}


def test_every_line_is_parsed(fixture_log):
    result = parsed(*fixture_log)
    assert result.tables["unparsed"].height == 0, result.tables["unparsed"].head(5)
    assert result.summary.cycles == len(truth(fixture_log[0]))


def test_cycles_carry_the_epoch_of_each_published_schedule(fixture_log):
    cycles = parsed(*fixture_log).tables["cycles"]
    want = [(c["cycle"], c["epoch"]) for c in truth(fixture_log[0])]
    assert list(zip(cycles["cycle"].to_list(), cycles["epoch"].to_list())) == want


def test_each_cycle_spans_the_time_of_its_published_schedule(fixture_log):
    from datetime import datetime

    cycles = parsed(*fixture_log).tables["cycles"]
    assert cycles["ts_end"].null_count() == 0
    for (start, end), cyc in zip(cycles.select("ts_start", "ts_end").iter_rows(), truth(fixture_log[0])):
        published = datetime.strptime(cyc["time"], "%d %b %Y %H:%M:%S,%f")
        assert start <= published <= end, cyc["cycle"]


def test_schedule_lists_equal_shares_added_and_preempted(fixture_log):
    name, level = fixture_log
    groups = _by_cycle_job(parsed(name, level).tables["schedule"])
    for cyc in truth(name):
        published = {job_id for (c, job_id) in groups if c == cyc["cycle"]}
        assert published == {j["id"] for j in cyc["jobs"]}, cyc["cycle"]
        for job in cyc["jobs"]:
            rows = groups[(cyc["cycle"], job["id"])]
            kinds: dict[str, set] = defaultdict(set)
            for kind, host, sid in rows.select("kind", "host", "share_id").iter_rows():
                if kind:
                    kinds[kind].add((host, sid))
            assert kinds["existing"] == {(s["host"], s["id"]) for s in job["shares"]}, (cyc["cycle"], job["id"])
            assert {sid for _, sid in kinds["addition"]} == set(job["added"]), (cyc["cycle"], job["id"])
            assert {sid for _, sid in kinds["removal"]} == set(job["preempted"]), (cyc["cycle"], job["id"])
            assert rows["reason"].unique().to_list() == [job["reason"]]


def test_placements_cover_every_added_share(fixture_log):
    name, level = fixture_log
    placed = parsed(name, level).tables["placements"].select("cycle", "job_id", "share_id")
    have = set(placed.iter_rows())
    for cyc in truth(name):
        for job in cyc["jobs"]:
            for sid in job["added"]:
                assert (cyc["cycle"], job["id"], sid) in have, (cyc["cycle"], job["id"], sid)


def test_counted_shares_equal_nshares_given(fixture_log):
    """Fair share: whatOfFairShare's count. Fixed and reserve: the grant, stable count or deferral (0)."""
    name, level = fixture_log
    counts = parsed(name, level).tables["counts"].filter(pl.col("shares_given").is_not_null())
    last = {(c, j): n for c, j, n in counts.group_by("cycle", "job_id", maintain_order=True)
            .agg(pl.col("shares_given").last()).iter_rows()}
    fair = {(c, j): n for c, j, n in counts.filter(pl.col("policy") == "FAIR_SHARE")
            .select("cycle", "job_id", "shares_given").iter_rows()}
    for cyc in truth(name):
        for job in cyc["jobs"]:
            key = (cyc["cycle"], job["id"])
            got = fair.get(key) if job["policy"] == "FAIR_SHARE" else last.get(key)
            assert got == job["nshares_given"], (key, job["policy"])


def test_actual_cap_equals_job_cap_and_completed_jobs_log_none(fixture_log):
    """The log cannot show the cap of a completed job: the RM skips initJobCap for it (cap = processes)."""
    name, level = fixture_log
    logged = parsed(name, level).tables["job_caps"].select("cycle", "job_id", "actual_cap")
    caps = {(c, j): a for c, j, a in logged.iter_rows()}
    for cyc in truth(name):
        for job in cyc["jobs"]:
            key = (cyc["cycle"], job["id"])
            if key in caps:
                assert caps[key] == job["job_cap"], key
            else:
                assert job["completed"] and job["job_cap"] == len(job["shares"]), key


def scenario_nodes(name: str) -> list[tuple[str, int]]:
    """(host, memory GB) of every node the scenario ran; `pattern` entries stand for `count` hosts."""
    out = []
    for node in scenario(name)["nodes"]:
        names = [node["pattern"] % (i + 1) for i in range(node["count"])] if "pattern" in node else [node["name"]]
        out.extend((host, node["memory_gb"]) for host in names)
    return out


@pytest.mark.parametrize("name", SCENARIOS)
def test_nodes_reproduce_the_scenario_inventory(name):
    nodes = parsed(name).tables["nodes"].filter(pl.col("event") == "arrive")
    got = {h: mb for h, mb in nodes.select("host", "memory_mb").iter_rows()}
    want = {host: gb * 1024 for host, gb in scenario_nodes(name)}
    assert got == want


def test_node_failure_outage_timeline():
    """f_node_failure: fnode02 dies and returns, fnode03 misses beats but never dies, fnode04 arrives late."""
    nodes = parsed("f_node_failure").tables["nodes"]
    first = lambda host, event: nodes.filter((pl.col("host") == host) & (pl.col("event") == event))["cycle"].min()  # noqa: E731
    status: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for cyc in truth("f_node_failure"):
        for n in cyc["nodes"]:
            if not status[n["name"]] or status[n["name"]][-1][1] != n["online"]:
                status[n["name"]].append((cyc["cycle"], n["online"]))
    # truth: fnode02 goes offline in the cycle of the purge, and online again when it is reactivated
    assert status["fnode02.sim.ducc"][1:] == [(first("fnode02.sim.ducc", "death"), False),
                                              (first("fnode02.sim.ducc", "reactivate"), True)]
    assert first("fnode02.sim.ducc", "purge") == first("fnode02.sim.ducc", "death")
    assert status["fnode04.sim.ducc"][0][0] == first("fnode04.sim.ducc", "arrive")
    assert status["fnode03.sim.ducc"] == [(1, True)]
    assert nodes.filter((pl.col("host") == "fnode03.sim.ducc") & (pl.col("event") == "missed"))["count"].max() == 4
    scen = {n["name"]: n for n in scenario("f_node_failure")["nodes"]}
    death_ts = nodes.filter((pl.col("host") == "fnode02.sim.ducc") & (pl.col("event") == "death"))["ts"][0]
    start = nodes["ts"].min()
    assert (death_ts - start).total_seconds() * 1000 > scen["fnode02.sim.ducc"]["outages"][0][0]


def test_donor_shares_are_named_only_at_debug():
    """INFO logs cannot name the share a needy job took from the rich: clearShare is DEBUG."""
    info = parsed("d_fragmentation").tables["defrag"]
    debug = parsed("d_fragmentation", "rm-debug.log").tables["defrag"]
    assert info.filter(pl.col("kind") == "clear_share").height == 0
    assert debug.filter(pl.col("kind") == "clear_share").height > 0
    assert info.filter(pl.col("kind") == "needy").height == debug.filter(pl.col("kind") == "needy").height > 0


def test_defrag_class_is_the_class_of_the_rows_own_job(fixture_log):
    """detectFragmentation prints a `Class:` header, then that class's jobs; the needy rows and
    takeFromTheRich lines that follow name a job of any class. Every row naming a job carries the
    class truth gives that job in that cycle; a row naming none carries a class only if it is a
    header."""
    name, level = fixture_log
    defrag = parsed(name, level).tables["defrag"]
    classes = {(cyc["cycle"], job["id"]): job["class"] for cyc in truth(name) for job in cyc["jobs"]}
    rows = defrag.filter(pl.col("job_id").is_not_null()).select("cycle", "job_id", "kind", "class")
    wrong = [r for r in rows.iter_rows() if classes.get((r[0], r[1])) != r[3]]
    assert not wrong, wrong[:5]
    unowned = defrag.filter(pl.col("job_id").is_null() & pl.col("class").is_not_null())
    assert set(unowned["kind"]) <= {"class_header"}


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_defrag_rows_after_a_later_class_header_keep_their_jobs_class(level):
    """h_mega15 lists normal's jobs, then JobDriver's: its needy normal jobs come after the
    JobDriver header (the case that used to be labelled JobDriver)."""
    defrag = parsed("h_mega15", level).tables["defrag"]
    needy = defrag.filter(pl.col("kind") == "needy")
    assert needy.height > 0 and set(needy["class"]) == {"normal"}
    last_header = defrag.filter(pl.col("kind") == "class_header").group_by("cycle").agg(pl.col("class").last())
    assert "JobDriver" in set(needy.join(last_header, on="cycle", suffix="_header")["class_header"])
