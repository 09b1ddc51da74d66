"""Every fixture's resources/ directory gives the bootstrap tables its rm.log printed.

Ground truth: the log's own `config`, `classes` and `nodepools` tables (what the real RM printed
after reading those same files). Compared row for row, ignoring file/line, except the config keys
in HOST_KEYS, which the RM takes from the machine it ran on, not from the resources files.
"""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from replay import parse
from replay.model.resources import read_resources
from replay.model.resources.config import RESOURCE_ONLY_KEYS
from replay.model.start import bootstrap
from replay.parsing.tables import SCHEMAS
from tests.helpers import FIXTURES, SCENARIOS, log_path, parsed

# Logged at bootstrap but not derivable from $DUCC_HOME/resources:
HOST_KEYS = {
    "class definition file",  # $DUCC_HOME/resources/<file>: DUCC_HOME is the production host's path
    "DUCC home",              # same
    "default domain",         # the RM host's DNS domain unless the first nodepool sets 'domain'
    "JVM", "JAVA_HOME",       # the running JVM
    "JMX URL",                # assigned when the daemon starts
    "OS Architecture", "OS Name",
    "DUCC Version", "RM Version",  # compiled into the jars
}
BIG = {"i_mega24"}  # 137 MB: parse only its bootstrap section (everything before the first cycle)


def _log_tables(name: str, tmp_path_factory) -> dict[str, pl.DataFrame]:
    if name not in BIG:
        return parsed(name).tables
    head = tmp_path_factory.mktemp(name) / "rm.log"
    path = log_path(name)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as src, head.open("w") as dst:
        for line in src:
            if "Entering scheduling loop" in line:
                break
            dst.write(line)
    return parse([head]).tables


@pytest.fixture(params=SCENARIOS, scope="module")
def both(request, tmp_path_factory):
    """(name, log tables, resources tables) for one fixture."""
    name = request.param
    return name, _log_tables(name, tmp_path_factory), read_resources(FIXTURES / name / "resources")


def test_same_schema(both):
    _, _, mine = both
    for table in ("config", "classes", "nodepools"):
        assert mine[table].schema == pl.Schema(SCHEMAS[table]), table


def test_classes_equal_the_logged_classes(both):
    name, log, mine = both
    assert log["classes"].height > 0, name
    assert mine["classes"].drop("file", "line").equals(log["classes"].drop("file", "line")), name


def test_nodepools_equal_the_logged_nodepools(both):
    # exact, including the order of the node, class and subpool lists (the RM's HashMap order)
    name, log, mine = both
    assert mine["nodepools"].drop("file", "line").equals(log["nodepools"].drop("file", "line")), name


def test_config_equals_the_logged_config(both):
    name, log, mine = both
    logged = log["config"].filter(~pl.col("key").is_in(list(HOST_KEYS))).drop("file", "line")
    assert logged.height >= 25, name  # the scheduler parameters are all there to compare
    ours = mine["config"].filter(~pl.col("key").is_in(list(RESOURCE_ONLY_KEYS)))
    assert ours.drop("file", "line").equals(logged), name


def test_the_global_allotment_comes_from_the_properties():
    """g runs with ducc.rm.global_allotment = 48 (GB): the replay's bootstrap must read it."""
    tables = read_resources(FIXTURES / "g_reservations_services" / "resources")
    tables["allotments"] = parsed("a_tiny").tables["allotments"].clear()  # no allotment line to infer from
    assert bootstrap(tables).config.global_allotment == 48
    assert bootstrap(read_resources(FIXTURES / "a_tiny" / "resources") | {
        "allotments": tables["allotments"]}).config.global_allotment == 2147483647


def test_file_and_line_point_at_the_definition(both):
    name, _, mine = both
    root = FIXTURES / name / "resources"
    text = {p.name: p.read_text().splitlines() for p in root.iterdir()}
    for row in mine["classes"].to_dicts():
        assert text[row["file"]][row["line"] - 1].split()[:2] == ["Class", row["name"]], row
    for row in mine["nodepools"].to_dicts():
        assert text[row["file"]][row["line"] - 1].split()[:2] == ["Nodepool", row["name"]], row
    props = mine["config"].filter((pl.col("file") == "ducc.properties") & pl.col("line").is_not_null())
    for key, line in zip(props["key"], props["line"]):
        assert text["ducc.properties"][line - 1].lstrip().startswith("ducc."), (key, line)


def test_scenario_overrides_reach_the_config():
    # the d_fragmentation scenario overrides ducc.rm.fragmentation.threshold late in the file
    cfg = read_resources(FIXTURES / "d_fragmentation" / "resources")["config"]
    value = dict(zip(cfg["key"], cfg["value"]))
    assert (value["fragmentation threshold"], value["initialization cap"]) == ("2", "4")
