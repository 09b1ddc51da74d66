"""The fleet's questions: the command reference's DuckDB queries and polars snippet give the answers of
replay.apps.fleet.queries, which the fleet report shows; the report of a dataset is one page."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from replay.apps.fleet import scan_table
from replay.apps.fleet.queries import deaths_and_defrag, disagreement, preemptions_per_day, wait_per_class
from replay.cli import main
from tests.helpers import ROOT, log_path, scenario

pytest.importorskip("distributed")


def _readme_blocks(lang: str) -> list[str]:
    """The code blocks in `lang` of the fleet section of the command reference (docs/commands.md)."""
    text = (ROOT / "docs" / "commands.md").read_text()
    start = text.index("## A fleet on Dask")
    end = text.find("\n## ", start)
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(rf"```{lang}\n(.*?)```", section, re.S)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """prod (fragmentation, a big mixed run) and test (a node failure), audited; and junk."""
    root = tmp_path_factory.mktemp("fleet")
    for cluster, names in (("prod", ("d_fragmentation", "h_mega15")), ("test", ("f_node_failure",))):
        for name in names:
            (root / cluster / name).mkdir(parents=True)
            shutil.copy(log_path(name), root / cluster / name)
    (root / "junk").mkdir()
    (root / "junk" / "rm.log").write_bytes(b"\x00garbage\n" * 1000)
    out = root / "dataset"
    assert main(["fleet", str(root / "prod"), str(root / "test"), str(root / "junk"), "-o", str(out),
                 "--workers", "2", "--audit"]) == 1  # junk failed
    return out


def test_readme_sql_answers_as_the_queries(dataset, capsys):
    capsys.readouterr()
    statements = [s for s in _readme_blocks("sql")[0].split(";") if s.strip()]
    assert len(statements) == 3
    run = [duckdb.sql(s.replace("'fleet/", f"'{dataset}/")).pl() for s in statements]
    per_day = preemptions_per_day(dataset)
    assert per_day.height and run[0].rows() == per_day.rows()
    waits = wait_per_class(dataset)
    assert waits.height and run[1]["class"].to_list() == waits["class"].to_list()
    assert run[1]["jobs"].to_list() == waits["jobs"].to_list()
    assert run[1]["p95_s"].to_list() == pytest.approx(waits["p95_s"].to_list())
    assert run[2].rows() == disagreement(dataset).rows()
    assert disagreement(dataset)["cluster"].to_list() == ["prod", "test"]


def test_readme_polars_snippet_runs_on_the_dataset(dataset, monkeypatch):
    monkeypatch.chdir(dataset.parent)
    (dataset.parent / "fleet").symlink_to(dataset)
    scope: dict = {}
    exec(_readme_blocks("python")[0], scope)  # noqa: S102 - the command reference's own example
    assert_frame_equal(scope["per_day"], preemptions_per_day(dataset))
    assert scope["why"].columns == ["cluster", "decision", "len"]


def test_every_question_reads_the_truth_of_the_logs(dataset):
    # the nodes that died in `test` are nodes f_node_failure's scenario takes down
    counts = {r["cluster"]: r for r in deaths_and_defrag(dataset).iter_rows(named=True)}
    died = scan_table(dataset, "nodes").filter((pl.col("cluster") == "test") & (pl.col("event") == "death"))
    hosts = set(died.collect()["host"])
    assert counts["test"]["node_deaths"] == len(died.collect()) >= 1
    assert hosts <= {n["name"] for n in scenario("f_node_failure")["nodes"] if n.get("outages")}
    assert counts["prod"]["needy_cycles"] >= 1  # d_fragmentation's scenario is built to need defragmentation
    assert counts["junk"] == {"cluster": "junk", "node_deaths": 0, "needy_cycles": 0}
    # every preemption of a cluster is a shrink eviction of one of its streams
    shrinks = sum(pl.read_parquet(p).filter(pl.col("reason") == "shrink").height
                  for p in (dataset / "evictions" / "cluster=prod").rglob("*.parquet"))
    assert preemptions_per_day(dataset).filter(pl.col("cluster") == "prod")["preemptions"].sum() == shrinks


def test_the_report_of_a_dataset_is_the_whole_fleet(dataset, tmp_path, capsys):
    out = tmp_path / "fleet.html"
    assert main(["report", str(dataset), "-o", str(out)]) == 0
    page = out.read_text()
    for heading in ("Streams", "Preemptions per cluster per day", "Wait per class", "Where rmref and the RM disagree",
                    "Node deaths and defragmentation", "Failed streams"):
        assert f">{heading}</h2>" in page, heading
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count('id="plot-preemptions"') == 1
    assert "not an rm.log" in page
