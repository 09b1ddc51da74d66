"""A log split into a rolled set (rm.log.2, rm.log.1, rm.log: oldest first) gets from every command
the answers it gets as one file. Line numbers restart in each file: a short newest file numbers its
lines below the older files', so an order by the line alone (or by the file's name as text, which
puts rm.log.1 before the older rm.log.2) reads the log out of order.

Ground truth: the same log in one file. What may differ is only where the answers name a file and
line (their names and numbers), and the report's title and list of files.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.cli import main
from replay.model.logorder import file_place, log_order
from replay.parsing.sources import rolled_key
from tests.damaged import rolled
from tests.helpers import log_path

# (fixture, where the older files end as fractions of the log's lines, the job and cycle explained,
# whatif's and simulate's change): each split puts a cycle, and jobs' rows, on both sides of a cut
# and leaves the newest file short. f_node_failure: its nodes' deaths and returns in both halves;
# seed47-120: job 8's process limit, changed by the Orchestrator, in force in cycle 151 at the cut
SPLITS = [
    ("f_node_failure", (0.5, 0.97), 2, 66, "class.background.weight=2"),
    ("heldout/seed47-120", (0.5, 0.97), 8, 151, "class.fair12a.weight=2"),
]
WHERE = re.compile(r"[\w.-]+\.log(?:\.\d+)?(?:\.gz)? line \d+")
TIMES = (re.compile(r"[\d.]+ s\b"), re.compile(r"[\d,]+ cycles/s"))


def _text(text: str) -> str:
    """What a command says, less its timings and the files and lines it names."""
    text = WHERE.sub("FILE line N", text)
    for pattern in TIMES:
        text = pattern.sub("T", text)
    text = re.sub(r"rmreplay report: [^<]*<", "rmreplay report: NAME<", text)
    return re.sub(r"<td>log files</td><td>[^<]*</td>", "<td>log files</td><td>FILES</td>", text)


def _written(out: Path) -> dict[str, object]:
    """Each file a command wrote: a table's rows less their file and line, a text normalized."""
    got: dict[str, object] = {}
    for p in sorted(out.iterdir()) if out.is_dir() else [out] if out.exists() else []:
        if p.name == "manifest.json":  # (the input's files and digests)
            continue
        if p.suffix == ".parquet":
            frame = pl.read_parquet(p)
            got[p.name] = frame.drop([c for c in ("file", "line") if c in frame.columns]).rows()
        else:
            got[p.name] = _text(p.read_text())
    return got


def _answers(log: Path, work: Path, job: int, cycle: int, change: str) -> dict[str, object]:
    """audit, explain (a job's life and one cycle), whatif, simulate and report on `log`."""
    explain = ["explain", str(log), "--json", "--job", str(job)]
    runs = {"audit": (["audit", str(log), "-o", str(work / "audit")], work / "audit"),
            "explain-job": (explain, None),
            "explain-cycle": ([*explain, "--cycle", str(cycle)], None),
            "whatif": (["whatif", str(log), "--set", change, "-o", str(work / "whatif")], work / "whatif"),
            "simulate": (["simulate", str(log), "--set", change, "-o", str(work / "simulate")], work / "simulate"),
            "report": (["report", str(log), "-o", str(work / "report.html")], work / "report.html")}
    got: dict[str, object] = {}
    for name, (argv, out) in runs.items():
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            got[f"{name} exit"] = main(argv)
        got[f"{name} says"] = _text(printed.getvalue().replace(str(log), "LOG").replace(str(work), "OUT"))
        if out is not None:
            got |= {f"{name} {k}": v for k, v in _written(out).items()}
    return got


@pytest.mark.parametrize(("name", "cuts", "job", "cycle", "change"), SPLITS, ids=[s[0] for s in SPLITS])
def test_a_rolled_set_answers_as_one_file(tmp_path, monkeypatch, name, cuts, job, cycle, change):
    # each side's audit a first one, stored then read by the commands after it: the session's cache
    # may hold the bundled log's audit already (another test's), and the console says which it read
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    src = log_path(name)
    folder = rolled(tmp_path / "logs", name=name, cuts=cuts)
    tables = parse([folder]).tables
    # the split is one that matters: the newest file holds rows, numbered below the older files', and
    # a cycle has rows on both sides of a cut
    last = dict(tables["jobs"].group_by("file").agg(pl.col("line").max()).iter_rows())
    assert last["rm.log"] < last["rm.log.1"]
    assert tables["counts"].group_by("cycle").agg(pl.col("file").n_unique()).filter(pl.col("file") > 1).height
    whole = _answers(src, tmp_path / "whole", job, cycle, change)
    split = _answers(folder, tmp_path / "rolled", job, cycle, change)
    assert whole["audit exit"] == 0
    differ = [k for k in sorted(set(whole) | set(split)) if whole.get(k) != split.get(k)]
    assert not differ, differ


def test_the_file_order_is_the_rolled_sets():
    """log_order puts a rolled set's files as its reading order does (replay.parsing.sources)."""
    names = ["rm.log", "rm.log.1", "rm.log.2.gz", "rm.log.10.gz", "rm.log.3"]
    frame = pl.DataFrame({"file": names, "line": [1] * len(names)}, schema_overrides={"line": pl.UInt32})
    assert frame.sort(log_order())["file"].to_list() == sorted(names, key=rolled_key)
    assert frame.select(file_place())["file_place"].to_list() == [0, -1, -2, -10, -3]
